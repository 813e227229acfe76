"""A `Scalar(val, inputs, op)` with `backward_fn`, a list-popped order and word op names

Another common shape: the number is `val`, the inputs a plain tuple `inputs`, the
closure `backward_fn`, and ops are named by words (`add`, `mul`, `pow2`, `exp`); tanh is
built from `exp` and a division (`x * y ** -1`). `backprop()` zeroes every node it can
reach, builds a post-order list with a recursive walk and pops it from the end. A
`relu_all` helper makes one closure per element in a loop, binding each element and
its output through default arguments.
"""

import math


class Scalar:

    def __init__(self, val, inputs=(), op='na'):
        self.val = val
        self.inputs = inputs
        self.op = op
        self.grad = 0.0
        self.backward_fn = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Scalar) else Scalar(other)
        out = Scalar(self.val + other.val, (self, other), 'add')
        def fn():
            self.grad += out.grad
            other.grad += out.grad
        out.backward_fn = fn
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Scalar) else Scalar(other)
        out = Scalar(self.val * other.val, (self, other), 'mul')
        def fn():
            self.grad += other.val * out.grad
            other.grad += self.val * out.grad
        out.backward_fn = fn
        return out

    def __pow__(self, k):
        out = Scalar(self.val ** k, (self,), f'pow{k}')
        def fn():
            self.grad += k * self.val ** (k - 1) * out.grad
        out.backward_fn = fn
        return out

    def exp(self):
        out = Scalar(math.exp(self.val), (self,), 'exp')
        def fn():
            self.grad += out.val * out.grad
        out.backward_fn = fn
        return out

    def tanh(self):
        e = (self * 2).exp()
        return (e + -1) * (e + 1) ** -1

    __radd__ = __add__
    __rmul__ = __mul__

    def backprop(self):
        self.clear()
        order = self.ordered()
        self.grad = 1.0
        while order:
            order.pop().backward_fn()

    def ordered(self):
        seen, order = set(), []
        def walk(s):
            if s not in seen:
                seen.add(s)
                for i in s.inputs:
                    walk(i)
                order.append(s)
        walk(self)
        return order

    def clear(self):
        self.grad = 0.0
        for i in self.inputs:
            i.clear()


def relu_all(xs):
    outs = []
    for x in xs:
        out = Scalar(max(0.0, x.val), (x,), 'relu')
        def fn(x=x, out=out):
            x.grad += (out.val > 0) * out.grad
        out.backward_fn = fn
        outs.append(out)
    return outs


def forward(a, b, c):
    h = relu_all([a * b + c, a * c + b * -1, b * b + a])
    s = h[0] * h[1] + h[2]
    return s.tanh() * a + h[0] ** 2


def setup():
    """The leaves and a function that builds the output afresh."""
    a = Scalar(0.7)
    b = Scalar(-0.4)
    c = Scalar(0.9)
    return [a, b, c], lambda: forward(a, b, c)


def train(steps=1):
    leaves, forward_of = setup()
    for _ in range(steps):
        out = forward_of()
        out.backprop()
    return leaves, out


if __name__ == "__main__":
    train()
