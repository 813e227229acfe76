"""Ops the package builds from the Value's own."""

from myad.value import Value


def sigmoid(z):
    """1 / (1 + exp(-z)), as one node."""
    s = 1 / (1 + (-z).exp().data)
    out = Value(s, (z,), 'sigmoid')
    def _backward():
        z.grad += s * (1 - s) * out.grad  # d(sigmoid)/dz = s (1 - s)
    out._backward = _backward
    return out


def square_error(p, y):
    """(p - y)²."""
    d = p - y
    return d * d
