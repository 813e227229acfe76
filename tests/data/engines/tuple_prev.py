"""A micrograd engine that keeps a node's inputs as a tuple, repeats and all

`_prev = tuple(_children)`, as several micrograd forks write it: `x * x` has the
inputs (x, x), and its `_backward` adds to `x.grad` twice, once per use. Correct: the
doctor must find nothing here (its twin, `tuple_prev_bug.py`, plants one bug).
"""

import math


class Value:

    def __init__(self, data, _children=(), _op='', label=''):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = tuple(_children)
        self._op = _op
        self.label = label

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), '+')
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), '*')
        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), 'tanh')
        def _backward():
            self.grad += (1 - t**2) * out.grad  # d(tanh)/dx = 1 - tanh²
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
    x = Value(0.5, label='x')
    w = Value(-1.5, label='w')
    sq = x * x; sq.label = 'sq'  # inputs (x, x)
    twice = x + x; twice.label = 'twice'  # inputs (x, x)
    cube = x * x * x; cube.label = 'cube'
    n = sq * w + twice + cube; n.label = 'n'
    o = n.tanh(); o.label = 'o'
    o.backward()
