"""The highway layer of `tensor_unbroadcast.py` in PyTorch, as people write it

The same data, parameters and three SGD steps: `X` and the labels are plain tensors
that do not require grad, the loss is `F.cross_entropy`, `1 - z` is ordinary torch
arithmetic and the parameters are zeroed with `p.grad = None`.
"""

import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(3)
W = torch.tensor(rng.normal(0, 0.5, (4, 4)), requires_grad=True)
b = torch.zeros((1, 4), dtype=torch.float64, requires_grad=True)
Wz = torch.tensor(rng.normal(0, 0.5, (4, 4)), requires_grad=True)
V = torch.tensor(rng.normal(0, 0.5, (4, 4)), requires_grad=True)
params = [W, b, Wz, V]

X = torch.linspace(-1.0, 1.0, 24, dtype=torch.float64).reshape(6, 4)
labels = torch.tensor([0, 2, 1, 3, 2, 0])

for _ in range(3):
    z = torch.sigmoid(X @ Wz)
    h = z * torch.tanh(X @ W + b) + (1 - z) * X
    loss = F.cross_entropy(h @ V, labels)
    for p in params:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.1 * p.grad
