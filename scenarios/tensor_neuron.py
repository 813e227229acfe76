"""The lecture's neuron, with vectors: one tanh neuron written as `x @ w + b`

The same neuron as `neuron`, with its inputs in a row vector `x = [[2, 0]]` (shape
(1, 2)) and its weights in a column `w = [[-3], [1]]` (shape (2, 1)), using the numpy
`Tensor` of `engine.tensor`. `x @ w` is the `x1*w1 + x2*w2` of the scalar neuron in
one step, so the graph has 6 nodes where the scalar one has 10, and the numbers are
the lecture's: `n = 0.8814`, `o = tanh(n) = 0.7071`.

In the backward pass the `tanh` step gives `n.grad = 1 - o² = 0.5`, the `+` passes it
on to `b` and to `x @ w`, and the matrix product's rule hands each side the other side
times that gradient, transposed:

- `∂L/∂w = xᵀ · ∂L/∂(x@w)`: `(1, 2)ᵀ·(1, 1) → (2, 1)`, so `w.grad = [[1.0], [0.0]]`;
- `∂L/∂x = ∂L/∂(x@w) · wᵀ`: `(1, 1)·(2, 1)ᵀ → (1, 2)`, so `x.grad = [[-1.5, 0.5]]`.

These are the scalar neuron's `w1.grad`, `w2.grad`, `x1.grad` and `x2.grad`.
"""

from engine.tensor import Tensor

x = Tensor([[2.0, 0.0]], label='x')  # inputs x1, x2 as a row
w = Tensor([[-3.0], [1.0]], label='w')  # weights w1, w2 as a column
b = Tensor(6.8813735870195432, label='b')  # bias of the neuron
xw = x @ w; xw.label = 'x@w'  #: (1, 2) @ (2, 1) → (1, 1): x1*w1 + x2*w2
n = xw + b; n.label = 'n'
o = n.tanh(); o.label = 'o'  #: tanh's local derivative is 1 - o², 0.5 here

o.backward()

print(f"o = {o.data.item():.4f}")
print("x.grad =", x.grad.tolist())
print("w.grad =", w.grad.tolist())
print(f"b.grad = {b.grad.item():.4f}")
