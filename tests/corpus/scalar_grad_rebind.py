"""A `Node` with a `parents` list, grads rebound as `grad = grad + …`, and Kahn's sort

Some engines never use `+=`: each `_backward` rebinds `x.grad = x.grad + …` (the same
sum for floats). Here the inputs are a `parents` list, the op a word in `op`, and
`backward()` orders the graph by Kahn's algorithm: it counts each node's consumers,
then runs a node once all of them have run. A logistic-regression loop over points
with integer features and 0/1 labels zeroes the parameters only.
"""

import math
from collections import deque


class Node:

    def __init__(self, data, parents=(), op=''):
        self.data = data
        self.grad = 0.0
        self.parents = list(parents)
        self.op = op
        self._backward = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Node) else Node(other)
        out = Node(self.data + other.data, [self, other], 'add')
        def _backward():
            self.grad = self.grad + out.grad
            other.grad = other.grad + out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Node) else Node(other)
        out = Node(self.data * other.data, [self, other], 'mul')
        def _backward():
            self.grad = self.grad + other.data * out.grad
            other.grad = other.grad + self.data * out.grad
        out._backward = _backward
        return out

    def sigmoid(self):
        s = 1 / (1 + math.exp(-self.data))
        out = Node(s, [self], 'sigmoid')
        def _backward():
            self.grad = self.grad + s * (1 - s) * out.grad
        out._backward = _backward
        return out

    def log(self):
        out = Node(math.log(self.data), [self], 'log')
        def _backward():
            self.grad = self.grad + out.grad / self.data
        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return Node(other) - self

    __radd__ = __add__
    __rmul__ = __mul__

    def backward(self):
        consumers, seen, stack = {}, {self}, [self]
        while stack:
            node = stack.pop()
            for p in node.parents:
                consumers[p] = consumers.get(p, 0) + 1
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        self.grad = 1.0
        ready = deque([self])
        while ready:
            node = ready.popleft()
            node._backward()
            for p in node.parents:
                consumers[p] -= 1
                if consumers[p] == 0:
                    ready.append(p)


def setup():
    """The parameters and a function that builds the loss afresh."""
    points = [(Node(1), Node(2)), (Node(-1), Node(0)), (Node(2), Node(-1)), (Node(0), Node(1))]
    labels = [1, 0, 1, 0]
    w1, w2, bias = Node(0.3), Node(-0.2), Node(0.1)

    def loss_of():
        loss = Node(0.0)
        for (x1, x2), y in zip(points, labels):
            p = (w1 * x1 + w2 * x2 + bias).sigmoid()
            loss = loss - (y * p.log() + (1 - y) * (1 - p).log())
        return loss
    return [w1, w2, bias], loss_of


def train(steps=3):
    params, loss_of = setup()
    for _ in range(steps):
        loss = loss_of()
        for q in params:
            q.grad = 0.0
        loss.backward()
        for q in params:
            q.data -= 0.1 * q.grad
    return params, loss


if __name__ == "__main__":
    train()
