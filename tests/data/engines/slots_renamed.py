"""A `__slots__` engine whose fields go by other names

`Param` keeps its fields in slots: `val`, `grad`, `inputs` (a tuple) and `grad_fn`,
with no op field and a `name` for a label. Correct: the doctor must find nothing here
(its twin, `slots_renamed_bug.py`, plants one bug).
"""


class Param:
    __slots__ = ('val', 'grad', 'inputs', 'grad_fn', 'name')

    def __init__(self, val, inputs=(), name=''):
        self.val = val
        self.grad = 0.0
        self.inputs = tuple(inputs)
        self.grad_fn = lambda: None
        self.name = name

    def __add__(self, other):
        other = other if isinstance(other, Param) else Param(other)
        out = Param(self.val + other.val, (self, other))
        def grad_fn():
            self.grad += out.grad
            other.grad += out.grad
        out.grad_fn = grad_fn
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Param) else Param(other)
        out = Param(self.val * other.val, (self, other))
        def grad_fn():
            self.grad += other.val * out.grad
            other.grad += self.val * out.grad
        out.grad_fn = grad_fn
        return out

    def __pow__(self, n):
        out = Param(self.val ** n, (self,))
        def grad_fn():
            self.grad += n * self.val ** (n - 1) * out.grad  # d(x**n)/dx = n x^(n-1)
        out.grad_fn = grad_fn
        return out

    def backward(self):
        topo, visited = [], set()
        def build(v):
            if v not in visited:
                visited.add(v)
                for child in v.inputs:
                    build(child)
                topo.append(v)
        build(self)
        self.grad = 1.0
        for v in reversed(topo):
            v.grad_fn()


if __name__ == "__main__":
    w = Param(1.2, name='w')
    for x in (0.5, -1.5):
        w.grad = 0.0
        p = w * x + w ** 3
        loss = p ** 2
        loss.name = 'loss'
        loss.backward()
        w.val -= 0.01 * w.grad
