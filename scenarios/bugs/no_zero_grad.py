"""A training loop without zero_grad

Fitting `y = w*x + b` to three points with plain gradient descent, the way the lecture
does it, except that the loop never resets the grads. `backward()` *adds* into `.grad`,
so from the second step on each gradient is the sum of every step so far, and the
updates overshoot.

`mgtui bugs/no_zero_grad --check` sees the second backward pass start while `w.grad`
still holds the first pass's value, after an update has already used it.

Things to look for:

- Step through the second backward pass and watch `w.grad`: it does not start from 0.
- The fix is one line before `loss.backward()`: `w.grad = 0.0; b.grad = 0.0` (or
  `model.zero_grad()` with `engine.nn`).
"""

from engine import Value

xs = [1.0, 2.0, 3.0]
ys = [3.0, 5.0, 7.0]  # y = 2x + 1

w = Value(0.5, label='w')
b = Value(0.0, label='b')

for step in range(4):
    # forward
    loss = sum((w*x + b - y)**2 for x, y in zip(xs, ys))

    # backward
    loss.backward()  # BUG: the grads are never zeroed before this

    # update
    for p in [w, b]:
        p.data -= 0.01 * p.grad

    print(step, round(loss.data, 4), round(w.grad, 4))
