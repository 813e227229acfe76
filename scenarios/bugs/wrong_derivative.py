"""A sigmoid whose derivative forgets a factor

A hand-written `sigmoid` op for a one-input neuron, `o = sigmoid(x*w + b)`. The forward
pass is right: `s = 1 / (1 + e^-n)`. The backward pass is not. The derivative of the
sigmoid is `s * (1 - s)`, and this `_backward` only applies `s`.

Nothing crashes, and the grads even have the right sign, so training would still go
downhill, only with the wrong step sizes. `mgtui bugs/wrong_derivative --check` nudges
`n` by a tiny `h`, watches `o` move at the rate `s * (1 - s) = 0.1966`, and points at the
line that applied `0.7311` instead.

Things to look for:

- **The op whose own grad is right but whose input's grad is wrong** is the faulty one.
  Here `o.grad = 1` is right, and `n.grad` is already wrong.
- Everything upstream of `n` (`x`, `w`, `b`) inherits the error, but the ops there are
  fine. Fix the one line and they all come right.
"""

import math

from engine import Value


def sigmoid(x):
    s = 1 / (1 + math.exp(-x.data))
    out = Value(s, (x,), 'sigmoid')

    def _backward():
        x.grad += s * out.grad  # BUG: d(sigmoid)/dx = s * (1 - s)
    out._backward = _backward

    return out


x = Value(2.0, label='x')
w = Value(0.25, label='w')
b = Value(0.5, label='b')
xw = x*w; xw.label = 'x*w'
n = xw + b; n.label = 'n'
o = sigmoid(n); o.label = 'o'

o.backward()

print(f"o = {o.data:.4f}")
for node in [n, x, w, b]:
    print(f"{node.label:>3}.grad = {node.grad:.4f}")
