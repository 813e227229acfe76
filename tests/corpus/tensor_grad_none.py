"""A numpy Tensor whose grad is None until written, with `requires_grad` and word op names

Engines that copy PyTorch's surface: a Tensor has `requires_grad`, its `grad` is None
until its first gradient arrives (then each write is `grad = g if grad is None else
grad + g`), inputs that do not require grad get none, ops are named by words
(`matmul`, `add`, `relu`, `mean`), the children are a tuple, the order comes from an
explicit stack, and `zero_grad()` sets the parameters' grads back to None, as torch's
optimizers do. The model is a two-layer ReLU regression with a penalty on `W1` (used
twice, so its grad is written twice), trained for three steps.
"""

import numpy as np


class Tensor:

    def __init__(self, data, requires_grad=False, _children=(), _op=''):
        self.data = np.asarray(data, dtype=float)
        self.requires_grad = requires_grad
        self.grad = None
        self._children = tuple(_children)
        self._op = _op
        self._backward = lambda: None

    def _accumulate(self, g):
        if self.requires_grad:
            self.grad = g if self.grad is None else self.grad + g

    def _result(self, data, children, op):
        return Tensor(data, any(c.requires_grad for c in children), children, op)

    def matmul(self, other):
        out = self._result(self.data @ other.data, (self, other), 'matmul')
        def _backward():
            self._accumulate(out.grad @ other.data.T)
            other._accumulate(self.data.T @ out.grad)
        out._backward = _backward
        return out

    def add(self, other):
        out = self._result(self.data + other.data, (self, other), 'add')
        def _backward():
            self._accumulate(out.grad)
            other._accumulate(out.grad.sum(axis=0) if other.data.ndim < out.data.ndim
                              else out.grad)
        out._backward = _backward
        return out

    def sub(self, other):
        out = self._result(self.data - other.data, (self, other), 'sub')
        def _backward():
            self._accumulate(out.grad)
            other._accumulate(-out.grad)
        out._backward = _backward
        return out

    def relu(self):
        out = self._result(np.maximum(self.data, 0.0), (self,), 'relu')
        def _backward():
            self._accumulate(out.grad * (self.data > 0))
        out._backward = _backward
        return out

    def square(self):
        out = self._result(self.data ** 2, (self,), 'square')
        def _backward():
            self._accumulate(2 * self.data * out.grad)
        out._backward = _backward
        return out

    def mean(self):
        out = self._result(self.data.mean(), (self,), 'mean')
        def _backward():
            self._accumulate(np.full(self.data.shape, out.grad / self.data.size))
        out._backward = _backward
        return out

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                stack.extend((c, False) for c in node._children)
        self.grad = np.ones_like(self.data)
        for node in reversed(order):
            node._backward()


def setup():
    """The parameters and a function that builds the loss afresh."""
    X = Tensor(np.linspace(-1.0, 1.0, 12).reshape(4, 3))
    y = Tensor(np.array([[0.5], [-0.25], [1.0], [0.0]]))
    W1 = Tensor(np.array([[0.3, -0.6], [0.8, 0.2], [-0.4, 0.5]]), requires_grad=True)
    b1 = Tensor(np.array([0.1, -0.1]), requires_grad=True)
    W2 = Tensor(np.array([[0.7], [-0.9]]), requires_grad=True)

    def loss_of():
        h = X.matmul(W1).add(b1).relu()
        penalty = W1.square().mean()
        return h.matmul(W2).sub(y).square().mean().add(penalty)
    return [W1, b1, W2], loss_of


def train(steps=3):
    params, loss_of = setup()
    for _ in range(steps):
        loss = loss_of()
        for p in params:
            p.grad = None
        loss.backward()
        for p in params:
            p.data -= 0.1 * p.grad
    return params, loss


if __name__ == "__main__":
    train()
