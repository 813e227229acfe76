"""A fan-out in PyTorch

The twin of `mine_fanout.py` and `fanout_micrograd.py`: `f = a*b + a`, so
`a.grad = b + 1 = 4` and `b.grad = a = -2`, by torch's own autograd.
"""

import torch

a = torch.tensor([-2.0], dtype=torch.float64, requires_grad=True)
b = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
c = a*b
f = c + a
f.backward()
