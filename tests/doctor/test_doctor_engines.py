"""The doctor on micrograd engines of other shapes: tuple and list inputs (`x * x` lists
x twice), `__slots__`, an explicit-stack sort, grads zeroed inside `backward()`, and
classes not called `Value` whose fields go by other names (`value`, `parents`,
`backward_fn`, `children`, ...) or that have no op field.

Each engine in `tests/data/engines/` is correct and must give no finding; its twin
`<name>_bug.py` is the same file with one planted bug (marked `# BUG`), which must be
found at that line. Expected numbers come from the ops' formulas worked out here and
from finite differences, never from the doctor's own output.
"""

from __future__ import annotations

import difflib
import importlib.util
import math
import sys
from pathlib import Path

import pytest

import mgtui
from mgtui.cli import main
from mgtui.doctor import diagnose

ENGINES = Path(__file__).resolve().parent.parent / "data" / "engines"

# engine -> (kind, node label, op) of the planted bug in its twin
TWINS = {
    "tuple_prev": ("wrong-derivative", "o", "tanh"),
    "list_prev": ("wrong-derivative", "loss", "**2"),
    "slots_value": ("wrong-derivative", None, "*"),
    "stack_sort": ("wrong-derivative", "e", "exp"),
    "zero_in_backward": ("overwrite", "err", "+"),
    # classes not called Value, fields under other names (`mgtui.recording.shapes`)
    "scalar_no_op": ("wrong-derivative", "s", "sin"),  # no `_op`: named by its method
    "node_value_parents": ("overwrite", "loss", "+"),  # value / parents / backward_fn
    "slots_renamed": ("wrong-derivative", "loss", "**2"),  # slots: val / inputs / grad_fn
    "var_children": ("wrong-derivative", "h", "tanh"),  # a `children` list
    "children_tuple": ("topo-order", None, "*"),  # a `_children` tuple, a stack sort
}


def line_of(path: Path, text: str) -> int:
    (n,) = [i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s]
    return n


def engine_module(name: str, monkeypatch):
    """An engine file imported as a module (its program runs only as a script), kept in
    `sys.modules` for the test, where the in-process recorder looks for Value classes."""
    spec = importlib.util.spec_from_file_location(f"mgtui_test_engine_{name}",
                                                  ENGINES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_each_twin_is_its_engine_with_one_planted_bug():
    on_disk = {p.stem for p in ENGINES.glob("*.py")}
    assert {*TWINS, *(f"{n}_bug" for n in TWINS)} <= on_disk
    for name in TWINS:
        clean = (ENGINES / f"{name}.py").read_text().splitlines()
        twin = (ENGINES / f"{name}_bug.py").read_text().splitlines()
        changed = [line for line in difflib.unified_diff(clean, twin, lineterm="", n=0)
                   if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        # the docstring's title and the one line of the bug, nothing else
        assert len(changed) == 4, (name, changed)
        assert sum("# BUG" in line for line in changed if line.startswith("+")) == 1


@pytest.mark.parametrize("name", sorted(TWINS))
def test_correct_engine_gives_no_finding(name, capsys):
    assert main([str(ENGINES / f"{name}.py"), "--check"]) == 0
    out = capsys.readouterr().out
    assert "no problems found." in out
    assert "numerically, backward pass" in out  # the numerical check did run


@pytest.mark.parametrize("name", sorted(TWINS))
def test_planted_bug_is_found_at_its_line(name):
    kind, label, op = TWINS[name]
    path = ENGINES / f"{name}_bug.py"
    found = mgtui.check(path)
    assert [(f.kind, f.op) for f in found] == [(kind, op)], repr(found)
    (f,) = found
    assert Path(f.file).resolve() == path.resolve()
    assert f.line == line_of(path, "# BUG") and "# BUG" in f.text
    if label is not None:
        assert f.label == label


def test_tanh_twin_numbers_come_from_the_formula():
    (f,) = diagnose(ENGINES / "tuple_prev_bug.py").findings
    # n = x*x*w + (x + x) + x*x*x at x = 0.5, w = -1.5; n feeds only o = tanh(n)
    n = 0.5 * 0.5 * -1.5 + (0.5 + 0.5) + 0.5 ** 3
    assert f.numerical == pytest.approx(1 - math.tanh(n) ** 2, rel=1e-5)
    assert f.recorded == pytest.approx(1 - math.tanh(n), rel=1e-9)  # the bug's (1 - t)


def test_a_left_out_node_is_found_beside_a_repeated_input():
    """The sort takes `q = y + z` for `sq = x * x` (equal values) and leaves it out: only
    the root's directional derivative shows it, which the false alarm on `x * x` once
    switched off for the pass."""
    path = ENGINES / "tuple_prev_topo_bug.py"
    found = mgtui.check(path)
    assert [(f.kind, f.label) for f in found] == [("topo-order", "q")], repr(found)
    assert found[0].line == line_of(path, "topo.append(v)")
    assert "never ran" in found[0].message


# -- in this process: mgtui.check(function) ------------------------------------------------

def repeats(Value, power: bool = False):
    """x * x, x + x and x * x * x, a product of two different nodes, and `power`: x ** 3."""
    x = Value(0.75)
    y = Value(-2.0)
    loss = x * x + (x + x) * y + x * x * x * y
    if power:
        loss = loss + x ** 3
    loss.backward()
    return x, y


@pytest.mark.parametrize("name, power", [("tuple_prev", False), ("list_prev", True),
                                         ("slots_value", False), ("stack_sort", False)])
def test_repeated_inputs_are_no_false_alarm_in_process(name, power, monkeypatch):
    engine = engine_module(name, monkeypatch)
    assert not mgtui.check(lambda: repeats(engine.Value, power))
    # and the engine's own grads are the formula's: d/dx (x² + 2xy + x³y [+ x³])
    x, y = repeats(engine.Value, power)
    assert x.grad == pytest.approx(2 * 0.75 + 2 * -2.0 + 3 * 0.75 ** 2 * -2.0
                                   + (3 * 0.75 ** 2 if power else 0.0))


def test_a_real_bug_beside_repeated_inputs_is_found_in_process(monkeypatch):
    engine = engine_module("list_prev_bug", monkeypatch)
    found = mgtui.check(lambda: repeats(engine.Value, power=True))
    assert [(f.kind, f.op) for f in found] == [("wrong-derivative", "**3")], repr(found)
    assert found[0].line == line_of(ENGINES / "list_prev_bug.py", "# BUG")
    # d(x**3)/dx at 0.75, where x**3 feeds the sum directly: 3 x² = 1.6875
    assert found[0].local == pytest.approx(3 * 0.75 ** 2, rel=1e-5)


def test_pypi_micrograd_set_inputs_repeated_are_no_false_alarm():
    from micrograd.engine import Value

    assert not mgtui.check(lambda: repeats(Value, power=True))


def test_the_step_of_x_times_x_explains_both_uses():
    from mgtui.trace.engines import explain
    from mgtui.recording.recorder import record
    from mgtui.session.timeline import Timeline

    trace = record(ENGINES / "tuple_prev.py")
    (sq,) = trace.find("sq")
    assert trace.children(sq) == (0, 0)  # x twice: the tuple keeps the repeat
    (call,) = [i for i in range(len(trace))
               if trace.kind(i) == "backward" and trace.event_node(i) == sq]
    timeline = Timeline(trace)
    timeline.seek(call + 1)
    ex = explain(trace, timeline.data, timeline.grad, call)
    assert ex.local.startswith("∂sq/∂x = x + x = 2 × x (x is both inputs")
    assert [c.label for c in ex.contributions] == ["x", "x"]
    assert not any(c.mismatch for c in ex.contributions)


# -- a node in the order twice -------------------------------------------------------------

def test_a_backward_run_twice_in_one_pass_is_its_own_finding(capsys):
    path = ENGINES / "stack_sort_twice_bug.py"
    found = mgtui.check(path)
    assert [(f.kind, f.label, f.op) for f in found] == [("repeated-backward", "f", "*")]
    (f,) = found
    assert f.line == line_of(path, "# BUG") and "topo.append(v)" in f.text
    t = found.report.trace
    calls = [i for i in range(len(t)) if t.kind(i) == "backward" and t.event_node(i) == f.node]
    assert len(calls) == 2 and f.step == calls[1]  # the app jumps to the second run
    assert f"ran twice in backward pass 1 (steps {calls[0] + 1} and {calls[1] + 1})" in f.message
    assert main([str(path), "--check"]) == 1
    out = capsys.readouterr().out
    assert "repeated-backward: a _backward run more than once in one pass" in out
    assert "wrong-gradient" not in out  # the pass is explained: no second finding


def diamond(Value, calls: list[int] | None = None):
    """n = a * b, used by the root, by m and by k = n * b, where m = n * k: the faulty
    sort pushes n once for each of them before it is done, and appends it each time.
    `calls`: count the runs of n's `_backward` there."""
    a, b = Value(0.5), Value(-1.5)
    n = a * b
    if calls is not None:
        inner = n._backward
        def counted():
            calls.append(1)
            inner()
        n._backward = counted
    root = n + n * (n * b)
    root.backward()
    return n


def test_the_count_of_runs_is_named_in_process(monkeypatch):
    engine = engine_module("stack_sort_twice_bug", monkeypatch)
    found = mgtui.check(lambda: diamond(engine.Value))
    kinds = [f.kind for f in found]
    assert kinds == ["repeated-backward"], repr(found)
    counted: list[int] = []
    diamond(engine.Value, counted)  # the same graph, run plainly
    assert len(counted) == 3 and "ran 3 times in backward pass 1" in found[0].message
    # the correct sort runs each `_backward` once, and the doctor finds nothing
    clean = engine_module("stack_sort", monkeypatch)
    once: list[int] = []
    diamond(clean.Value, once)
    assert once == [1] and not mgtui.check(lambda: diamond(clean.Value))


def test_two_backward_calls_of_one_loss_are_not_a_repeated_backward(tmp_path):
    """`L.backward()` twice seeds L again before its second pass over the graph: that is
    an accumulation (a zero_grad question), not a node twice in one order."""
    path = tmp_path / "twice.py"
    path.write_text("from engine import Value\n"
                    "a = Value(2.0); b = Value(-3.0)\n"
                    "L = a * b + a\n"
                    "L.backward()\n"
                    "L.backward()\n")
    assert "repeated-backward" not in [f.kind for f in diagnose(path).findings]
