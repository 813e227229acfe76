"""`stack_sort.py` with an exp whose derivative reads the input, not the output

`backward()` walks the graph depth first with a stack of (node, children done) pairs,
so a deep graph needs no recursion; the inputs are a tuple. Correct: the doctor must
find nothing here (its twin, `stack_sort_bug.py`, plants one bug).
"""

import math


class Value:

    def __init__(self, data, _children=(), _op=''):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = tuple(_children)
        self._op = _op

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

    def exp(self):
        out = Value(math.exp(self.data), (self,), 'exp')
        def _backward():
            self.grad += self.data * out.grad  # BUG: d(exp)/dx = exp(x)
        out._backward = _backward
        return out

    def backward(self):
        topo, visited = [], set()
        stack = [(self, False)]
        while stack:
            v, children_done = stack.pop()
            if children_done:
                topo.append(v)
            elif v not in visited:
                visited.add(v)
                stack.append((v, True))
                for child in v._prev:
                    stack.append((child, False))
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()


if __name__ == "__main__":
    a = Value(0.3)
    b = Value(-1.2)
    e = (a * a).exp()
    f = (a * b + e) * (a * b + e)
    g = f + f + a * a * a
    g.backward()
