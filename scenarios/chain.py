"""The chain rule on a tiny expression

The first graph of the lecture: `L = (a*b + c) * f`, with `a = 2`, `b = -3`, `c = 10`
and `f = -2`. The forward pass gives `e = a*b = -6`, `d = e + c = 4` and `L = d*f = -8`.

Step through the backward pass from the end. `L.backward()` seeds `L.grad = 1`, then
walks the nodes in reverse topological order:

- **`L = d * f`**: a product hands each input the *other* input's value times `L.grad`,
  so `d.grad = f = -2` and `f.grad = d = 4`.
- **`d = e + c`**: a sum just routes the gradient through unchanged, so `e.grad` and
  `c.grad` are both `-2`.
- **`e = a * b`**: a product again, so `a.grad = b × e.grad = -3 × -2 = 6` and
  `b.grad = a × e.grad = 2 × -2 = -4`.

Each step only needs its own local derivative and the `grad` of its output. That is the
chain rule, one node at a time. To check a number by hand, nudge a leaf by a small `h`
and see how far `L` moves: `(L(a + h) - L(a)) / h ≈ 6`.
"""

from engine import Value

a = Value(2.0, label='a')
b = Value(-3.0, label='b')
c = Value(10.0, label='c')
e = a*b; e.label = 'e'  #: a product: backward, each input gets the other input times e.grad
d = e + c; d.label = 'd'  #: a sum: backward, it passes d.grad on to e and c unchanged
f = Value(-2.0, label='f')
L = d * f; L.label = 'L'  #: the output: backward starts here, with L.grad = 1

L.backward()

for node in [L, f, d, e, c, a, b]:
    print(f"{node.label:>2}  data {node.data:6.1f}  grad {node.grad:6.1f}")
