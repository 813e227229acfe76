"""A scalar Value that keeps its number in `value`, trained as one tanh neuron

The style of many lecture forks: the number is `value` (not `data`), the inputs a
`_children` set, the op a symbol in `_op`, a `label`; `backward()` sorts with a
recursive depth-first walk and every `_backward` adds with `+=`. The training loop
zeroes the parameters only (`Neuron.zero_grad`): the inputs and targets are Values made
once, holding integers, whose grads pile up from step to step, which is harmless.
"""

import math
import random


class Value:

    def __init__(self, value, _children=(), _op='', label=''):
        self.value = value
        self.grad = 0.0
        self._children = set(_children)
        self._op = _op
        self.label = label
        self._backward = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.value + other.value, (self, other), '+')
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.value * other.value, (self, other), '*')
        def _backward():
            self.grad += other.value * out.grad
            other.grad += self.value * out.grad
        out._backward = _backward
        return out

    def __pow__(self, k):
        out = Value(self.value ** k, (self,), f'**{k}')
        def _backward():
            self.grad += k * self.value ** (k - 1) * out.grad
        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.value)
        out = Value(t, (self,), 'tanh')
        def _backward():
            self.grad += (1 - t * t) * out.grad
        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    __radd__ = __add__
    __rmul__ = __mul__

    def backward(self):
        order, seen = [], set()
        def visit(v):
            if v not in seen:
                seen.add(v)
                for child in v._children:
                    visit(child)
                order.append(v)
        visit(self)
        self.grad = 1.0
        for v in reversed(order):
            v._backward()


class Neuron:

    def __init__(self, n_in, seed=1):
        rnd = random.Random(seed)
        self.w = [Value(rnd.uniform(-1, 1), label=f'w{i}') for i in range(n_in)]
        self.b = Value(0.0, label='b')

    def __call__(self, xs):
        act = sum((wi * xi for wi, xi in zip(self.w, xs)), self.b)
        return act.tanh()

    def parameters(self):
        return self.w + [self.b]

    def zero_grad(self):
        for p in self.parameters():
            p.grad = 0.0


def setup():
    """The model and a function that builds the loss afresh."""
    xs = [[Value(2), Value(-1)], [Value(1), Value(3)], [Value(-2), Value(1)]]
    ys = [Value(1), Value(-1), Value(1)]  # class labels, integers
    model = Neuron(2)

    def loss_of():
        preds = [model(x) for x in xs]
        return sum(((p - y) ** 2 for p, y in zip(preds, ys)), Value(0))
    return model, loss_of


def train(steps=3):
    model, loss_of = setup()
    for _ in range(steps):
        loss = loss_of()
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.value -= 0.05 * p.grad
    return model, loss


if __name__ == "__main__":
    train()
