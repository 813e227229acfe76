"""The same neuron, with tanh built from exp

This is the neuron from `neuron.py` with the `tanh` op broken up into smaller ones:
`tanh(n) = (e**(2n) - 1) / (e**(2n) + 1)`. The engine has no `tanh` node here, only
`*`, `exp`, `+`, `**-1` and the constants they wrap.

The output is the same `o = 0.7071`, and so are the leaf grads (`x1` -1.5, `w1` 1.0,
`x2` 0.5, `w2` 0.0), to about 1e-12. How the local steps are cut up does not matter, as
long as each one's derivative is right.

Watch two things as you step backwards:

- **`e` is used twice**, once in `e - 1` and once in `e + 1`. It gets two contributions
  to its `grad`, and the second one is *added* to the first. That is why every
  `_backward` writes `+=` and never `=`.
- **Division is a power.** `a / b` is `a * b**-1`, so the `**-1` node's local derivative
  is `-1 * b**-2`.
"""

from engine import Value

x1 = Value(2.0, label='x1')
x2 = Value(0.0, label='x2')
w1 = Value(-3.0, label='w1')
w2 = Value(1.0, label='w2')
b = Value(6.8813735870195432, label='b')
x1w1 = x1*w1; x1w1.label = 'x1*w1'
x2w2 = x2*w2; x2w2.label = 'x2*w2'
x1w1x2w2 = x1w1 + x2w2; x1w1x2w2.label = 'x1*w1 + x2*w2'
n = x1w1x2w2 + b; n.label = 'n'
# ----
e = (2*n).exp(); e.label = 'e'
o = (e - 1) / (e + 1)
# ----
o.label = 'o'

o.backward()

print(f"o = {o.data:.4f}")
for node in [n, b, x1, w1, x2, w2]:
    print(f"{node.label:>2}.grad = {node.grad:.4f}")
