"""A bias gradient averaged where it should be summed

A layer `X @ W + b` adds a bias row `b` (shape (1, 3)) to every one of 4 rows. Its
custom `+` op sums the gradient back to each input's shape with an `unbroadcast`
helper, and that helper uses `mean` where a sum belongs: the bias was used 4 times, so
its gradient must be the sum of the 4 rows' gradients, and here it is a quarter of it.

`mgtui bugs/unbroadcast_mean --check` checks the `+` call's gradients element by element
against finite differences and names `b`, the element and the line of the `_backward`.

Things to look for:

- `b.grad` is 4 times too small in every element; `X @ W`'s gradient is right, because
  it was not broadcast.
- A broadcast in the forward pass is a sum in the backward pass.
"""

import numpy as np

from engine.tensor import Tensor


def unbroadcast(grad, shape):
    """Bring `grad` back to `shape` by reducing the axes broadcasting stretched."""
    while grad.ndim > len(shape):
        grad = grad.mean(axis=0)  # BUG: a broadcast input's gradient is a sum, not a mean
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.mean(axis=axis, keepdims=True)  # BUG: the same, along an axis of 1
    return grad


def add(a, b):
    out = Tensor(a.data + b.data, (a, b), '+')

    def _backward():
        a.grad += unbroadcast(out.grad, a.data.shape)
        b.grad += unbroadcast(out.grad, b.data.shape)
    out._backward = _backward
    return out


X = Tensor(np.arange(8.0).reshape(4, 2) / 4, label='X')
W = Tensor([[0.5, -1.0, 0.25], [1.5, 0.5, -0.5]], label='W')
b = Tensor([[0.1, -0.2, 0.3]], label='b')
h = add(X @ W, b); h.label = 'h'
loss = h.tanh().sum(); loss.label = 'loss'
loss.backward()

print("b.grad =", b.grad.round(4).tolist())
