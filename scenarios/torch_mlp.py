"""Training the lecture's MLP in PyTorch, with nn.Linear

The network of `mlp` written with PyTorch's own layers: three `nn.Linear` layers,
3 → 4 → 4 → 1, with tanh after each, 41 parameters in all (4×(3+1) + 4×(4+1) +
1×(4+1)), named by their path in the model (`lin1.weight`, `lin1.bias`, ...). The four
examples `xs` go through it at once, as one (4, 3) matrix, and the loss is the squared
error summed over the four predictions, against the targets `1, -1, -1, 1`.

Each of the 10 training steps has the passes of `mlp`: **forward** (each `nn.Linear`
is one `addmm` node, with the transposed weight `T` before it), **zero_grad**
(`model.zero_grad()` sets every grad to None), **backward** (`loss.backward()`, one
step per autograd node, in the order torch's engine runs them) and **update**
(`p -= 0.05 * p.grad`, with autograd off). The loss falls at every step.
"""

import torch
from torch import nn

torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1 = nn.Linear(3, 4)
        self.lin2 = nn.Linear(4, 4)
        self.lin3 = nn.Linear(4, 1)

    def forward(self, x):
        x = torch.tanh(self.lin1(x))
        x = torch.tanh(self.lin2(x))
        return torch.tanh(self.lin3(x))


model = MLP()
print(sum(p.numel() for p in model.parameters()), "parameters")
xs = torch.tensor([
    [2.0, 3.0, -1.0],
    [3.0, -1.0, 0.5],
    [0.5, 1.0, 1.0],
    [1.0, 1.0, -1.0],
])
ys = torch.tensor([1.0, -1.0, -1.0, 1.0])  # desired targets

for k in range(10):
    # forward pass
    ypred = model(xs).squeeze(1)
    loss = ((ypred - ys)**2).sum()
    # backward pass
    model.zero_grad()
    loss.backward()
    # update
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.05 * p.grad
    print(k, loss.item())

print("predictions:", [round(y, 3) for y in ypred.tolist()])
