"""A matrix product whose weight gradient comes out transposed

A custom `matmul` op computes `X @ W` for a batch `X` of shape (4, 3) and a square
weight matrix `W` of shape (3, 3). Its `_backward` writes `out.gradᵀ · X` into
`W.grad`: the transpose of the right `Xᵀ · out.grad`. Because `W` is square the shapes
agree and numpy raises nothing, so the bug runs silently: every off-diagonal element of
`W.grad` holds its mirror's gradient.

`mgtui bugs/matmul_transposed --check` finds it element by element and names `W`, the
element (an off-diagonal one) and the line.

Things to look for:

- The rule: for `out = X @ W`, `∂L/∂W = Xᵀ · ∂L/∂out`, shapes `(4, 3)ᵀ·(4, 3) → (3, 3)`.
- The diagonal of `W.grad` is right: a transpose leaves it where it is.
"""

import numpy as np

from engine.tensor import Tensor


def matmul(X, W):
    out = Tensor(X.data @ W.data, (X, W), '@')

    def _backward():
        X.grad += out.grad @ W.data.T
        W.grad += out.grad.T @ X.data  # BUG: the transpose of Xᵀ · out.grad
    out._backward = _backward
    return out


X = Tensor(np.linspace(-1, 1, 12).reshape(4, 3), label='X')
W = Tensor([[0.2, -0.5, 1.0], [0.7, 0.1, -0.3], [-0.4, 0.9, 0.6]], label='W')
y = matmul(X, W); y.label = 'y'
loss = (y * y).mean(); loss.label = 'loss'
loss.backward()

print("W.grad =", W.grad.round(4).tolist())
