"""A custom autograd Function whose backward is wrong: tanh's derivative without its square

The twin of `torch_function`: the neuron's tanh is a hand-written
`torch.autograd.Function`, and its `backward` returns `(1 - o) * grad_o` where tanh's
local derivative is `1 - o²`. With `o = 0.7071` that is `0.2929` instead of `0.5`, and
every gradient below it is off by the same factor: `w1.grad = 0.5858`, not `1.0`.

torch runs it without a word. `mgtui --check` runs the Function again on the input it
got and compares its backward with finite differences of its forward: it names
`Tanh.backward`, the element `n[0]`, and the line that returned the wrong gradient.
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
        return (1 - o) * grad_o  # the bug: 1 - o, not 1 - o²


x1 = torch.Tensor([2.0]).double()                ; x1.requires_grad = True
x2 = torch.Tensor([0.0]).double()                ; x2.requires_grad = True
w1 = torch.Tensor([-3.0]).double()               ; w1.requires_grad = True
w2 = torch.Tensor([1.0]).double()                ; w2.requires_grad = True
b = torch.Tensor([6.8813735870195432]).double()  ; b.requires_grad = True
n = x1*w1 + x2*w2 + b
o = Tanh.apply(n)

o.backward()

print('n.grad via x1', x1.grad.item(), 'w1', w1.grad.item())
