"""The classifier of `diff_gradnone_train.py` in plain PyTorch: the same numbers,
`X` and `Y` plain tensors, `F.log_softmax` and `F.nll_loss`, three SGD steps."""

import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(3)
X = torch.tensor(rng.normal(size=(5, 4)))
Y = torch.tensor([2, 0, 1, 1, 2])
W1 = torch.tensor(rng.normal(size=(6, 4)) * 0.5, requires_grad=True)
b1 = torch.zeros(6, dtype=torch.float64, requires_grad=True)
W2 = torch.tensor(rng.normal(size=(6, 3)) * 0.5, requires_grad=True)
params = [W1, b1, W2]

for step in range(3):
    hidden = torch.relu(X @ W1.T + b1)
    loss = F.nll_loss(F.log_softmax(hidden @ W2, dim=-1), Y)
    for p in params:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.3 * p.grad
    print(step, loss.item())
