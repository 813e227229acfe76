"""The neuron, with tanh's local derivative written 1 - t

The hand-written Value of `mine_value.py` with its own `tanh`, whose `_backward` is
wrong; the correct twins are `mine_neuron.py` and `scenarios/neuron.py`.
"""

import math

from mine_value import Value, neuron


def tanh(self):
    t = math.tanh(self.data)
    out = Value(t, (self,), 'tanh')

    def _backward():
        self.grad += (1 - t) * out.grad  # BUG: d(tanh)/dx = 1 - t**2
    out._backward = _backward
    return out


Value.tanh = tanh
neuron()
