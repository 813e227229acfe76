"""One behaviour suite over every engine (issue 32): the same behaviours, run over the
scalar engine (`engine.value`), a numpy tensor engine (`engine.tensor`) and PyTorch,
each on a graph past the store's chunks of 16,384 nodes (the scalar one past three).

Each engine has a twin pair of scenarios written here: a cube op whose local
derivative is `3x²` (a custom `_backward`, or a custom `torch.autograd.Function`),
then a long chain `h = h + c` that makes the graph big, then `backward()`. The buggy
twin's cube writes `3x` instead (the line marked `# PLANTED`). The behaviours:

- record: the trace says its engine, and holds every node;
- step forward and back over the whole run, and arrive where the run ended / began;
- explain the cube's backward step;
- the doctor finds the planted bug at its line, and passes the correct twin having
  checked it;
- `mgtui diff` of the twin pair (saved) names the cube's input's gradient, at the
  planted line;
- save and reopen, in both formats, the engine and every gradient kept.

Expected gradients come from the cube's formula: d(x³)/dx = 3x², so x.grad is `3x²`
element by element (`3x` in the buggy twin); `c` is added once per link of the chain,
so c.grad is the chain's length in every element.
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest

from mgtui.cli import main
from mgtui.doctor import diagnose
from mgtui.run.runner import Run, RunSpec
from mgtui.session.timeline import Timeline
from mgtui.trace import EventKind
from mgtui.trace import binary as tracefile
from mgtui.trace import export
from mgtui.trace.engines import explain

CHUNK = 16_384  # the store's chunk of nodes (`mgtui.recording.store`)
# The chain's length, each link one node: the scalar engine's past three chunks; the
# array and torch engines' past one (each of their nodes costs a few hundred times a
# scalar one to record today, torch's about 2.5 ms on a loaded machine: issue 32's
# targets, and its lean torch adapter, are to bring that down).
LINKS = {"scalar": 3 * CHUNK, "array": CHUNK + 2_000, "torch": CHUNK + 2_000}

SCALAR = '''
from engine.value import Value


def cube(a):
    out = Value(a.data ** 3, (a,), 'cube')

    def _backward():
        a.grad += {derivative} * out.grad  # {mark}
    out._backward = _backward
    return out


x = Value(0.5, label='x')
c = Value(0.001, label='c')
h = cube(x); h.label = 'h'
for i in range({links}):
    h = h + c
h.backward()
'''

ARRAY = '''
import numpy as np

from engine.tensor import Tensor


def cube(a):
    out = Tensor(a.data ** 3, (a,), 'cube')

    def _backward():
        a.grad += {derivative} * out.grad  # {mark}
    out._backward = _backward
    return out


x = Tensor(np.array([[0.5, -1.0], [2.0, 0.25]]), label='x')
c = Tensor(np.full((2, 2), 0.001), label='c')
h = cube(x); h.label = 'h'
for i in range({links}):
    h = h + c
loss = h.sum(); loss.label = 'loss'
loss.backward()
'''

TORCH = '''
import torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a ** 3

    @staticmethod
    def backward(ctx, grad):
        a, = ctx.saved_tensors
        return {derivative} * grad  # {mark}


x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
c = torch.tensor([0.001, 0.001], dtype=torch.float64, requires_grad=True)
h = Cube.apply(x)
for i in range({links}):
    h = h + c
loss = h.sum()
loss.backward()
'''

XS = {"scalar": [0.5], "array": [0.5, -1.0, 2.0, 0.25], "torch": [0.5, -1.0]}
ENGINES = {  # engine -> (template, the right derivative, the planted one)
    "scalar": (SCALAR, "3 * a.data ** 2", "3 * a.data"),
    "array": (ARRAY, "3 * a.data ** 2", "3 * a.data"),
    "torch": (TORCH, "3 * a ** 2", "3 * a"),
}


class Twins:
    """An engine's twin pair, written into a directory of their own, each recorded
    once (`trace`, the correct twin's; `wrong_trace`) and saved (`saved`, `wrong_saved`:
    `mgtui diff` compares the saved pair, as it does two runs)."""

    def __init__(self, kind: str, where: Path) -> None:
        template, right, wrong = ENGINES[kind]
        self.kind, self.links = kind, LINKS[kind]
        self.right = where / f"{kind}_right.py"
        self.wrong = where / f"{kind}_wrong.py"
        self.right.write_text(textwrap.dedent(template).format(
            derivative=right, mark="RIGHT", links=self.links))
        self.wrong.write_text(textwrap.dedent(template).format(
            derivative=wrong, mark="PLANTED", links=self.links))
        self.planted = line_of(self.wrong, "# PLANTED")
        self.right_line = line_of(self.right, "# RIGHT")
        self.trace, self.wrong_trace = (
            Run(RunSpec(str(path), max_nodes=10 * self.links)).run().trace
            for path in (self.right, self.wrong))
        assert self.trace is not None and self.wrong_trace is not None
        self.saved, self.wrong_saved = where / "right.mgtrace", where / "wrong.mgtrace"
        self.saved.write_bytes(tracefile.dumpb(self.trace))
        self.wrong_saved.write_bytes(tracefile.dumpb(self.wrong_trace))

    def final_grad(self, trace, label: str) -> list[float]:
        """The final gradient of the node labelled `label`, element by element."""
        nid = node(trace, label)
        return elements(trace.values.final_value(nid, True))


def line_of(path: Path, text: str) -> int:
    (n,) = [i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s]
    return n


def node(trace, label: str) -> int:
    found = [n for n in range(trace.node_count)
             if trace.label(n) == label or trace.derived_name(n) == label]
    assert found, label
    return found[0]


def elements(value) -> list[float]:
    """A value's numbers, C order: a float's one, an array's kept ones."""
    return [value] if isinstance(value, float) else list(value.values)


def close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
                                    for x, y in zip(a, b))


@pytest.fixture(scope="module", params=sorted(ENGINES))
def twins(request, tmp_path_factory) -> Twins:
    return Twins(request.param, tmp_path_factory.mktemp(request.param))


def test_the_run_is_recorded_with_its_engine_past_several_chunks(twins):
    t = twins.trace
    assert t.error is None and t.engine == twins.kind
    assert t.node_count > twins.links > CHUNK
    xs = XS[twins.kind]
    assert close(twins.final_grad(t, "x"), [3 * x * x for x in xs])  # d(x³)/dx = 3x²
    assert close(twins.final_grad(t, "c"), [float(twins.links)] * len(xs))  # added each link
    wrong = twins.wrong_trace
    assert wrong.engine == twins.kind and wrong.node_count == t.node_count
    assert close(twins.final_grad(wrong, "x"), [3 * x for x in xs])  # the planted 3x


def test_stepping_forward_to_the_end_and_back_to_the_start(twins):
    t = twins.trace
    line = Timeline(t)
    x = node(t, "x")
    assert not line.exists(x)  # (made by a step of the run)
    steps = 0
    while line.step():
        steps += 1
    assert steps == len(t) and line.at_end and line.exists(x)
    assert close(elements(t.values.value_at(x, True, len(t), line.grad[x])),
                 [3 * v * v for v in XS[twins.kind]])
    while line.back():
        steps -= 1
    assert steps == 0 and line.at_start and not line.exists(x)


def test_the_cube_backward_step_is_explained(twins):
    t = twins.trace
    x = node(t, "x")
    (index,) = [i for i in range(len(t)) if t.kind(i) is EventKind.BACKWARD
                and x in t.children(t.event_node(i))]
    line = Timeline(t)
    line.seek(index + 1)
    e = explain(t, line.data, line.grad, index)
    assert e.kind == "backward" and e.node == t.event_node(index)
    (into_x,) = [c for c in e.contributions if c.target == x]
    assert into_x.line == twins.right_line  # the line that wrote it
    assert close(elements(into_x.after), [3 * v * v for v in XS[twins.kind]])


def test_the_doctor_finds_the_planted_bug_at_its_line_and_passes_the_twin(twins):
    wrong = diagnose(twins.wrong, max_nodes=10 * twins.links)
    assert wrong.findings, wrong.notes
    first = wrong.findings[0]
    assert (Path(first.file).name, first.line) == (twins.wrong.name, twins.planted), first
    assert first.kind in ("wrong-derivative", "wrong-gradient")
    right = diagnose(twins.right, max_nodes=10 * twins.links)
    assert right.findings == []
    assert right.checked_calls > 0 or right.checked_nodes > 0  # it was checked, not skipped


def test_diff_of_the_twins_names_the_input_at_the_planted_line(capsys, twins):
    code = main(["diff", str(twins.wrong_saved), str(twins.saved), "--json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    d = json.loads(out)["difference"]
    assert d["a"]["label"] == "x" and d["a"]["field"] == "grad"
    assert d["a"]["place"].endswith(f"{twins.wrong.name}:{twins.planted}")
    assert d["b"]["place"].endswith(f"{twins.right.name}:{twins.right_line}")


@pytest.mark.parametrize("suffix", [".mgtrace", ".json"])
def test_save_and_reopen_keeps_the_engine_and_every_gradient(twins, tmp_path, suffix):
    t = twins.trace
    path = tmp_path / f"run{suffix}"
    if suffix == ".mgtrace":
        path.write_bytes(tracefile.dumpb(t))
    else:
        path.write_text(export.dumps(t))
    again = export.load(path)
    assert again.engine == t.engine == twins.kind
    assert (again.node_count, len(again)) == (t.node_count, len(t))
    for label in ("x", "c"):
        assert close(twins.final_grad(again, label), twins.final_grad(t, label))
