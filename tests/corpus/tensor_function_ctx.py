"""Tensor ops as `Function` classes with a `ctx`, named by their class, run by Kahn's sort

The PyTorch-like shape: each op is a class with static `forward(ctx, …)` and
`backward(ctx, grad)`; `apply` makes the output Tensor, names its op after the class
(`MatMul`, `Add`, `Tanh`, `Mean`, `Sum`) and gives it a closure that adds the returned
gradients into the inputs' grads. `backward()` counts each node's consumers and runs a
node once they have all run (Kahn's algorithm, with a deque). `Mean` takes a `dim`.
An `Optimizer` zeroes the parameters only.
"""

from collections import deque

import numpy as np


class Ctx:
    def save(self, *arrays):
        self.saved = arrays


class Function:

    @classmethod
    def apply(cls, *inputs, **kwargs):
        ctx = Ctx()
        out = Tensor(cls.forward(ctx, *[t.data for t in inputs], **kwargs), inputs, cls.__name__)
        def _backward():
            grads = cls.backward(ctx, out.grad)
            for t, g in zip(inputs, grads):
                t.grad += g
        out._backward = _backward
        return out


class MatMul(Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved
        grad_x = grad @ w.T
        grad_w = x.T @ grad
        return grad_x, grad_w


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save(a.shape, b.shape)
        return a + b

    @staticmethod
    def backward(ctx, grad):
        a_shape, b_shape = ctx.saved
        grad_b = grad.sum(axis=0) if len(b_shape) < grad.ndim else grad
        return grad, grad_b


class Tanh(Function):
    @staticmethod
    def forward(ctx, x):
        t = np.tanh(x)
        ctx.save(t)
        return t

    @staticmethod
    def backward(ctx, grad):
        (t,) = ctx.saved
        return ((1 - t * t) * grad,)


class Mean(Function):
    @staticmethod
    def forward(ctx, x, dim=None):
        ctx.save(x.shape, dim)
        return x.mean(axis=dim)

    @staticmethod
    def backward(ctx, grad):
        shape, dim = ctx.saved
        n = np.prod(shape) if dim is None else shape[dim]
        spread = grad if dim is None else np.expand_dims(grad, dim)
        return (np.broadcast_to(spread, shape) / n,)


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return (2 * x * grad,)


class Tensor:

    def __init__(self, data, inputs=(), op=''):
        self.data = np.asarray(data, dtype=float)
        self.grad = np.zeros_like(self.data)
        self.inputs = tuple(inputs)
        self.op = op
        self._backward = lambda: None

    def __matmul__(self, other):
        return MatMul.apply(self, other)

    def __add__(self, other):
        return Add.apply(self, other)

    def tanh(self):
        return Tanh.apply(self)

    def square(self):
        return Square.apply(self)

    def mean(self, dim=None):
        return Mean.apply(self, dim=dim)

    def backward(self):
        waiting, seen, todo = {}, {self}, [self]
        while todo:
            node = todo.pop()
            for i in node.inputs:
                waiting[i] = waiting.get(i, 0) + 1
                if i not in seen:
                    seen.add(i)
                    todo.append(i)
        self.grad = np.ones_like(self.data)
        ready = deque([self])
        while ready:
            node = ready.popleft()
            node._backward()
            for i in node.inputs:
                waiting[i] -= 1
                if waiting[i] == 0:
                    ready.append(i)


class Optimizer:

    def __init__(self, params, lr):
        self.params, self.lr = params, lr

    def zero_grad(self):
        for p in self.params:
            p.grad = np.zeros_like(p.data)

    def step(self):
        for p in self.params:
            p.data -= self.lr * p.grad


def setup():
    """The parameters and a function that builds the loss afresh."""
    X = Tensor(np.linspace(-1.0, 1.0, 15).reshape(5, 3))
    target = Tensor(np.linspace(0.5, -0.5, 15).reshape(5, 3))
    W = Tensor(np.array([[0.4, -0.3, 0.2], [0.1, 0.5, -0.6], [-0.2, 0.3, 0.7]]))
    b = Tensor(np.array([0.05, -0.1, 0.2]))

    def loss_of():
        h = (X @ W + b).tanh()
        err = (h + target).square()
        return err.mean(dim=0).mean()
    return [W, b], loss_of


def train(steps=3):
    params, loss_of = setup()
    opt = Optimizer(params, lr=0.2)
    for _ in range(steps):
        loss = loss_of()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return params, loss


if __name__ == "__main__":
    train()
