"""A numpy Tensor on a tape, whose ops write into parts of a grad: an embedding and a split

Engines of this shape keep every Tensor they make on a list (the tape) and run the
`_backward`s in reverse creation order: no sort. Their ops write into elements of an
input's grad: an embedding lookup scatters with `np.add.at` (a token seen twice adds
twice), a split of the columns adds into `x.grad[:, lo:hi]`, one closure per part made
in a loop with the part and its columns bound as default arguments, and the
cross-entropy writes its `- 1` into the picked elements of the logits' grad. The tokens
and labels are integer arrays outside the graph; the parameters are zeroed by the
loop.
"""

import numpy as np

TAPE = []


class Tensor:

    def __init__(self, data, _prev=(), _op='', label=''):
        self.data = np.asarray(data, dtype=float)
        self.grad = np.zeros_like(self.data)
        self._prev = tuple(_prev)
        self._op = _op
        self.label = label
        self._backward = lambda: None
        TAPE.append(self)

    def __add__(self, other):
        out = Tensor(self.data + other.data, (self, other), '+')
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __matmul__(self, other):
        out = Tensor(self.data @ other.data, (self, other), '@')
        def _backward():
            self.grad += out.grad @ other.data.T
            other.grad += self.data.T @ out.grad
        out._backward = _backward
        return out

    def tanh(self):
        out = Tensor(np.tanh(self.data), (self,), 'tanh')
        def _backward():
            self.grad += (1 - out.data ** 2) * out.grad
        out._backward = _backward
        return out

    def embed(self, tokens):
        out = Tensor(self.data[tokens], (self,), 'embedding')
        def _backward():
            np.add.at(self.grad, tokens, out.grad)
        out._backward = _backward
        return out

    def split(self, parts):
        width = self.data.shape[1] // parts
        outs = []
        for k in range(parts):
            lo, hi = k * width, (k + 1) * width
            part = Tensor(self.data[:, lo:hi], (self,), 'split')
            def _backward(part=part, lo=lo, hi=hi):
                self.grad[:, lo:hi] += part.grad
            part._backward = _backward
            outs.append(part)
        return outs

    def cross_entropy(self, labels):
        n = len(labels)
        e = np.exp(self.data - self.data.max(axis=1, keepdims=True))
        probs = e / e.sum(axis=1, keepdims=True)
        out = Tensor(-np.log(probs[np.arange(n), labels]).mean(), (self,), 'cross_entropy')
        def _backward():
            self.grad += probs * out.grad / n
            self.grad[np.arange(n), labels] -= out.grad / n
        out._backward = _backward
        return out

    def backward(self):
        self.grad = np.ones_like(self.data)
        for t in reversed(TAPE):
            t._backward()


def setup():
    """The parameters and a function that builds the loss afresh, on a new tape."""
    rng = np.random.default_rng(7)
    E = Tensor(rng.normal(0, 1, (5, 4)), label='E')
    W1 = Tensor(rng.normal(0, 0.5, (2, 3)), label='W1')
    W2 = Tensor(rng.normal(0, 0.5, (2, 3)), label='W2')
    tokens = np.array([1, 3, 0, 3, 4, 1])
    labels = np.array([2, 0, 1, 0, 2, 2])

    def loss_of():
        TAPE.clear()
        h = E.embed(tokens)
        left, right = h.split(2)
        return (left.tanh() @ W1 + right @ W2).cross_entropy(labels)
    return [E, W1, W2], loss_of


def train(steps=3):
    params, loss_of = setup()
    for _ in range(steps):
        loss = loss_of()
        for p in params:
            p.grad = np.zeros_like(p.data)
        loss.backward()
        for p in params:
            p.data -= 0.5 * p.grad
    return params, loss


if __name__ == "__main__":
    train()
