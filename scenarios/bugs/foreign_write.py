"""A closure in a loop that writes to the wrong node

A custom `scale` op, `out = w * x`, is built inline in a loop, one node per input. Its
`_backward` refers to `x` and `out`, but a Python closure looks those names up when it
*runs*, not when it is made. By the time `backward()` runs the loop has finished, so
every closure sees the last `x` and the last `out`, and the first term's `_backward`
writes into `x1`, which is not one of its inputs.

`mgtui bugs/foreign_write --check` sees a `_backward` write to a node that is not among
the op's inputs.

Things to look for:

- Late binding: the fix is to capture the values at definition time, e.g.
  `def _backward(x=x, out=out):`, or to build the op in a function as the engine does.
- `x0.grad` stays 0 and `x1.grad` is counted twice.
"""

from engine import Value

w = Value(3.0, label='w')
xs = [Value(0.5, label='x0'), Value(-2.0, label='x1')]
terms = []
for i, x in enumerate(xs):
    out = Value(w.data * x.data, (w, x), 'scale', label=f't{i}')

    def _backward():
        w.grad += x.data * out.grad
        x.grad += w.data * out.grad  # BUG: `x` and `out` are the loop's last ones by now
    out._backward = _backward
    terms.append(out)

y = terms[0] + terms[1]; y.label = 'y'
y.backward()

for node in [w, *xs]:
    print(f"{node.label}.grad = {node.grad}")
