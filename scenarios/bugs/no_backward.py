"""An op that never sets its _backward

A custom `exp` op computes the right value and records its input, but forgets the line
`out._backward = _backward`. The node keeps the no-op that `Value.__init__` gives every
node, so the backward pass stops there: nothing below it gets a gradient.

`mgtui bugs/no_backward --check` sees an op node with inputs whose `_backward` is still
the default no-op.

Things to look for:

- Every op has the same three parts: compute `out`, define `_backward`, attach it.
- Here `x.grad` stays 0 even though `y` clearly depends on `x`.
"""

import math

from engine import Value


def exp(x):
    out = Value(math.exp(x.data), (x,), 'exp')  # BUG: `out._backward` is never set

    def _backward():
        x.grad += out.data * out.grad

    return out


x = Value(0.5, label='x')
k = Value(2.0, label='k')
e = exp(x); e.label = 'e'
y = e * k; y.label = 'y'

y.backward()

print(f"y = {y.data:.4f}, x.grad = {x.grad} (should be {2 * math.exp(0.5):.4f})")
