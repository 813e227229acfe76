"""`stack_sort.py` with a stack sort that can put a node in the order twice

`backward()` keeps a node on the stack until its inputs are done, and pushes every
input not done yet, even one already on the stack: a node reached by two paths is
pushed twice, and appended to the order twice, as nothing checks before the append.
Its `_backward` then runs twice in one pass, handing its grad on twice.
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
            self.grad += out.data * out.grad  # d(exp)/dx = exp(x)
        out._backward = _backward
        return out

    def backward(self):
        topo, done = [], set()
        stack = [self]
        while stack:
            v = stack[-1]
            waiting = [child for child in v._prev if child not in done]
            if waiting:
                stack.extend(waiting)
            else:
                stack.pop()
                done.add(v)
                topo.append(v)  # BUG: a node pushed twice is appended twice
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
