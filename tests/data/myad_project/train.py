"""Training a neuron with the myad package beside this script"""

from myad import Value
from myad import ops

w = Value(0.5)
b = Value(-0.2)
for x, y in [(1.0, 1.0), (-2.0, 0.0), (0.5, 1.0)]:
    z = w * x + b
    p = ops.sigmoid(z)
    loss = ops.square_error(p, y)
    w.grad = 0.0
    b.grad = 0.0
    loss.backward()
    w.data -= 0.5 * w.grad
    b.data -= 0.5 * b.grad
