"""The neuron, with `*` forgetting the out.grad factor

The hand-written Value of `mine_value.py` with its own `*`, whose `_backward` leaves out
`out.grad`: right wherever out.grad is 1, wrong everywhere else. The correct twins are
`mine_neuron.py` and `scenarios/neuron.py`.
"""

from mine_value import Value, neuron


def mul(self, other):
    out = Value(self.data * other.data, (self, other), '*')

    def _backward():
        self.grad += other.data  # BUG: times out.grad
        other.grad += self.data  # BUG: times out.grad
    out._backward = _backward
    return out


Value.__mul__ = mul
neuron()
