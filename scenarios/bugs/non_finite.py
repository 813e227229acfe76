"""A learning rate that is too big: training blows up to inf

Fitting `y = w*x` to one point with a learning rate of 1.0. Each update overshoots the
minimum by more than it started from, so `w` swings from side to side and grows about
17 times per step, until the squared error no longer fits in a float and becomes `inf`.
From there `inf - inf` turns everything into `nan`.

`mgtui bugs/non_finite --check` points at the first `inf`, the node that made it, and
the values of its inputs.

Things to look for:

- The loss jumps by a factor of about 300 per step long before it overflows: the
  sparkline shows it.
- A smaller learning rate (0.05) converges in a few steps.
"""

import math

from engine import Value

x, y = 3.0, 6.0
w = Value(0.5, label='w')

for step in range(200):
    err = w*x - y
    loss = err * err  # BUG: overflows to inf once the lr has made w huge
    loss.label = 'loss'

    w.grad = 0.0
    loss.backward()
    w.data -= 1.0 * w.grad

    if not math.isfinite(loss.data):
        print(f"diverged at step {step}: loss = {loss.data}")
        break
