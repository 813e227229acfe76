"""The gradient doctor on a tensor engine (`engine/tensor.py`, numpy arrays for data and
grad): each planted bug is found at its node and line with the element named, and the
numbers are torch's (an independent implementation), not the doctor's own; correct uses
of the engine raise nothing; and the doctor still works with numpy not installed.

The bundled bug scenarios' kind, node, line and element are in `test_doctor.EXPECTED`;
these tests check the numbers and the functions given to `mgtui.check`.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import mgtui
from engine.tensor import Tensor
from mgtui.doctor import diagnose, diagnose_call
from mgtui.doctor.overwrite_check import OverwriteCheck, assigned_element

ROOT = Path(__file__).resolve().parent.parent.parent
BUGS = ROOT / "scenarios" / "bugs"


def test_unbroadcast_mean_numbers_are_torchs():
    report = diagnose(BUGS / "unbroadcast_mean.py")
    (f,) = report.findings
    t = report.trace
    assert t.label(f.input) == "b" and f.element == (0, 0)
    # the same layer in torch: b's gradient is the sum over the 4 rows, the bug a mean
    X = torch.arange(8.0, dtype=torch.float64).reshape(4, 2) / 4
    W = torch.tensor([[0.5, -1.0, 0.25], [1.5, 0.5, -0.5]], dtype=torch.float64)
    b = torch.tensor([[0.1, -0.2, 0.3]], dtype=torch.float64, requires_grad=True)
    torch.tanh(X @ W + b).sum().backward()
    right = b.grad[0, 0].item()
    assert f.numerical == pytest.approx(right, rel=1e-5)
    assert f.recorded == pytest.approx(right / 4, rel=1e-9)  # a mean of 4 rows
    assert f.local == pytest.approx(right, rel=1e-5)  # what the call should have added
    assert "b.grad[0, 0]" in f.message


def test_matmul_transposed_numbers_are_torchs():
    report = diagnose(BUGS / "matmul_transposed.py")
    (f,) = report.findings
    t = report.trace
    assert t.label(f.input) == "W"
    i, j = f.element
    assert i != j  # the diagonal of a transpose is right
    X = torch.linspace(-1, 1, 12, dtype=torch.float64).reshape(4, 3)
    W = torch.tensor([[0.2, -0.5, 1.0], [0.7, 0.1, -0.3], [-0.4, 0.9, 0.6]],
                     dtype=torch.float64, requires_grad=True)
    y = X @ W
    (y * y).mean().backward()
    assert f.numerical == pytest.approx(W.grad[i, j].item(), rel=1e-5)
    assert f.recorded == pytest.approx(W.grad[j, i].item(), rel=1e-9)  # its mirror's


def test_no_broadcast_sum_names_both_shapes():
    report = diagnose(BUGS / "no_broadcast_sum.py")
    (f,) = report.findings
    assert f.kind == "grad-shape"
    assert "(5, 3)" in f.message and "(1, 3)" in f.message and "b (#1)" in f.message


def test_tensor_overwrite_names_the_element_and_its_values():
    report = diagnose(BUGS / "tensor_overwrite.py")
    (f,) = report.findings
    # x*c's `_backward` sets x.grad = c * out.grad; out.grad is 1 (a sum), c[0, 0] = 2:
    # replayed from 3 + 2·max|c| = 7 it leaves 2, where `+=` leaves 9
    assert f.element == (0, 0)
    assert "x.grad[0, 0] = 7" in f.message and "left 2, not 9" in f.message
    assert json.loads(json.dumps(f.to_json()))["element"] == [0, 0]  # `--check --json`


def test_assigned_element_compares_element_by_element():
    g0 = np.array([[1.0, 2.0], [3.0, 4.0]])
    start = np.full((2, 2), 11.0)
    assert assigned_element(g0, start, start + g0) is None  # `+=`
    assert assigned_element(g0, start, g0) == 0  # `=`
    partly = start + g0
    partly[1, 0] = g0[1, 0]  # `=` on one element only (`grad[1, 0] = …`)
    assert assigned_element(g0, start, partly) == 2


# -- functions given to mgtui.check ------------------------------------------------------------


def layer_loss(X, W, b):
    """tanh(X @ W + b), summed: the unbroadcast of `engine.tensor`."""
    out = (X @ W + b).tanh().sum()
    out.label = 'loss'
    return out


def test_correct_engine_uses_are_clean():
    def broadcasting():
        X = Tensor(np.linspace(-1, 1, 12).reshape(4, 3), label='X')
        W = Tensor(np.linspace(0.5, -0.5, 6).reshape(3, 2), label='W')
        b = Tensor([[0.1, -0.2]], label='b')
        c = Tensor(2.0, label='c')  # a 0-d array broadcast over everything
        h = (X @ W + b).tanh() * c
        z = (h ** 2).mean() + (h.exp() + 1).log().sum() * 0.1 - h.relu().mean() / 3
        z.backward()

    def column_bias():
        x = Tensor(np.linspace(0.5, 2, 10).reshape(5, 2), label='x')
        s = Tensor([[1.5], [-0.5], [2.0], [0.25], [1.0]], label='s')  # (5, 1): along axis 1
        v = Tensor([0.3, -0.7], label='v')  # (2,): a leading axis added
        (x * s + v - 1 / x).sum().backward()

    def training():  # three passes, zero_grad and updates between them
        rng = np.random.default_rng(0)
        data = rng.normal(size=(6, 3))
        W = Tensor(rng.normal(size=(3, 2)), label='W')
        b = Tensor(np.zeros((1, 2)), label='b')
        for _ in range(3):
            loss = layer_loss(Tensor(data, label='X'), W, b)  # the batch: a new leaf
            W.grad = np.zeros_like(W.data)
            b.grad = np.zeros_like(b.data)
            loss.backward()
            W.data -= 0.1 * W.grad
            b.data -= 0.1 * b.grad

    for fn in (broadcasting, column_bias, training):
        report = diagnose_call(fn, passes="all")
        assert report.findings == [], (fn.__name__, [f.message for f in report.findings])
        assert report.checked_passes and report.checked_calls > 0


def transposed_matmul(X, W):
    out = Tensor(X.data @ W.data, (X, W), '@')

    def _backward():
        X.grad += out.grad @ W.data.T
        W.grad += out.grad.T @ X.data  # the transpose of Xᵀ · out.grad
    out._backward = _backward
    return out


def test_check_finds_a_transposed_matmul_in_a_big_weight_by_sampled_elements():
    def big():
        X = Tensor(np.linspace(-1, 1, 30).reshape(5, 6), label='X')
        W = Tensor(np.linspace(-0.9, 1.1, 36).reshape(6, 6), label='W')  # 36 > SMALL
        y = transposed_matmul(X, W); y.label = 'y'
        (y * y).mean().backward()

    (f,) = mgtui.check(big)
    assert f.kind == "wrong-derivative" and f.label == "y"
    assert f.text.startswith("W.grad += out.grad.T @ X.data")
    i, j = f.element
    assert i != j
    X = torch.linspace(-1, 1, 30, dtype=torch.float64).reshape(5, 6)
    W = torch.linspace(-0.9, 1.1, 36, dtype=torch.float64).reshape(6, 6).requires_grad_()
    ((X @ W) ** 2).mean().backward()
    assert f.numerical == pytest.approx(W.grad[i, j].item(), rel=1e-5)


def test_check_finds_a_bug_in_every_pass_of_a_training_loop():
    def training():
        X = Tensor(np.linspace(-1, 1, 12).reshape(4, 3), label='X')
        W = Tensor(np.linspace(0.3, -0.6, 9).reshape(3, 3), label='W')
        for _ in range(3):
            y = transposed_matmul(X, W); y.label = 'y'
            loss = (y * y).mean()
            W.grad = np.zeros_like(W.data)
            loss.backward()
            W.data -= 0.1 * W.grad

    report = diagnose_call(training, passes="all")
    (f,) = report.findings
    assert f.kind == "wrong-derivative" and f.also_in_passes == (2, 3)
    assert len(report.checked_passes) == 3


def test_non_finite_names_the_element():
    def made():
        x = Tensor([[1.0, -1.0, 2.0]], label='x')
        y = x.log(); y.label = 'y'  # log(-1): nan in element [0, 1]
        y.sum().backward()

    def added():
        x = Tensor([[1.0, 0.0]], label='x')
        r = x ** 0.5; r.label = 'r'  # d/dx at 0: 0.5 / sqrt(0) = inf, element [0, 1]
        r.sum().backward()

    with np.errstate(all="ignore"):
        (f,) = mgtui.check(made)
        assert (f.kind, f.label, f.element) == ("non-finite", "y", (0, 1))
        assert "y (#1).data[0, 1] is nan" in f.message
        (g,) = mgtui.check(added)
    assert (g.kind, g.label, g.element) == ("non-finite", "r", (0, 1))
    assert "x (#0).grad[0, 1]" in g.message and "inf" in g.message


def test_no_false_alarm_of_nan_or_zero_grad_on_arrays():
    report = diagnose(ROOT / "scenarios" / "tensor_mlp.py")
    assert report.findings == []
    assert len(report.checked_passes) == 3


def test_missing_zero_grad_on_array_grads():
    def training():
        W = Tensor(np.linspace(0.3, -0.6, 6).reshape(3, 2), label='W')
        b = Tensor(np.zeros((1, 2)), label='b')
        for k in range(2):
            X = Tensor(np.linspace(-1, 1, 12).reshape(4, 3), label='X')
            loss = layer_loss(X, W, b)
            if k == 0:  # zeroed once, before the first pass only
                W.grad = np.zeros_like(W.data)
                b.grad = np.zeros_like(b.data)
            loss.backward()
            W.data -= 0.1 * W.grad
            b.data -= 0.1 * b.grad

    (f,) = mgtui.check(training)
    assert (f.kind, f.label) == ("missing-zero-grad", "W")
    assert "left over from backward pass 1" in f.message and "(3, 2)" in f.message


def test_the_probe_watches_arrays_only_where_they_are():
    from mgtui.recording.inprocess import record_call

    def fn():
        x = Tensor([[1.0, 2.0]], label='x')
        (x * x).sum().backward()

    probe = OverwriteCheck()
    record_call(fn, on_create=probe.watch, before_backward=probe)
    assert probe.watch.shapes == {0: (1, 2), 1: (1, 2), 2: ()}  # x, x*x, the sum
    assert probe.hits == [] and probe.shape_hits == []
    scalar = OverwriteCheck()
    record_call(lambda: layer_loss_scalar(), on_create=scalar.watch, before_backward=scalar)
    assert scalar.watch.shapes == {}


def layer_loss_scalar():
    from engine import Value

    x, w = Value(2.0), Value(-3.0)
    (x * w).tanh().backward()


def test_the_doctor_works_without_numpy(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        sys.modules["numpy"] = None  # not installed: importing it fails
        from mgtui.doctor import diagnose
        report = diagnose({str(ROOT / 'scenarios' / 'bugs' / 'wrong_derivative.py')!r})
        assert [f.kind for f in report.findings] == ["wrong-derivative"]
        import mgtui.doctor.arrays, mgtui.doctor.array_runs
        assert sys.modules["numpy"] is None
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


class Tensor32(Tensor):
    """A Tensor whose leaves keep float32 data, as many numpy engines do."""

    def __init__(self, data, _children=(), _op='', label=''):
        super().__init__(data, _children, _op, label)
        self.data = self.data.astype(np.float32)
        self.grad = np.zeros_like(self.data)


def test_float32_arrays_are_said_not_checked_numerically():
    def fn():
        x = Tensor32([[1.0, -2.0, 0.5]], label='x')
        (x * x).tanh().sum().backward()

    report = diagnose_call(fn)
    assert report.findings == [] and report.checked_passes == []
    assert report.unchecked == "no backward pass was checked numerically"
    assert any("float32" in note and "float64" in note for note in report.notes)


def test_a_recorded_block_of_arrays_raises_no_false_alarm():
    from mgtui.doctor import diagnose_recorded
    from mgtui.doctor.overwrite_check import ArrayFacts
    from mgtui.recording.inprocess import record_call

    def fn():
        x = Tensor([[1.0, -2.0]], label='x')
        w = Tensor([[0.5], [1.5]], label='w')
        (x @ w).tanh().sum().backward()

    probe = OverwriteCheck()  # without its `watch`: the arrays it meets in `_backward`
    trace = record_call(fn, before_backward=probe)
    report = diagnose_recorded(trace, probe.hits, arrays=ArrayFacts.of(probe))
    assert report.findings == []
    assert set(ArrayFacts.of(probe).shapes) == set(range(trace.node_count))  # all seen in a call


def test_unseeded_random_arrays_are_said_not_checked():
    def fn():
        rng = np.random.default_rng()  # no seed: other numbers in every run
        x = Tensor(rng.normal(size=(2, 3)), label='x')
        (x * x).sum().backward()

    report = diagnose_call(fn)
    assert report.findings == [] and not report.checked_passes
    assert any("no seed" in note for note in report.notes)


def test_numpys_global_random_state_is_seeded_in_every_run():
    def fn():
        x = Tensor(np.random.normal(size=(2, 3)), label='x')  # numpy's global state
        w = Tensor(np.random.normal(size=(3, 2)), label='w')
        (x @ w).tanh().sum().backward()

    report = diagnose_call(fn)
    assert report.findings == [] and report.checked_passes


@pytest.mark.parametrize("name", ["unbroadcast_mean", "matmul_transposed",
                                  "no_broadcast_sum", "tensor_overwrite"])
def test_check_finds_each_tensor_bug_in_a_function(name):
    """`mgtui.check(fn)` on a function that runs the bug scenario: the same kind, node,
    line and element as `--check` (`test_doctor.EXPECTED`)."""
    import runpy

    from tests.doctor.test_doctor import EXPECTED, line_of

    kind, label, text, element = EXPECTED[name]
    path = BUGS / f"{name}.py"

    def fn():
        runpy.run_path(str(path))

    (f,) = mgtui.check(fn)
    assert (f.kind, f.label, f.element) == (kind, label, element)
    assert Path(f.file).resolve() == path.resolve() and f.line == line_of(path, text)


class Arr:
    """A numpy engine of another shape: grads start as the number 0 and become arrays
    as they are added to, `_prev` is a set; its `sum` can double its gradient."""

    double = False

    def __init__(self, data, _children=(), _op=''):
        self.data = np.asarray(data, dtype=float)
        self.grad = 0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __mul__(self, other):
        out = Arr(self.data * other.data, (self, other), '*')

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def sum(self):
        out = Arr(self.data.sum(), (self,), 'sum')
        k = 2 if Arr.double else 1

        def _backward():
            self.grad += np.ones_like(self.data) * out.grad * k
        out._backward = _backward
        return out

    def backward(self):
        topo, seen = [], set()

        def build(v):
            if v not in seen:
                seen.add(v)
                for c in v._prev:
                    build(c)
                topo.append(v)
        build(self)
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()


def test_an_engine_whose_grads_start_as_numbers(monkeypatch):
    def fn():
        a, b = Arr([[1.0, 2.0, 3.0]]), Arr([[0.5, -1.0, 2.0]])
        (a * b).sum().backward()

    assert mgtui.check(fn) == []
    monkeypatch.setattr(Arr, "double", True)
    (f,) = mgtui.check(fn)
    assert (f.kind, f.op, f.element) == ("wrong-derivative", "sum", (0, 0))
    # d sum / d (a*b)[0, 0] is 1; the bug added 2, and the grad ended at 2
    assert (f.numerical, f.local, f.recorded) == (pytest.approx(1.0), pytest.approx(1.0), 2.0)


def one_level_backward(root):
    """A backward pass whose order holds the root and its inputs only."""
    topo = []
    for child in root._prev:
        topo.append(child)  # BUG: the inputs' inputs are never added
    topo.append(root)
    root.grad = np.ones_like(root.data)
    for v in reversed(topo):
        v._backward()


def test_a_node_left_out_of_the_order_is_found():
    def fn():
        x = Tensor([[1.0, -2.0]], label='x')
        w = Tensor([[0.5], [1.5]], label='w')
        xw = x @ w; xw.label = 'xw'
        t = xw.tanh(); t.label = 't'
        loss = t.sum(); loss.label = 'loss'
        one_level_backward(loss)

    (f,) = mgtui.check(fn)
    assert (f.kind, f.label) == ("topo-order", "xw")
    assert "topo.append(child)" in f.text and "x, w" in f.message


def test_out_of_time_before_an_element_is_found_it_says_so():
    def fn():
        X = Tensor(np.linspace(-1, 1, 12).reshape(4, 3), label='X')
        W = Tensor([[0.2, -0.5, 1.0], [0.7, 0.1, -0.3], [-0.4, 0.9, 0.6]], label='W')
        y = transposed_matmul(X, W); y.label = 'y'
        (y * y).mean().backward()

    report = diagnose_call(fn, budget=0)  # one element checked: W[0, 0], which is right
    (f,) = report.findings
    assert (f.kind, f.label, f.element) == ("wrong-derivative", "y", None)
    assert "changes with W" in f.message and "within the time budget" in f.message
