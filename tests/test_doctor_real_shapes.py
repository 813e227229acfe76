"""The doctor on the shapes real engines have (issue 33, points 1 and 2): what it could
not check is said, never passed as clean; and the common correct shapes raise no
alarm (inputs that keep their grads, writes into parts of a grad, grads set to None,
an intended straight-through gradient)."""

import numpy as np

import mgtui
from engine.tensor import Tensor
from engine.value import Value


def test_inputs_keeping_grads_are_not_a_missing_zero_grad():
    """zero_grad over the parameters only (most forks): the input's grad grows, harmless."""
    def training():
        w, b = Value(0.5, label='w'), Value(0.0, label='b')
        x, y = Value(2.0, label='x'), Value(3.0, label='y')
        for _ in range(3):
            w.grad = b.grad = 0.0
            loss = (w * x + b - y) ** 2
            loss.backward()
            w.data -= 0.01 * w.grad
            b.data -= 0.01 * b.grad

    assert mgtui.check(training) == []


def test_a_missing_zero_grad_is_headed_by_a_parameter():
    def training():
        W = Tensor(np.linspace(0.3, -0.6, 6).reshape(3, 2), label='W')
        X = Tensor(np.linspace(-1, 1, 12).reshape(4, 3), label='X')  # the input, made first
        W.grad = np.zeros_like(W.data)
        for _ in range(2):
            loss = ((X @ W).tanh() ** 2).sum()
            loss.backward()
            W.data -= 0.1 * W.grad

    (f,) = mgtui.check(training)
    assert (f.kind, f.label) == ("missing-zero-grad", "W")
