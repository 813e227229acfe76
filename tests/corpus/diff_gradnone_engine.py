"""A numpy Tensor engine in a second common style (written for the tests)

Unlike `diff_numpy_engine.py`: tensors say whether they need a gradient
(`requires_grad`, off for data and labels); a grad starts as None and a helper
(`_accumulate`) sets or adds to it; inputs are kept as `_parents`; `dot` is the matrix
product; a transpose (`.T`) is a node of its own; `relu`; `log_softmax` over the last
axis and `nll` of integer labels, averaged, as two ops (as torch splits
`F.cross_entropy`); the sort is an explicit stack. Training script
`diff_gradnone_train.py`, torch twin `diff_gradnone_torch.py`.
"""

import numpy as np


class Tensor:

    def __init__(self, data, requires_grad=False, _parents=(), _op=None):
        self.data = np.asarray(data)
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = _parents
        self._op = _op
        self._backward = lambda: None

    def _accumulate(self, g):
        if self.requires_grad:
            self.grad = g if self.grad is None else self.grad + g

    def _out(self, data, parents, op):
        return Tensor(data, any(p.requires_grad for p in parents), parents, op)

    def __add__(self, other):
        out = self._out(self.data + other.data, (self, other), 'add')

        def _backward():
            self._accumulate(_sum_to(out.grad, self.data.shape))
            other._accumulate(_sum_to(out.grad, other.data.shape))
        out._backward = _backward
        return out

    def dot(self, other):
        out = self._out(self.data.dot(other.data), (self, other), 'dot')

        def _backward():
            self._accumulate(out.grad.dot(other.data.T))
            other._accumulate(self.data.T.dot(out.grad))
        out._backward = _backward
        return out

    @property
    def T(self):
        out = self._out(self.data.T, (self,), 'T')

        def _backward():
            self._accumulate(out.grad.T)
        out._backward = _backward
        return out

    def relu(self):
        out = self._out(np.maximum(self.data, 0), (self,), 'relu')

        def _backward():
            self._accumulate(out.grad * (self.data > 0))
        out._backward = _backward
        return out

    def log_softmax(self):
        shifted = self.data - self.data.max(axis=-1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        out = self._out(logp, (self,), 'log_softmax')

        def _backward():
            self._accumulate(out.grad - np.exp(logp) * out.grad.sum(axis=-1, keepdims=True))
        out._backward = _backward
        return out

    def nll(self, labels):
        rows = np.arange(len(labels.data))
        out = self._out(-self.data[rows, labels.data].mean(), (self, labels), 'nll')

        def _backward():
            g = np.zeros_like(self.data)
            g[rows, labels.data] = -out.grad / len(rows)
            self._accumulate(g)
        out._backward = _backward
        return out

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((p, False) for p in node._parents)
        self.grad = np.ones_like(self.data, dtype=float)
        for node in reversed(order):
            if node.requires_grad:
                node._backward()


def _sum_to(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    return g.reshape(shape) if g.shape != shape else g
