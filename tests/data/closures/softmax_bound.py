"""`softmax_late.py` with each `_backward` made by a function of its own

`backward_of(i, out)` makes the closure, so each one holds its own `i` and `out`.
Correct: the doctor must find nothing here.
"""

import math

from engine import Value


def softmax(xs):
    m = max(x.data for x in xs)
    exps = [math.exp(x.data - m) for x in xs]
    total = sum(exps)
    outs = []

    def backward_of(i, out):
        def _backward():
            for j, x in enumerate(xs):  # d p_i / d x_j = p_i ((i == j) - p_j)
                x.grad += out.data * ((i == j) - outs[j].data) * out.grad
        return _backward

    for i in range(len(xs)):
        out = Value(exps[i] / total, tuple(xs), 'softmax')
        out._backward = backward_of(i, out)
        outs.append(out)
    return outs


a = Value(1.0, label='a')
b = Value(2.0, label='b')
c = Value(0.5, label='c')
p = softmax([a, b, c])
loss = p[0] * 2.0 + p[1] * -1.0 + p[2] * 0.5; loss.label = 'loss'
loss.backward()
