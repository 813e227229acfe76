"""Backprop by hand, without the seed

The lecture's manual backward pass through the neuron: call each node's `_backward` by
hand, from the output back to the inputs. But the first line of the manual pass,
`o.grad = 1.0`, is missing. Every `_backward` multiplies by its output's grad, so with
`o.grad = 0` every grad in the graph stays 0.

`mgtui bugs/no_seed --check` sees a backward pass whose root grad is 0 when it starts.

Things to look for:

- The chain rule only ever *multiplies* by `out.grad`. Something has to put the first 1
  in: `backward()` does it with `self.grad = 1`.
- Zero grads everywhere is a quiet failure: nothing crashes and nothing learns.
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
o = n.tanh(); o.label = 'o'

# the manual backward pass (BUG: `o.grad = 1.0` is missing)
o._backward()  # BUG: o.grad is still 0 here
n._backward()
x1w1x2w2._backward()
x1w1._backward()
x2w2._backward()

for node in [o, n, x1, w1, x2, w2]:
    print(f"{node.label:>2}.grad = {node.grad}")
