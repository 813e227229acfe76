"""The embedding and split model of `tensor_grad_elements.py` in PyTorch

The same parameters, tokens, labels and three SGD steps, written as people write it:
indexing the embedding table, slicing its columns, `F.cross_entropy` on integer labels.
"""

import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(7)
E = torch.tensor(rng.normal(0, 1, (5, 4)), requires_grad=True)
W1 = torch.tensor(rng.normal(0, 0.5, (2, 3)), requires_grad=True)
W2 = torch.tensor(rng.normal(0, 0.5, (2, 3)), requires_grad=True)
params = [E, W1, W2]
tokens = torch.tensor([1, 3, 0, 3, 4, 1])
labels = torch.tensor([2, 0, 1, 0, 2, 2])

for _ in range(3):
    h = E[tokens]
    left, right = h[:, :2], h[:, 2:]
    loss = F.cross_entropy(torch.tanh(left) @ W1 + right @ W2, labels)
    for p in params:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.5 * p.grad
