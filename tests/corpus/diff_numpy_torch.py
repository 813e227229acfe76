"""The classifier of `diff_numpy_train.py` in plain PyTorch

The same numbers drawn from numpy in the same order; `X` and `Y` plain tensors (no
`requires_grad`, `Y` of integer labels); `F.cross_entropy`; the same L2 penalty and
three SGD steps.
"""

import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(7)
X = torch.tensor(rng.normal(size=(6, 3)))
Y = torch.tensor([0, 2, 1, 3, 2, 0])
W1 = torch.tensor(rng.normal(size=(3, 5)) * 0.5, requires_grad=True)
b1 = torch.zeros(5, dtype=torch.float64, requires_grad=True)
W2 = torch.tensor(rng.normal(size=(5, 4)) * 0.5, requires_grad=True)
b2 = torch.zeros(4, dtype=torch.float64, requires_grad=True)
params = [W1, b1, W2, b2]

for step in range(3):
    h = torch.sigmoid(X @ W1 + b1)
    h = h - h.mean(dim=0)
    logits = h @ W2 + b2
    loss = (W1 * W1).sum() * 0.01 + F.cross_entropy(logits, Y)
    for p in params:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.5 * p.grad
    print(step, loss.item())
