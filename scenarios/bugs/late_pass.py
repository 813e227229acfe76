"""A custom op that goes wrong only in a late training step

`fma(w, x, b) = w*x + b` is one op with three inputs. Its `_backward` halves the grads it
hands on whenever `|out.grad| > 0.5`, a leftover "clipping" that should not be there.
Training with a learning rate that is a little too large makes the error overshoot and
grow: `out.grad` is 0.3, then -0.45, then 0.675, so the first two backward passes are
exactly right and only the third one is wrong.

`mgtui bugs/late_pass --check` checks the first and the last backward pass numerically
(and those between them that fit in its time budget), and finds the halved grads in
backward pass 3, at the line of `fma` that writes them.

Things to look for:

- In pass 3, `w.grad` should be `x * out.grad` = 2 × 0.675 = 1.35; the op hands on
  0.675, half of it.
- A gradient check of the first step alone passes: a bug can hide behind a condition.
"""

from engine import Value


def fma(w, x, b):
    out = Value(w.data * x.data + b.data, (w, x, b), 'fma')

    def _backward():
        scale = 0.5 if abs(out.grad) > 0.5 else 1.0  # BUG: no such clipping belongs here
        w.grad += x.data * out.grad * scale
        x.grad += w.data * out.grad * scale
        b.grad += out.grad * scale
    out._backward = _backward

    return out


x = Value(2.0, label='x')
y = 1.0  # the target
w = Value(0.5, label='w')
b = Value(0.15, label='b')
lr = 0.25

for step in range(3):
    w.grad = 0.0
    b.grad = 0.0
    x.grad = 0.0
    out = fma(w, x, b); out.label = 'out'
    loss = (out - y)**2; loss.label = 'loss'
    loss.backward()
    print(f"step {step + 1}: out.grad = {out.grad:.4f}, w.grad = {w.grad:.4f}")
    w.data -= lr * w.grad
    b.data -= lr * b.grad
