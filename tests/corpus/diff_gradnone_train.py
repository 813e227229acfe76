"""A one-hidden-layer classifier trained with `diff_gradnone_engine.py`

`X` (five examples of four features) and the integer labels `Y` do not require grad;
the first layer keeps its weight as (out, in) and multiplies by its transpose, the
second as (in, out); relu; log-softmax and the mean negative log-likelihood. Three
steps of SGD, the grads set back to None. The torch twin is `diff_gradnone_torch.py`.
"""

import numpy as np

from diff_gradnone_engine import Tensor

rng = np.random.default_rng(3)
X = Tensor(rng.normal(size=(5, 4)))
Y = Tensor(np.array([2, 0, 1, 1, 2]))
W1 = Tensor(rng.normal(size=(6, 4)) * 0.5, requires_grad=True)
b1 = Tensor(np.zeros(6), requires_grad=True)
W2 = Tensor(rng.normal(size=(6, 3)) * 0.5, requires_grad=True)
params = [W1, b1, W2]

for step in range(3):
    hidden = (X.dot(W1.T) + b1).relu()
    loss = hidden.dot(W2).log_softmax().nll(Y)
    for p in params:
        p.grad = None
    loss.backward()
    for p in params:
        p.data = p.data - 0.3 * p.grad
    print(step, float(loss.data))
