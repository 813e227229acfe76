"""`list_prev.py` with a power op whose exponent does not drop

`_prev = list(_children)`: `x * x` and `x + x` list x twice, and `x ** 3` once.
Correct: the doctor must find nothing here (its twin, `list_prev_bug.py`, plants one
bug).
"""


class Value:

    def __init__(self, data, _children=(), _op=''):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = list(_children)
        self._op = _op

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, [self, other], '+')
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, [self, other], '*')
        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def __pow__(self, k):
        out = Value(self.data ** k, [self], f'**{k}')
        def _backward():
            self.grad += k * self.data ** k * out.grad  # BUG: d(x**k)/dx = k x**(k-1)
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
    x = Value(1.25)
    y = Value(-0.5)
    sq = x * x
    twice = y + y
    cube = x * x * x
    loss = (sq + twice * y + cube * y + x ** 3) ** 2
    loss.backward()
