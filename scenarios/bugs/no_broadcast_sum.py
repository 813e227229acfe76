"""A bias gradient that keeps the shape of the batch

A custom `+` adds a bias row `b` (shape (1, 3)) to a batch `h` of shape (5, 3). Its
`_backward` hands `b` the whole `out.grad` without summing it over the 5 rows that the
bias was broadcast along. `b.grad += out.grad` would make numpy complain, so the op
writes `b.grad = b.grad + out.grad`, which broadcasts quietly: `b.grad` ends with the
shape (5, 3) while `b.data` has (1, 3).

`mgtui bugs/no_broadcast_sum --check` reports the shape mismatch between `b`'s grad and
its data at the line that made it.

Things to look for:

- A gradient always has its value's shape. Here the next update `b.data -= lr * b.grad`
  would silently turn the bias into a (5, 3) matrix.
"""

import numpy as np

from engine.tensor import Tensor


def add_bias(h, b):
    out = Tensor(h.data + b.data, (h, b), '+')

    def _backward():
        h.grad += out.grad
        b.grad = b.grad + out.grad  # BUG: not summed over the broadcast axis 0
    out._backward = _backward
    return out


h = Tensor(np.linspace(-1, 1, 15).reshape(5, 3), label='h')
b = Tensor([[0.5, -0.5, 0.0]], label='b')
z = add_bias(h, b); z.label = 'z'
loss = z.relu().sum(); loss.label = 'loss'
loss.backward()

print("b.grad shape", b.grad.shape, "b.data shape", b.data.shape)
