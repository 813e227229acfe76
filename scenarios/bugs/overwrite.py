"""A tanh written with `=` instead of `+=`

A hand-written `tanh` op whose `_backward` *assigns* its input's grad:
`x.grad = (1 - t**2) * out.grad`. In this neuron every node is used once, so the
grads come out right, and a numerical gradient check passes. The bug is still there: the
moment `n` is used twice (a residual connection, a second loss term, the same neuron fed
twice), the first contribution to `n.grad` is thrown away.

`mgtui bugs/overwrite --check` replays the closure with `n.grad` already holding a known
value and sees the value vanish instead of being added to.

Things to look for:

- Every `_backward` in micrograd writes `+=`. A node's grad is the *sum* over all its
  uses, and each op only knows about its own.
- `=` gives the right answer exactly when it does not matter, which is why it survives
  testing on small graphs.
"""

import math

from engine import Value


def tanh(x):
    t = math.tanh(x.data)
    out = Value(t, (x,), 'tanh')

    def _backward():
        x.grad = (1 - t**2) * out.grad  # BUG: must be +=
    out._backward = _backward

    return out


x1 = Value(2.0, label='x1')
x2 = Value(0.0, label='x2')
w1 = Value(-3.0, label='w1')
w2 = Value(1.0, label='w2')
b = Value(6.8813735870195432, label='b')
x1w1 = x1*w1; x1w1.label = 'x1*w1'
x2w2 = x2*w2; x2w2.label = 'x2*w2'
n = x1w1 + x2w2 + b; n.label = 'n'
o = tanh(n); o.label = 'o'

o.backward()

print(f"o = {o.data:.4f}, n.grad = {n.grad:.4f}")
