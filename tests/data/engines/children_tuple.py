"""A `Value` engine with a `_children` tuple, sorted with an explicit stack

The inputs are kept in `_children` (a tuple: `x * x` lists x twice) and the closure in
`_backward`; `backward()` builds the order with an explicit stack of (node, children
done) pairs. Correct: the doctor must find nothing here (its twin,
`children_tuple_bug.py`, plants one bug).
"""


class Value:

    def __init__(self, data, _children=(), _op='', label=''):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._children = tuple(_children)
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

    def relu(self):
        out = Value(max(self.data, 0.0), (self,), 'ReLU')
        def _backward():
            self.grad += (out.data > 0) * out.grad  # d(relu)/dx = 1 if x > 0 else 0
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
                for child in v._children:
                    stack.append((child, False))
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()


if __name__ == "__main__":
    x = Value(1.5, label='x')
    w = Value(-0.5, label='w')
    h = (x * w + x * x).relu(); h.label = 'h'
    z = h * w + h; z.label = 'z'
    loss = z * z; loss.label = 'loss'
    loss.backward()
