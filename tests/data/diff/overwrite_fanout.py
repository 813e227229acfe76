"""A fan-out on a hand-written Value with `=` for `+=`

The hand-written Value of `mine_value.py` with its own `*`, whose `_backward` sets its
inputs' grads instead of adding to them. In `f = c + a` with `c = a*b`, `f`'s `+` adds 1
to `a.grad` first, and then `c`'s `*` throws it away. The twin is `fanout_micrograd.py`.
"""

from mine_value import Value, fanout


def mul(self, other):
    out = Value(self.data * other.data, (self, other), '*')

    def _backward():
        self.grad = other.data * out.grad  # BUG: must be +=
        other.grad = self.data * out.grad  # BUG: must be +=
    out._backward = _backward
    return out


Value.__mul__ = mul
fanout()
