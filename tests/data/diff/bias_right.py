"""A bias gradient summed over the rows it was broadcast along (correct)

The twin of `scenarios/bugs/no_broadcast_sum.py` for `mgtui diff`: the same custom `+`
of a bias row `b` (shape (1, 3)) to a batch `h` (5, 3), whose `_backward` sums
`out.grad` over axis 0, so `b.grad` has `b`'s shape.
"""

import numpy as np

from engine.tensor import Tensor


def add_bias(h, b):
    out = Tensor(h.data + b.data, (h, b), '+')

    def _backward():
        h.grad += out.grad
        b.grad = b.grad + out.grad.sum(axis=0, keepdims=True)  # d(h + b)/db, summed over axis 0
    out._backward = _backward
    return out


h = Tensor(np.linspace(-1, 1, 15).reshape(5, 3), label='h')
b = Tensor([[0.5, -0.5, 0.0]], label='b')
z = add_bias(h, b); z.label = 'z'
loss = z.relu().sum(); loss.label = 'loss'
loss.backward()

print("b.grad shape", b.grad.shape, "b.data shape", b.data.shape)
