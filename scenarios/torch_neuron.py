"""The lecture's neuron in PyTorch: the same tanh neuron, and torch's own backward

The lecture ends by building the neuron of `neuron` again in PyTorch, to check
micrograd's gradients against it. Each number is a one-element tensor made double and
given `requires_grad`; `n = x1*w1 + x2*w2 + b` and `o = torch.tanh(n)` are the same
forward pass, and `o.backward()` runs torch's autograd engine instead of micrograd's
`_backward`s.

Step through the backward pass: each step is one autograd node, in the order the
engine ran them (`TanhBackward0`, `AddBackward0`, `MulBackward0`), and each leaf's
`AccumulateGrad` is its own step. The gradients are micrograd's, up to float32: the
tensors were made by `torch.Tensor`, in float32, before `.double()`, so `b` is not
exactly `6.8813735870195432` and `x1.grad` is `-1.5000004`:

- `x1.grad = w1 × 0.5 = -1.5` and `w1.grad = x1 × 0.5 = 1.0`;
- `x2.grad = w2 × 0.5 = 0.5` and `w2.grad = x2 × 0.5 = 0.0`.
"""

import torch

x1 = torch.Tensor([2.0]).double()                ; x1.requires_grad = True
x2 = torch.Tensor([0.0]).double()                ; x2.requires_grad = True
w1 = torch.Tensor([-3.0]).double()               ; w1.requires_grad = True
w2 = torch.Tensor([1.0]).double()                ; w2.requires_grad = True
b = torch.Tensor([6.8813735870195432]).double()  ; b.requires_grad = True
n = x1*w1 + x2*w2 + b
o = torch.tanh(n)  #: tanh's local derivative is 1 - o², 0.5 here

print(o.data.item())
o.backward()

print('---')
print('x2', x2.grad.item())
print('w2', w2.grad.item())
print('x1', x1.grad.item())
print('w1', w1.grad.item())
