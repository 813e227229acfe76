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


FLOAT32 = '''
"""A tensor engine in float32: finite differences cannot check its gradients"""
import numpy as np


class T:
    def __init__(self, data, _prev=(), _op=''):
        self.data = np.asarray(data, dtype=np.float32)
        self.grad = np.zeros_like(self.data)
        self._prev, self._op = set(_prev), _op
        self._backward = lambda: None

    def __mul__(self, other):
        out = T(self.data * other.data, (self, other), '*')
        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def sum(self):
        out = T(self.data.sum(), (self,), 'sum')
        def _backward():
            self.grad += np.ones_like(self.data) * out.grad
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
        self.grad = np.ones_like(self.data)
        for v in reversed(topo):
            v._backward()


def train():
    x, w = T([1.0, 2.0]), T([0.5, -1.0])
    (x * w).sum().backward()


if __name__ == "__main__":
    train()
'''


def test_what_could_not_be_checked_is_no_clean_bill(tmp_path, capsys):
    import json

    from mgtui.cli import main

    path = tmp_path / "float32_engine.py"
    path.write_text(FLOAT32)
    assert main([str(path), "--check"]) == 3
    out = capsys.readouterr().out
    assert "no backward pass was checked numerically: not a clean bill" in out
    assert "float32" in out
    assert main([str(path), "--check", "--json"]) == 3
    (f,) = json.loads(capsys.readouterr().out)
    assert f["kind"] == "unchecked" and "float32" in f["message"]
    namespace: dict = {}
    exec(compile(FLOAT32, str(path), "exec"), namespace)
    found = mgtui.check(namespace["train"])
    assert found, "an unchecked run must not be an empty list"
    (g,) = found
    assert g.kind == "unchecked" and "no backward pass was checked numerically" in g.message


class Piece:
    """A numpy node whose ops write into parts of their input's grad."""

    def __init__(self, data, _prev=(), _op=''):
        self.data = np.asarray(data, dtype=float)
        self.grad = np.zeros_like(self.data)
        self._prev, self._op = tuple(_prev), _op
        self._backward = lambda: None

    def column(self, i):
        out = Piece(self.data[:, i:i + 1], (self,), 'column')
        def _backward():
            self.grad[:, i:i + 1] += out.grad
        out._backward = _backward
        return out

    def rows(self, idx):
        out = Piece(self.data[idx], (self,), 'rows')
        def _backward():
            np.add.at(self.grad, idx, out.grad)
        out._backward = _backward
        return out

    def total(self):
        out = Piece(self.data.sum(), (self,), 'total')
        def _backward():
            self.grad += np.ones_like(self.data) * out.grad
        out._backward = _backward
        return out

    def __add__(self, other):
        out = Piece(self.data + other.data, (self, other), '+')
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
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
        self.grad = np.ones_like(self.data)
        for v in reversed(topo):
            v._backward()


def test_writes_into_parts_of_a_grad_are_recorded_with_their_elements():
    from mgtui.recording.inprocess import record_call

    def fn():
        h = Piece(np.arange(6.0).reshape(3, 2), _op='')
        E = Piece(np.linspace(-1, 1, 8).reshape(4, 2), _op='')
        picked = E.rows([1, 3, 1])  # token 1 twice: np.add.at adds both
        (h.column(1).total() + picked.total()).backward()

    t = record_call(fn)
    by_op = {t.op(t.event_node(i)): i for i in range(len(t)) if t.kind(i).value == "backward"}
    (w,) = t.writes(by_op["column"])
    before, after = t.values.write_value(w.index, w.before, w.after)
    assert np.array(after.values).reshape(3, 2).tolist() == [[0, 1], [0, 1], [0, 1]]
    (w,) = t.writes(by_op["rows"])
    _, after = t.values.write_value(w.index, w.before, w.after)
    assert np.array(after.values).reshape(4, 2).tolist() == [[0, 0], [2, 2], [0, 0], [1, 1]]


def test_a_correct_engine_writing_parts_of_grads_is_clean_and_a_bug_there_is_found():
    def right():
        h = Piece(np.linspace(-1, 1, 6).reshape(3, 2))
        E = Piece(np.linspace(0.5, 2, 8).reshape(4, 2))
        (h.column(1).total() + E.rows([1, 3, 1]).total()).backward()

    assert mgtui.check(right) == []

    class Dropped(Piece):
        def rows(self, idx):
            out = Dropped(self.data[idx], (self,), 'rows')
            def _backward():
                self.grad[idx] += out.grad  # a repeated index adds once
            out._backward = _backward
            return out

    def wrong():
        E = Dropped(np.linspace(0.5, 2, 8).reshape(4, 2))
        E.rows([1, 3, 1]).total().backward()

    (f,) = mgtui.check(wrong)
    assert (f.kind, f.op) == ("wrong-derivative", "rows") and f.element[0] == 1
    assert f.text.strip() == "self.grad[idx] += out.grad  # a repeated index adds once"


STE = '''
"""A straight-through step in a tiny scalar engine"""
import mgtui


class V:
    def __init__(self, data, _prev=(), _op=''):
        self.data, self.grad = data, 0.0
        self._prev, self._op = set(_prev), _op
        self._backward = lambda: None

    def __mul__(self, o):
        out = V(self.data * o.data, (self, o), '*')
        def _backward():
            self.grad += o.data * out.grad
            o.grad += self.data * out.grad
        out._backward = _backward
        return out

    MARK
    def OP(self):
        out = V(1.0 if self.data > 0 else -1.0, (self,), 'OP')
        def _backward():
            self.grad += out.grad  # straight through
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


def train():
    w, x = V(0.5), V(2.0)
    (w.OP() * x).backward()


if __name__ == "__main__":
    train()
'''


def ste(tmp_path, op: str, mark: str = ""):
    folder = tmp_path / op
    folder.mkdir()
    path = folder / f"{op}.py"
    path.write_text(STE.replace("OP", op).replace("    MARK\n", f"    {mark}\n" if mark else ""))
    return path


def test_a_zero_finite_difference_reads_as_a_possible_straight_through_gradient(tmp_path):
    from mgtui.doctor import diagnose

    (f,) = diagnose(ste(tmp_path, "step_plain")).findings
    assert (f.kind, f.op) == ("wrong-derivative", "step_plain")
    assert "straight-through or surrogate gradient" in f.message
    assert "@mgtui.intended_gradient" in f.message and "[tool.mgtui] intended_gradient" in f.message


def test_a_gradient_marked_intended_is_not_reported(tmp_path, capsys):
    from mgtui.cli import main
    from mgtui.doctor import diagnose

    marked = ste(tmp_path, "step_marked", "@mgtui.intended_gradient")
    report = diagnose(marked)
    assert report.findings == [] and report.checked_passes
    assert any("step_marked is marked intended" in n for n in report.notes)
    assert main([str(marked), "--check"]) == 0
    configured = ste(tmp_path, "step_listed")
    (configured.parent / "pyproject.toml").write_text(
        '[tool.mgtui]\nintended_gradient = ["step_listed"]\n')
    assert diagnose(configured).findings == []
    other = ste(tmp_path, "step_other")  # (a mark names its op only)
    assert [f.op for f in diagnose(other).findings] == ["step_other"]


def test_a_straight_through_torch_function_is_worded_so_and_can_be_marked():
    torch = __import__("pytest").importorskip("torch")

    class StraightSign(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return torch.sign(x)

        @staticmethod
        def backward(ctx, grad):
            return grad  # straight through, by design

    def build(fn):
        def run():
            x = torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64, requires_grad=True)
            (fn.apply(x) * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
        return run

    (f,) = mgtui.check(build(StraightSign))
    assert (f.kind, f.op) == ("wrong-gradient", "StraightSign")
    assert "straight-through or surrogate gradient" in f.message

    @mgtui.intended_gradient
    class MarkedSign(StraightSign):
        pass

    assert mgtui.check(build(MarkedSign)) == []


def test_values_that_were_not_recorded_are_said_in_the_verdict(tmp_path, capsys):
    from mgtui.cli import main
    from mgtui.doctor import diagnose

    path = tmp_path / "listed.py"
    path.write_text("from engine.value import Value\n"
                    "odd = Value([1.0, 2.0])  # a list: not recorded\n"
                    "w, x = Value(0.5), Value(2.0)\n"
                    "(w * x).tanh().backward()\n")
    report = diagnose(path)
    assert report.checked_passes and "(1 list)" in report.unchecked
    assert main([str(path), "--check"]) != 0
    assert "neither numbers nor numeric arrays were not recorded (1 list)" in capsys.readouterr().out
