"""A micrograd engine whose backward() zeroes every grad itself, trained without zero_grad

`backward()` sets the grad of every node it sorts to 0 before it seeds the root, so the
training loop never zeroes a grad; the inputs are a tuple. Correct: the doctor must
find nothing here (its twin, `zero_in_backward_bug.py`, plants one bug).
"""


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

    def relu(self):
        out = Value(self.data if self.data > 0 else 0.0, (self,), 'ReLU')
        def _backward():
            self.grad += (out.data > 0) * out.grad  # d(relu)/dx = 1 if x > 0 else 0
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
        for v in topo:
            v.grad = 0.0
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()


if __name__ == "__main__":
    w = Value(0.6)
    b = Value(0.1)
    for x, y in [(1.0, 2.0), (2.0, 3.5), (-1.0, 0.5)]:
        h = (w * x + b).relu()
        err = h + h + -y
        loss = err * err
        loss.backward()
        w.data -= 0.05 * w.grad
        b.data -= 0.05 * b.grad
