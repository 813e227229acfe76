"""A numpy Tensor with `unbroadcast`: a highway layer and a cross-entropy on class labels

The shape of most numpy tensor engines: `data` and `grad` arrays, a `_prev` set, `_op`
symbols (`@`, `+`, `*`), and a helper `unbroadcast` that sums a gradient back to the
shape of an input that was broadcast. The model is a highway layer,
`h = z * tanh(X @ W + b) + (1 - z) * X` with `z = sigmoid(X @ Wz)` (the `1` becomes the
integer constant `Tensor(1)`), then logits `h @ V` and a cross-entropy against integer
class labels that are a `Tensor` in the graph. `Module.zero_grad()` zeroes the
parameters only.
"""

import numpy as np


def unbroadcast(grad, shape):
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


class Tensor:

    def __init__(self, data, _prev=(), _op='', label=''):
        self.data = np.asarray(data)
        self.grad = np.zeros(self.data.shape)
        self._prev = set(_prev)
        self._op = _op
        self.label = label
        self._backward = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data + other.data, (self, other), '+')
        def _backward():
            self.grad += unbroadcast(out.grad, self.data.shape)
            other.grad += unbroadcast(out.grad, other.data.shape)
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data * other.data, (self, other), '*')
        def _backward():
            self.grad += unbroadcast(other.data * out.grad, self.data.shape)
            other.grad += unbroadcast(self.data * out.grad, other.data.shape)
        out._backward = _backward
        return out

    def __matmul__(self, other):
        out = Tensor(self.data @ other.data, (self, other), '@')
        def _backward():
            self.grad += out.grad @ other.data.T
            other.grad += self.data.T @ out.grad
        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return Tensor(other) - self

    def tanh(self):
        t = np.tanh(self.data)
        out = Tensor(t, (self,), 'tanh')
        def _backward():
            self.grad += (1 - t ** 2) * out.grad
        out._backward = _backward
        return out

    def sigmoid(self):
        s = 1 / (1 + np.exp(-self.data))
        out = Tensor(s, (self,), 'sigmoid')
        def _backward():
            self.grad += s * (1 - s) * out.grad
        out._backward = _backward
        return out

    def cross_entropy(self, labels):
        n = self.data.shape[0]
        shifted = self.data - self.data.max(axis=1, keepdims=True)
        probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        picked = probs[np.arange(n), labels.data]
        out = Tensor(-np.log(picked).mean(), (self, labels), 'cross_entropy')
        def _backward():
            onehot = np.zeros_like(probs)
            onehot[np.arange(n), labels.data] = 1.0
            self.grad += (probs - onehot) / n * out.grad
        out._backward = _backward
        return out

    def backward(self):
        topo, visited = [], set()
        def build(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build(child)
                topo.append(v)
        build(self)
        self.grad = np.ones(self.data.shape)
        for v in reversed(topo):
            v._backward()


class Highway:

    def __init__(self):
        rng = np.random.default_rng(3)
        self.W = Tensor(rng.normal(0, 0.5, (4, 4)), label='W')
        self.b = Tensor(np.zeros((1, 4)), label='b')
        self.Wz = Tensor(rng.normal(0, 0.5, (4, 4)), label='Wz')
        self.V = Tensor(rng.normal(0, 0.5, (4, 4)), label='V')

    def __call__(self, X):
        z = (X @ self.Wz).sigmoid()
        h = z * (X @ self.W + self.b).tanh() + (1 - z) * X
        return h @ self.V

    def parameters(self):
        return [self.W, self.b, self.Wz, self.V]

    def zero_grad(self):
        for p in self.parameters():
            p.grad = np.zeros(p.data.shape)


def setup():
    """The model and a function that builds the loss afresh."""
    X = Tensor(np.linspace(-1.0, 1.0, 24).reshape(6, 4), label='X')
    labels = Tensor(np.array([0, 2, 1, 3, 2, 0]), label='labels')
    model = Highway()
    return model, lambda: model(X).cross_entropy(labels)


def train(steps=3):
    model, loss_of = setup()
    for _ in range(steps):
        loss = loss_of()
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data -= 0.1 * p.grad
    return model, loss


if __name__ == "__main__":
    train()
