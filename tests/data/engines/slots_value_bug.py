"""`slots_value.py` with a product that hands one input the wrong factor

The fields live in slots, not in an instance dict; `_prev` is a tuple, so `w * w` has
the inputs (w, w). Correct: the doctor must find nothing here (its twin,
`slots_value_bug.py`, plants one bug).
"""

import math


class Value:
    __slots__ = ('data', 'grad', '_backward', '_prev', '_op', 'label')

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
            other.grad += other.data * out.grad  # BUG: d(a*b)/db = a
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
    w = Value(0.8, label='w')
    b = Value(-0.3, label='b')
    for step in range(3):
        w.grad = 0.0
        b.grad = 0.0
        x = Value(1.5, label='x')
        o = (x * w + w * w + b + b).tanh(); o.label = 'o'
        loss = (o + -0.25) * (o + -0.25); loss.label = 'loss'
        loss.backward()
        w.data -= 0.1 * w.grad
        b.data -= 0.1 * b.grad
