"""An array gradient assigned with `=` where it should be accumulated with `+=`

`x` (shape (2, 2)) is used twice, in `x * x` and in `x * c`. The custom `mul` op's
`_backward` sets `a.grad = …` instead of adding to it, so whichever `_backward` runs
last wins and the other use's contribution is lost. The correct gradient of
`sum(x*x + x*c)` is `2x + c` in every element.

`mgtui bugs/tensor_overwrite --check` names `x`, an element, and the line that
overwrote the gradient.

Things to look for:

- The same bug as the scalar `bugs/overwrite`, one array at a time: every element of
  `x.grad` is missing one of its two contributions.
"""

import numpy as np

from engine.tensor import Tensor


def mul(a, b):
    out = Tensor(a.data * b.data, (a, b), '*')

    def _backward():
        a.grad = b.data * out.grad  # BUG: `=` throws away what another use added
        b.grad += a.data * out.grad
    out._backward = _backward
    return out


x = Tensor([[1.0, -2.0], [0.5, 3.0]], label='x')
c = Tensor([[2.0, 2.0], [-1.0, 0.25]], label='c')
sq = mul(x, x); sq.label = 'x*x'
xc = mul(x, c); xc.label = 'x*c'
loss = (sq + xc).sum(); loss.label = 'loss'
loss.backward()

print("x.grad =", x.grad.tolist())
print("2x + c =", (2 * x.data + c.data).tolist())
