"""A two-branch sigmoid whose negative branch has the wrong derivative

The sigmoid is computed the stable way: `1 / (1 + e^-z)` for `z >= 0`, and
`e^z / (1 + e^z)` for `z < 0`. Its `_backward` follows the same two branches, and the
second one forgets to square the denominator. A neuron is trained on five samples, one
per step; `z` is negative in steps 2, 3 and 5, so backward passes 2, 3 and 5 are wrong
and 1 and 4 are right.
"""

import math

from engine import Value


def sigmoid(z):
    if z.data >= 0:
        s = 1 / (1 + math.exp(-z.data))
    else:
        e = math.exp(z.data)
        s = e / (1 + e)
    out = Value(s, (z,), 'sigmoid')

    def _backward():
        if z.data >= 0:
            z.grad += s * (1 - s) * out.grad  # d(sigmoid)/dz = s (1 - s)
        else:
            z.grad += e / (1 + e) * out.grad  # BUG: d/dz e^z/(1 + e^z) = e^z / (1 + e^z)**2
    out._backward = _backward
    return out


w = Value(0.5, label='w')
b = Value(0.0, label='b')
samples = [(1.0, 1.0), (-2.0, 0.0), (-1.0, 1.0), (2.0, 1.0), (-0.5, 0.0)]
for x, y in samples:
    w.grad = 0.0
    b.grad = 0.0
    z = w * x + b; z.label = 'z'
    p = sigmoid(z); p.label = 'p'
    loss = (p - y) ** 2; loss.label = 'loss'
    loss.backward()
    w.data -= 0.1 * w.grad
    b.data -= 0.1 * b.grad
