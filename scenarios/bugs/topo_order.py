"""A hand-written backward() with the topological sort the wrong way round

`backward(root)` builds the topological order with a depth-first search, but appends
each node *before* visiting its children instead of after. Reversed, that order runs an
op's `_backward` before the ops that use it have handed it their gradient, so it passes
on a grad that is still 0 (or incomplete).

`mgtui bugs/topo_order --check` sees `e`'s `_backward` run before that of `d`, which
uses `e`.

Things to look for:

- In a correct order, a node comes after all of its inputs; walking it backwards, each
  node is reached only after every node that uses it.
- Compare the grads with `chain.py`: `a`, `b`, `c` and `e` end up 0 here.
"""

from engine import Value


def backward(root):
    topo, visited = [], set()

    def build(v):
        if v not in visited:
            visited.add(v)
            topo.append(v)  # BUG: must come after the loop over the children
            for child in v._prev:
                build(child)
    build(root)

    root.grad = 1.0
    for v in reversed(topo):
        v._backward()  # the op whose input is not complete yet runs here


a = Value(2.0, label='a')
b = Value(-3.0, label='b')
c = Value(10.0, label='c')
e = a*b; e.label = 'e'
d = e + c; d.label = 'd'
f = Value(-2.0, label='f')
L = d * f; L.label = 'L'

backward(L)

for node in [L, f, d, e, c, a, b]:
    print(f"{node.label:>2}  grad {node.grad:6.1f}")
