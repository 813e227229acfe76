"""`var_children.py` with a tanh whose derivative is 1 - tanh, not 1 - tanh²

`Var` keeps its number in `data`, its inputs in `children` (a list, so `x * x` lists x
twice) and its closure in `_backward_fn`, its op in `op`; `backward()` zeroes every
grad it sorts before it seeds the root, so training needs no zero_grad. Correct: the
doctor must find nothing here (its twin, `var_children_bug.py`, plants one bug).
"""

import math


class Var:

    def __init__(self, data, children=None, op=''):
        self.data = data
        self.grad = 0.0
        self.children = list(children or [])
        self._backward_fn = lambda: None
        self.op = op

    def __add__(self, other):
        other = other if isinstance(other, Var) else Var(other)
        out = Var(self.data + other.data, [self, other], '+')
        def _backward_fn():
            self.grad += out.grad
            other.grad += out.grad
        out._backward_fn = _backward_fn
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Var) else Var(other)
        out = Var(self.data * other.data, [self, other], '*')
        def _backward_fn():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward_fn = _backward_fn
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Var(t, [self], 'tanh')
        def _backward_fn():
            self.grad += (1 - t) * out.grad  # BUG: d(tanh)/dx = 1 - tanh²
        out._backward_fn = _backward_fn
        return out

    def backward(self):
        topo, visited = [], set()
        def build(v):
            if v not in visited:
                visited.add(v)
                for child in v.children:
                    build(child)
                topo.append(v)
        build(self)
        for v in topo:
            v.grad = 0.0
        self.grad = 1.0
        for v in reversed(topo):
            v._backward_fn()


if __name__ == "__main__":
    w = Var(-0.7)
    b = Var(0.2)
    for x, y in [(1.0, 0.5), (-2.0, -0.25)]:
        h = (w * x + b).tanh()
        err = h * h + h + -y
        loss = err * err
        loss.backward()
        w.data -= 0.1 * w.grad
        b.data -= 0.1 * b.grad
