"""A `Scalar` engine with no op field, and a sin

`Scalar` keeps data, grad, _prev and _backward, as micrograd does, but no `_op` (several
forks drop it): mgtui names each op after the method that made it (`__mul__` is `*`,
`sin` is `sin`). Correct: the doctor must find nothing here (its twin,
`scalar_no_op_bug.py`, plants one bug).
"""

import math


class Scalar:

    def __init__(self, data, _children=()):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = set(_children)

    def __add__(self, other):
        other = other if isinstance(other, Scalar) else Scalar(other)
        out = Scalar(self.data + other.data, (self, other))
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Scalar) else Scalar(other)
        out = Scalar(self.data * other.data, (self, other))
        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def sin(self):
        out = Scalar(math.sin(self.data), (self,))
        def _backward():
            self.grad += math.cos(self.data) * out.grad  # d(sin)/dx = cos(x)
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
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()


if __name__ == "__main__":
    w = Scalar(0.9)
    b = Scalar(-0.4)
    for x in (0.5, 1.5, -1.0):
        w.grad = 0.0
        b.grad = 0.0
        s = (w * x + b).sin()
        loss = s * s
        loss.backward()
        w.data -= 0.1 * w.grad
        b.data -= 0.1 * b.grad
