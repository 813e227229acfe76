"""One neuron with a tanh activation

A single neuron from the lecture: two inputs `x1 = 2`, `x2 = 0`, two weights `w1 = -3`,
`w2 = 1`, and a bias `b = 6.8813735870195432`, picked so that the numbers come out round.
The neuron adds up `x1*w1 + x2*w2 + b` into `n = 0.8814`, and squashes it with
`o = tanh(n) = 0.7071`.

In the backward pass, watch the `tanh` step first: its local derivative is
`1 - tanh(n)² = 1 - o² = 0.5`, so `n.grad = 0.5 × o.grad = 0.5`. The two `+` nodes pass
that 0.5 on unchanged to `b`, `x1*w1` and `x2*w2`.

At the two `*` nodes each input gets the other input times 0.5:

- `x1.grad = w1 × 0.5 = -1.5` and `w1.grad = x1 × 0.5 = 1.0`;
- `x2.grad = w2 × 0.5 = 0.5` and `w2.grad = x2 × 0.5 = 0.0`.

`w2.grad` is 0 because `x2` is 0: while this input is zero, changing its weight does not
change the output at all.
"""

from engine import Value

# inputs x1, x2
x1 = Value(2.0, label='x1')
x2 = Value(0.0, label='x2')
# weights w1, w2
w1 = Value(-3.0, label='w1')
w2 = Value(1.0, label='w2')
# bias of the neuron
b = Value(6.8813735870195432, label='b')
# x1*w1 + x2*w2 + b
x1w1 = x1*w1; x1w1.label = 'x1*w1'
x2w2 = x2*w2; x2w2.label = 'x2*w2'
x1w1x2w2 = x1w1 + x2w2; x1w1x2w2.label = 'x1*w1 + x2*w2'
n = x1w1x2w2 + b; n.label = 'n'
o = n.tanh(); o.label = 'o'  #: tanh's local derivative is 1 - o², 0.5 here

o.backward()

print(f"o = {o.data:.4f}")
for node in [n, b, x1, w1, x2, w2]:
    print(f"{node.label:>2}.grad = {node.grad:.4f}")
