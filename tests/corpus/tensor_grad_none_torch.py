"""The two-layer ReLU regression of `tensor_grad_none.py` in PyTorch

Same data, parameters and three SGD steps; the data and targets do not require grad,
the parameters' grads are set to None before each backward.
"""

import torch

X = torch.linspace(-1.0, 1.0, 12, dtype=torch.float64).reshape(4, 3)
y = torch.tensor([[0.5], [-0.25], [1.0], [0.0]], dtype=torch.float64)
W1 = torch.tensor([[0.3, -0.6], [0.8, 0.2], [-0.4, 0.5]], dtype=torch.float64,
                  requires_grad=True)
b1 = torch.tensor([0.1, -0.1], dtype=torch.float64, requires_grad=True)
W2 = torch.tensor([[0.7], [-0.9]], dtype=torch.float64, requires_grad=True)
params = [W1, b1, W2]

for _ in range(3):
    h = torch.relu(X @ W1 + b1)
    penalty = (W1 ** 2).mean()
    loss = ((h @ W2 - y) ** 2).mean() + penalty
    for p in params:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.1 * p.grad
