"""The lecture's MLP in PyTorch, one scalar tensor a parameter: the twin of `mlp`

`scenarios/mlp.py` again, node for node where torch allows: the same 41 parameters drawn
from `random` in the same order (each a one-element float64 tensor with
`requires_grad`), the same tanh neurons, the same squared-error loss and the same 20
steps of SGD, with torch's autograd for the backward pass. `mgtui diff mlp` this file:
they agree.
"""

import random

import torch

random.seed(0)


def value(x):
    return torch.tensor([x], dtype=torch.float64, requires_grad=True)


class Neuron:

    def __init__(self, nin):
        self.w = [value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = value(random.uniform(-1, 1))

    def __call__(self, x):
        return torch.tanh(sum((wi*xi for wi, xi in zip(self.w, x)), self.b))

    def parameters(self):
        return self.w + [self.b]


class Layer:

    def __init__(self, nin, nout):
        self.neurons = [Neuron(nin) for _ in range(nout)]

    def __call__(self, x):
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]


class MLP:

    def __init__(self, nin, nouts):
        sz = [nin] + nouts
        self.layers = [Layer(sz[i], sz[i+1]) for i in range(len(nouts))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


n = MLP(3, [4, 4, 1])

xs = [
    [2.0, 3.0, -1.0],
    [3.0, -1.0, 0.5],
    [0.5, 1.0, 1.0],
    [1.0, 1.0, -1.0],
]
ys = [1.0, -1.0, -1.0, 1.0]  # desired targets

for k in range(20):
    ypred = [n(x) for x in xs]
    loss = sum((yout - ygt)**2 for ygt, yout in zip(ys, ypred))

    for p in n.parameters():
        p.grad = None
    loss.backward()

    with torch.no_grad():
        for p in n.parameters():
            p += -0.05 * p.grad

    print(k, loss.item())
