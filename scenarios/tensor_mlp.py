"""Two moons with matrices: the moons MLP as a numpy tensor engine

micrograd's demo (`moons`) written with the numpy `Tensor` of `engine.tensor`: the same
100 points and an `MLP(2, [16, 16, 1])` of 337 parameters, held in three weight
matrices and three bias rows. Each layer is `X @ W + b`: a (100, 2) batch times a
(2, 16) matrix, plus a (1, 16) bias row that broadcasts down the 100 rows. A forward
pass is about 20 nodes where the scalar one is about 65,000: the numbers live inside
the arrays.

The loss is the notebook's: the max-margin `(1 - y*score).relu()` averaged over the
points, plus `1e-4` times the sum of the squared weights. 3 training steps.

Things to look for:

- The bias's gradient: the bias row was broadcast over 100 rows, so its gradient is
  the `out.grad` of the `+` summed over axis 0 (`unbroadcast`), shape (1, 16).
- The matrix product's two rules, with their shapes: `∂L/∂W = Xᵀ · ∂L/∂out` and
  `∂L/∂X = ∂L/∂out · Wᵀ`.
- `mean` hands every element 1/100 of the gradient; a `ReLU` that output 0 passes none.
"""

import math
import random

import numpy as np

from engine.tensor import Tensor

random.seed(1337)
rng = np.random.default_rng(1337)


def make_moons(n_samples=100, noise=0.1):
    """Two interleaving half circles, like sklearn's make_moons, with labels -1 and +1."""
    n_out = n_samples // 2
    n_in = n_samples - n_out
    points = [(math.cos(math.pi * i / (n_out - 1)), math.sin(math.pi * i / (n_out - 1)), -1)
              for i in range(n_out)]
    points += [(1 - math.cos(math.pi * i / (n_in - 1)), 0.5 - math.sin(math.pi * i / (n_in - 1)), 1)
               for i in range(n_in)]
    random.shuffle(points)
    X = [[x + random.gauss(0, noise), y + random.gauss(0, noise)] for x, y, _ in points]
    y = [label for _, _, label in points]
    return np.array(X), np.array(y, dtype=float).reshape(-1, 1)


class Linear:
    """`X @ W + b`, with W (nin, nout) and b (1, nout), then a ReLU unless it is the last."""

    def __init__(self, nin, nout, nonlin=True):
        self.W = Tensor(rng.uniform(-1, 1, (nin, nout)) / math.sqrt(nin))
        self.b = Tensor(np.zeros((1, nout)))
        self.nonlin = nonlin

    def __call__(self, X):
        out = X @ self.W + self.b
        return out.relu() if self.nonlin else out

    def parameters(self):
        return [self.W, self.b]


class MLP:
    def __init__(self, nin, nouts):
        sizes = [nin] + nouts
        self.layers = [Linear(sizes[i], sizes[i + 1], nonlin=i != len(nouts) - 1)
                       for i in range(len(nouts))]

    def __call__(self, X):
        for layer in self.layers:
            X = layer(X)
        return X

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


X, y = make_moons(n_samples=100, noise=0.1)
model = MLP(2, [16, 16, 1])
print("number of parameters", sum(p.data.size for p in model.parameters()))


def loss():
    scores = model(Tensor(X, label='X'))  # (100, 1)
    losses = (1 + Tensor(-y) * scores).relu()  #: the max-margin loss of each point
    data_loss = losses.mean()
    reg_loss = 1e-4 * sum((p * p).sum() for p in model.parameters())
    total_loss = data_loss + reg_loss
    accuracy = ((y > 0) == (scores.data > 0)).mean()
    return total_loss, accuracy


for k in range(3):
    # forward
    total_loss, acc = loss()
    # backward
    for p in model.parameters():
        p.grad = np.zeros_like(p.data)
    total_loss.backward()
    # update (sgd)
    learning_rate = 1.0 - 0.9 * k / 100
    for p in model.parameters():
        p.data -= learning_rate * p.grad
    print(f"step {k} loss {total_loss.data.item():.4f}, accuracy {acc * 100:.0f}%")
