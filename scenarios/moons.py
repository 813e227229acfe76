"""Two moons: micrograd's demo at full size

micrograd's own `demo.ipynb`: a binary classifier on 100 points of the two-moons data
set, with `MLP(2, [16, 16, 1])`, which has two ReLU hidden layers of 16, a linear output
and 337 parameters. It is the scale scenario. Each forward pass builds a graph of about
65,000 nodes, and the scenario runs 3 training steps instead of the notebook's 100 so it
loads in seconds.

The loss is the one from the notebook:

- a **max-margin** (hinge) loss `(1 + -yi*scorei).relu()`, averaged over the 100 points.
  It is 0 for a point that is on the right side of the boundary by a margin of at least
  1, so only the points near or across the boundary send any gradient back;
- plus **L2 regularisation**, `1e-4 * sum(p*p for p in parameters)`, which pulls every
  weight a little towards 0.

Things to look for: the backward pass is long, but every step is one of a handful of
ops. A `ReLU` that output 0 passes no gradient on. The learning rate decays, as
`1.0 - 0.9*k/100`. Over these 3 steps the loss falls from 1.98 to 0.72 to 0.47, and the
accuracy climbs from 26% to 77% to 81%.
"""

import math
import random

from engine import Value
from engine.nn import MLP

random.seed(1337)


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
    return X, y


X, y = make_moons(n_samples=100, noise=0.1)

model = MLP(2, [16, 16, 1])  # 2-layer neural network
print(model)
print("number of parameters", len(model.parameters()))


def loss():
    inputs = [list(map(Value, xrow)) for xrow in X]

    # forward the model to get scores
    scores = list(map(model, inputs))

    # svm "max-margin" loss
    losses = [(1 + -yi*scorei).relu() for yi, scorei in zip(y, scores)]
    data_loss = sum(losses) * (1.0 / len(losses))
    # L2 regularization
    alpha = 1e-4
    reg_loss = alpha * sum((p*p for p in model.parameters()))
    total_loss = data_loss + reg_loss

    # also get accuracy
    accuracy = [(yi > 0) == (scorei.data > 0) for yi, scorei in zip(y, scores)]
    return total_loss, sum(accuracy) / len(accuracy)


for k in range(3):

    # forward
    total_loss, acc = loss()

    # backward
    model.zero_grad()
    total_loss.backward()

    # update (sgd)
    learning_rate = 1.0 - 0.9*k/100
    for p in model.parameters():
        p.data -= learning_rate * p.grad

    print(f"step {k} loss {total_loss.data}, accuracy {acc*100}%")
