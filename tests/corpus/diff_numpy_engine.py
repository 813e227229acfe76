"""A numpy Tensor engine in the style most public ones share (written for the tests)

What makes it unlike the bundled `engine/tensor.py`: no labels; an op's name is a word
(`matmul`, `sigmoid`, `mean`, `cross_entropy`); every gradient written as
`grad = grad + …` (never `+=`); an `unbroadcast` helper that sums over every axis of
size 1; `sum` and `mean` over one axis (`dim`) or all; an integer array allowed as data
(class labels, whose grad is never used); a fused `cross_entropy` of logits and integer
labels, averaged over the batch. The training script is `diff_numpy_train.py`, its torch
twin `diff_numpy_torch.py`.
"""

import numpy as np


def unbroadcast(grad, shape):
    # drop the leading axes broadcasting added, then sum where the input had size 1
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


class Tensor:

    def __init__(self, data, _children=(), _op=''):
        self.data = data if isinstance(data, np.ndarray) else np.array(data)
        self.grad = np.zeros(self.data.shape)
        self._backward = lambda: None
        self._prev = tuple(_children)
        self._op = _op

    @property
    def shape(self):
        return self.data.shape

    def __repr__(self):
        return f"Tensor(shape={self.shape}, op={self._op!r})"

    def __add__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data + other.data, (self, other), '+')

        def _backward():
            self.grad = self.grad + unbroadcast(out.grad, self.shape)
            other.grad = other.grad + unbroadcast(out.grad, other.shape)
        out._backward = _backward
        return out

    def __sub__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data - other.data, (self, other), '-')

        def _backward():
            self.grad = self.grad + unbroadcast(out.grad, self.shape)
            other.grad = other.grad - unbroadcast(out.grad, other.shape)
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data * other.data, (self, other), '*')

        def _backward():
            self.grad = self.grad + unbroadcast(other.data * out.grad, self.shape)
            other.grad = other.grad + unbroadcast(self.data * out.grad, other.shape)
        out._backward = _backward
        return out

    def matmul(self, other):
        out = Tensor(self.data @ other.data, (self, other), 'matmul')

        def _backward():
            self.grad = self.grad + out.grad @ other.data.T
            other.grad = other.grad + self.data.T @ out.grad
        out._backward = _backward
        return out

    __matmul__ = matmul
    __radd__ = __add__
    __rmul__ = __mul__

    def sigmoid(self):
        s = 1 / (1 + np.exp(-self.data))
        out = Tensor(s, (self,), 'sigmoid')

        def _backward():
            self.grad = self.grad + s * (1 - s) * out.grad
        out._backward = _backward
        return out

    def sum(self, dim=None):
        out = Tensor(self.data.sum(axis=dim), (self,), 'sum')

        def _backward():
            g = out.grad if dim is None else np.expand_dims(out.grad, dim)
            self.grad = self.grad + np.ones_like(self.grad) * g
        out._backward = _backward
        return out

    def mean(self, dim=None):
        out = Tensor(self.data.mean(axis=dim), (self,), 'mean')

        def _backward():
            g = out.grad if dim is None else np.expand_dims(out.grad, dim)
            self.grad = self.grad + np.ones_like(self.grad) * g / (self.data.size if dim is None else self.data.shape[dim])
        out._backward = _backward
        return out

    def cross_entropy(self, labels):
        # self: logits (batch, classes); labels: integer class of each row
        shifted = self.data - self.data.max(axis=1, keepdims=True)
        p = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        rows = np.arange(len(labels.data))
        loss = -np.log(p[rows, labels.data]).mean()
        out = Tensor(loss, (self, labels), 'cross_entropy')

        def _backward():
            onehot = np.zeros_like(p)
            onehot[rows, labels.data] = 1.0
            self.grad = self.grad + (p - onehot) / len(rows) * out.grad
        out._backward = _backward
        return out

    def backward(self):
        order, seen = [], set()

        def visit(t):
            if t not in seen:
                seen.add(t)
                for child in t._prev:
                    visit(child)
                order.append(t)
        visit(self)
        self.grad = np.ones(self.data.shape)
        for t in reversed(order):
            t._backward()
