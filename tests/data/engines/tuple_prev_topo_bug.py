"""`tuple_prev.py` with a sort that takes two nodes of equal value for one

`backward()` remembers the nodes it has seen by their value, so `q = y + z` (0.25) is
taken for `sq = x * x` (0.25) and left out of the order: its `_backward` never runs.
No single `_backward` is wrong, so only the root's directional derivative shows it,
in the same pass as the `x * x` whose repeated input once made the doctor skip that
check.
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
            if v.data not in visited:  # BUG: nodes of equal value are not the same node
                visited.add(v.data)
                for child in v._prev:
                    build(child)
                topo.append(v)
        build(self)
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()


if __name__ == "__main__":
    x = Value(0.5, label='x')
    y = Value(0.75, label='y')
    z = Value(-0.5, label='z')
    sq = x * x; sq.label = 'sq'  # 0.25, inputs (x, x)
    q = y + z; q.label = 'q'  # 0.25 too
    o = (sq * q + x).tanh(); o.label = 'o'
    o.backward()
