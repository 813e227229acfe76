"""A scale op whose `_backward` closures are bound late, writing to a late input

`scale_each(xs, k)` makes one node per input in a loop. Each closure adds to `x.grad`
(a variable it only writes to) and reads `out.grad`, when it runs, after the loop
has ended: every one of them sees the last `x` and the last `out`.
"""

from engine import Value


def scale_each(xs, k):
    outs = []
    for x in xs:
        out = Value(x.data * k, (x,), 'scale')
        def _backward():
            x.grad += k * out.grad  # BUG: late `x`, `out`
        out._backward = _backward
        outs.append(out)
    return outs


a = Value(1.0, label='a')
b = Value(2.0, label='b')
s1, s2 = scale_each([a, b], 3.0)
loss = s1 * s1 + s2
loss.backward()
