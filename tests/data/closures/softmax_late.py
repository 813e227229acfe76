"""A softmax whose `_backward` closures are bound late

`softmax(xs)` makes one node per input in a loop, and defines each node's `_backward`
inside the loop. The closures read `out` and `i` when they run, after the loop has
ended: every one of them sees the last `out` and the last `i`, so all but the last node
pass on the wrong gradient.
"""

import math

from engine import Value


def softmax(xs):
    m = max(x.data for x in xs)
    exps = [math.exp(x.data - m) for x in xs]
    total = sum(exps)
    outs = []
    for i in range(len(xs)):
        out = Value(exps[i] / total, tuple(xs), 'softmax')
        def _backward():
            for j, x in enumerate(xs):  # d p_i / d x_j = p_i ((i == j) - p_j)
                x.grad += out.data * ((i == j) - outs[j].data) * out.grad  # BUG: late `out`, `i`
        out._backward = _backward
        outs.append(out)
    return outs


a = Value(1.0, label='a')
b = Value(2.0, label='b')
c = Value(0.5, label='c')
p = softmax([a, b, c])
loss = p[0] * 2.0 + p[1] * -1.0 + p[2] * 0.5; loss.label = 'loss'
loss.backward()
