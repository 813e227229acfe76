"""The lecture's neuron in PyTorch, with tanh as a custom autograd Function

The neuron of `torch_neuron`, whose tanh is written by hand as a
`torch.autograd.Function`: `forward` computes `tanh(n)` and saves it, `backward` turns
the gradient that reaches `o` into the one for `n`, with tanh's local derivative
`1 - o²`. This is how a new op gets into PyTorch, and where its gradient bugs live:
torch trusts whatever `backward` returns.

`mgtui --check` runs the Function again on the inputs it got and compares its backward
with finite differences: here they agree (`n.grad = 0.5`). Its twin,
`bugs/torch_function`, forgets the square.
"""

import torch


class Tanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, n):
        o = torch.tanh(n)
        ctx.save_for_backward(o)
        return o

    @staticmethod
    def backward(ctx, grad_o):
        o, = ctx.saved_tensors
        return (1 - o**2) * grad_o  #: tanh's local derivative is 1 - o²


x1 = torch.Tensor([2.0]).double()                ; x1.requires_grad = True
x2 = torch.Tensor([0.0]).double()                ; x2.requires_grad = True
w1 = torch.Tensor([-3.0]).double()               ; w1.requires_grad = True
w2 = torch.Tensor([1.0]).double()                ; w2.requires_grad = True
b = torch.Tensor([6.8813735870195432]).double()  ; b.requires_grad = True
n = x1*w1 + x2*w2 + b
o = Tanh.apply(n)

o.backward()

print('n.grad via x1', x1.grad.item(), 'w1', w1.grad.item())
