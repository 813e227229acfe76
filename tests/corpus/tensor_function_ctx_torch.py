"""The regression of `tensor_function_ctx.py` in PyTorch

Same data, parameters and three SGD steps; `X` and the target do not require grad and
the loss is the mean over the batch, then over the outputs, of a squared error.
"""

import torch

X = torch.linspace(-1.0, 1.0, 15, dtype=torch.float64).reshape(5, 3)
target = torch.linspace(0.5, -0.5, 15, dtype=torch.float64).reshape(5, 3)
W = torch.tensor([[0.4, -0.3, 0.2], [0.1, 0.5, -0.6], [-0.2, 0.3, 0.7]],
                 dtype=torch.float64, requires_grad=True)
b = torch.tensor([0.05, -0.1, 0.2], dtype=torch.float64, requires_grad=True)
params = [W, b]
opt = torch.optim.SGD(params, lr=0.2)

for _ in range(3):
    h = torch.tanh(X @ W + b)
    err = (h + target) ** 2
    loss = err.mean(dim=0).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
