"""An example: a custom op's gradient checked by mgtui next to your own tests.

Run it with `python -m pytest examples/test_my_op.py` (also under `--cov`, or a
debugger). `mgtui.check` returns the gradient doctor's findings, an empty list when all
is well; when it is not, the assertion message names the op's line:

    AssertionError: assert not Findings(wrong-derivative at test_my_op.py:22: #6.grad:
    numerical 0.173105, recorded 0.2227. The _backward of y (#7, op sigmoid) added ...)
"""

import math

import mgtui
from engine import Value


def sigmoid(x):
    s = 1 / (1 + math.exp(-x.data))
    out = Value(s, (x,), 'sigmoid')

    def _backward():
        x.grad += s * (1 - s) * out.grad
    out._backward = _backward
    return out


def neuron(w1, w2):
    x1, x2 = Value(2.0, label='x1'), Value(-1.0, label='x2')
    y = sigmoid(x1 * w1 + x2 * w2)
    y.label = 'y'
    return y


def train_step():
    """What the doctor runs: build the graph with the custom op and backpropagate."""
    y = neuron(Value(-0.5, label='w1'), Value(0.25, label='w2'))
    y.backward()


def test_sigmoid_values():  # your own test, as before
    assert sigmoid(Value(0.0)).data == 0.5


def test_sigmoid_gradients():
    # every `_backward` checked numerically, `=` for `+=`, topological order, ...
    assert not mgtui.check(train_step)


def test_a_recorded_training_loop():
    w1, w2 = Value(-0.5, label='w1'), Value(0.25, label='w2')
    with mgtui.record() as rec:
        for _ in range(2):
            y = neuron(w1, w2)
            y.backward()
            for p in (w1, w2):
                p.data -= 0.1 * p.grad  # and no p.grad = 0 before the next backward()
    found = mgtui.check(rec)
    assert [f.kind for f in found] == ["missing-zero-grad"]
