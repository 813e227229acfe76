"""Training a two-layer classifier with the numpy engine `diff_numpy_engine.py`

Six examples of three features (`X`) in four classes (`Y`, integer labels), both plain
leaf Tensors; a sigmoid hidden layer of five units, centred over the batch
(`h - h.mean(dim=0)`); logits, the fused cross-entropy, and a small L2 penalty on the
first layer's weights. Three steps of SGD; `zero_grad` zeroes the parameters only.
The same network in PyTorch is `diff_numpy_torch.py`.
"""

import numpy as np

from diff_numpy_engine import Tensor

rng = np.random.default_rng(7)
X = Tensor(rng.normal(size=(6, 3)))
Y = Tensor(np.array([0, 2, 1, 3, 2, 0]))
W1 = Tensor(rng.normal(size=(3, 5)) * 0.5)
b1 = Tensor(np.zeros(5))
W2 = Tensor(rng.normal(size=(5, 4)) * 0.5)
b2 = Tensor(np.zeros(4))
params = [W1, b1, W2, b2]

for step in range(3):
    h = (X.matmul(W1) + b1).sigmoid()
    h = h - h.mean(dim=0)
    logits = h.matmul(W2) + b2
    loss = (W1 * W1).sum() * 0.01 + logits.cross_entropy(Y)
    for p in params:
        p.grad = np.zeros(p.shape)
    loss.backward()
    for p in params:
        p.data = p.data - 0.5 * p.grad
    print(step, float(loss.data))
