"""Neurons, layers and MLPs built from `Value`s: micrograd's ReLU network or the lecture's tanh one."""

import random

from engine.value import Value


class Module:

    def zero_grad(self):
        for p in self.parameters():
            p.grad = 0

    def parameters(self):
        return []


class Neuron(Module):

    def __init__(self, nin, nonlin=True, activation='relu'):
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        # micrograd starts the bias at 0; the lecture's tanh neuron starts it at random
        self.b = Value(random.uniform(-1, 1) if activation == 'tanh' else 0)
        self.nonlin = nonlin
        self.activation = activation

    def __call__(self, x):
        act = sum((wi*xi for wi, xi in zip(self.w, x)), self.b)
        if not self.nonlin:
            return act
        return act.tanh() if self.activation == 'tanh' else act.relu()

    def parameters(self):
        return self.w + [self.b]

    def __repr__(self):
        kind = {'relu': 'ReLU', 'tanh': 'Tanh'}[self.activation] if self.nonlin else 'Linear'
        return f"{kind}Neuron({len(self.w)})"


class Layer(Module):

    def __init__(self, nin, nout, **kwargs):
        self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]

    def __call__(self, x):
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]

    def __repr__(self):
        return f"Layer of [{', '.join(str(n) for n in self.neurons)}]"


class MLP(Module):
    """activation='relu' (micrograd): ReLU hidden layers and a linear last layer.
    activation='tanh' (the lecture): tanh in every layer, the last one included."""

    def __init__(self, nin, nouts, activation='relu'):
        sz = [nin] + nouts
        self.layers = [Layer(sz[i], sz[i+1], activation=activation,
                             nonlin=activation == 'tanh' or i != len(nouts)-1)
                       for i in range(len(nouts))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self):
        return f"MLP of [{', '.join(str(layer) for layer in self.layers)}]"
