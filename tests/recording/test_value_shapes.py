"""Every micrograd-style shape is recorded, and a run mgtui did not see is never clean
(issue 19, items 1 and 2).

The Value class is found by what its `__init__` stores (`mgtui.recording.shapes`): a number, a
grad, its inputs and a backward callable, under any of the names micrograd forks give
them, `_op` optional. Where the stores cannot tell, the user names the fields. A run
that records no node, or makes nodes of a class that looks like an autograd value but
was not recorded, is refused with one message (exit 2; `NotAGraph` in code), and a
report whose gradients were not checked numerically says so.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mgtui
from mgtui.cli import main
from mgtui.errors import ScenarioLoadError
from mgtui.recording.recorder import record
from mgtui.run.runner import Run, RunSpec
from mgtui.recording.shapes import (
    MICROGRAD,
    FieldMap,
    FieldsOptionError,
    NotAGraph,
    ShapeFinder,
    parse_fields,
    project_fields,
)

ROOT = Path(__file__).resolve().parent.parent.parent
ENGINES = ROOT / "tests" / "data" / "engines"


def engine_module(name: str, monkeypatch):
    spec = importlib.util.spec_from_file_location(f"mgtui_test_shape_{name}",
                                                  ENGINES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


# -- the one detector ------------------------------------------------------------------------

SHAPES = {  # engine file, class -> the fields its __init__ stores
    ("tuple_prev", "Value"): MICROGRAD,
    ("scalar_no_op", "Scalar"): FieldMap("data", "grad", "_prev", "_backward", None, None),
    ("node_value_parents", "Node"): FieldMap("value", "grad", "parents", "backward_fn", "op",
                                             None),
    ("slots_renamed", "Param"): FieldMap("val", "grad", "inputs", "grad_fn", None, "name"),
    ("var_children", "Var"): FieldMap("data", "grad", "children", "_backward_fn", "op", None),
    ("children_tuple", "Value"): FieldMap("data", "grad", "_children", "_backward", "_op",
                                          "label"),
}


@pytest.mark.parametrize("name, cls", sorted(SHAPES))
def test_the_detector_reads_the_fields_each_class_stores(name, cls, monkeypatch):
    found = ShapeFinder().fields(getattr(engine_module(name, monkeypatch), cls))
    assert found == SHAPES[name, cls]
    assert found.renamed == (found[:4] != MICROGRAD[:4] or found.label not in ("label", None))


def test_micrograd_and_the_engine_are_micrograd_named_and_their_modules_are_not_values():
    from micrograd.engine import Value as PypiValue
    from micrograd.nn import MLP, Neuron

    from engine import Value
    from engine.nn import Layer

    finder = ShapeFinder()
    assert finder.fields(Value) == MICROGRAD and not finder.fields(Value).renamed
    assert finder.fields(PypiValue) == MICROGRAD._replace(label=None)  # (it has no label)
    for cls in (MLP, Neuron, Layer, dict, Path):
        assert finder.fields(cls) is None and finder.why_not(cls) is None


UNDECIDED = '''
class Node:
    """A node that keeps both its inputs (parents) and its users (children)."""

    def __init__(self, value, parents=()):
        self.value = value
        self.grad = 0.0
        self.parents = tuple(parents)
        self.children = []
        for p in self.parents:
            p.children.append(self)
        self.backward_fn = None

    def __mul__(self, other):
        out = Node(self.value * other.value, (self, other))
        def backward_fn():
            self.grad += other.value * out.grad
            other.grad += self.value * out.grad
        out.backward_fn = backward_fn
        return out

    def backward(self):
        order, seen = [], set()
        def visit(v):
            if v not in seen:
                seen.add(v)
                for p in v.parents:
                    visit(p)
                order.append(v)
        visit(self)
        self.grad = 1.0
        for v in reversed(order):
            if v.backward_fn:
                v.backward_fn()
'''


def undecided_class():
    namespace: dict = {}
    exec(compile(UNDECIDED, "<undecided>", "exec"), namespace)
    return namespace["Node"]


def test_where_the_stores_cannot_tell_the_detector_says_why_and_a_mapping_decides():
    Node = undecided_class()
    assert ShapeFinder().fields(Node) is None
    assert ShapeFinder().why_not(Node) == "inputs could be any of children, parents"
    mapped = ShapeFinder({"inputs": "parents"}).fields(Node)
    assert mapped == FieldMap("value", "grad", "parents", "backward_fn", None, None)
    # a mapping naming a field the class does not store leaves it undecided
    assert ShapeFinder({"inputs": "nodes"}).fields(Node) is None


def test_a_backward_under_an_unknown_name_is_a_near_miss_until_it_is_named():
    namespace: dict = {}
    exec("class Unit:\n"
         "    def __init__(self, data, _children=()):\n"
         "        self.data = data; self.grad = 0.0\n"
         "        self._prev = set(_children); self.propagate = lambda: None\n", namespace)
    Unit = namespace["Unit"]
    assert ShapeFinder().why_not(Unit) == "no field for backward"
    assert ShapeFinder({"backward": "propagate"}).fields(Unit).backward == "propagate"


def test_the_fields_option_and_the_project_table_are_checked(tmp_path):
    assert parse_fields("data=value, inputs=parents") == {"data": "value", "inputs": "parents"}
    with pytest.raises(FieldsOptionError, match="'weights' is not a role"):
        parse_fields("weights=w")
    with pytest.raises(FieldsOptionError, match="role=attribute pairs"):
        parse_fields("value")
    deep = tmp_path / "project" / "src" / "pkg"
    deep.mkdir(parents=True)
    assert project_fields(deep) == {}
    (tmp_path / "project" / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.mgtui]\nfields = {data = "value", inputs = "parents"}\n')
    assert project_fields(deep) == {"data": "value", "inputs": "parents"}
    (tmp_path / "project" / "pyproject.toml").write_text(
        '[tool.mgtui]\nfields = {data = "not a name"}\n')
    with pytest.raises(FieldsOptionError, match="must be an attribute name"):
        project_fields(deep)


# -- the op of a class with no op field ------------------------------------------------------


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "hooks"])
def test_a_class_without_an_op_field_has_each_op_named_by_its_method(inline):
    trace = record(ENGINES / "scalar_no_op.py", inline=inline)
    ops = {trace.op(n) for n in range(trace.node_count)}
    assert ops == {"", "*", "+", "sin"}
    assert all(trace.op(n) == "" for n in range(trace.node_count) if trace.is_leaf(n))
    (s,) = [n for n in range(trace.node_count) if trace.label(n) == "s"][:1]
    assert trace.op(s) == "sin"


def test_a_power_is_named_with_its_exponent():
    trace = record(ENGINES / "slots_renamed.py")
    assert {trace.op(n) for n in range(trace.node_count)} == {"", "*", "+", "**3", "**2"}
    (w,) = trace.find("w")  # a label kept in `name`
    assert trace.is_leaf(w)


# -- a renamed engine records as the engine does ----------------------------------------------

RENAMES = [(r"\.data\b", ".value"), (r"\bself\.data\b", "self.value"),
           (r"\b_prev\b", "parents"), (r"\b_backward\b", "backward_fn"),
           (r"\b_op\b", "op")]

LESSON = '''
from engine import Value

a = Value(2.0, label='a')
b = Value(-3.0, label='b')
c = Value(10.0, label='c')
for step in range(2):
    a.grad = 0.0
    b.grad = 0.0
    e = a * b; e.label = 'e'
    d = (e + c).tanh() * a - b / c
    n = (a * 0.25).exp() ** 2 + d.relu() + 2 * a
    L = n * n; L.label = 'L'
    L.backward()
    a.{data} -= 0.01 * a.grad
    b.{data} -= 0.01 * b.grad
'''


def renamed_engine(home: Path) -> None:
    """A copy of `engine/` whose Value keeps value, parents, backward_fn and op."""
    shutil.copytree(ROOT / "engine", home / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    value = home / "engine" / "value.py"
    text = value.read_text()
    for pattern, new in RENAMES:
        text = re.sub(pattern, new, text)
    assert "backward_fn" in text and ".value" in text and "parents" in text
    value.write_text(text)


def steps(trace) -> tuple:
    nodes = [(trace.label(n), trace.op(n), trace.children(n), trace.node_data[n],
              trace.line(n), trace.replay.final_grad[n]) for n in range(trace.node_count)]
    events = [(e.kind, e.node, e.before, e.after, e.line,
               [(w.node, w.field, w.before, w.after, w.line) for w in e.writes])
              for e in trace.events()]
    return nodes, events


def test_an_engine_with_renamed_fields_records_as_the_engine_does(tmp_path):
    (tmp_path / "plain").mkdir()
    plain = tmp_path / "plain" / "lesson.py"
    plain.write_text(LESSON.format(data="data"))
    renamed_engine(tmp_path / "renamed")
    renamed = tmp_path / "renamed" / "lesson.py"
    renamed.write_text(LESSON.format(data="value"))
    runs = [Run(RunSpec(str(p))).start() for p in (plain, renamed)]
    a, b = (run.wait().trace for run in runs)
    assert a.error is None and b.error is None, (a.error, b.error)
    assert a.node_count > 20 and len(b.closures) == len(a.closures)
    assert steps(b) == steps(a)
    assert [b.label(n) for n in b.find("L")] == ["L", "L"]  # one a step


# -- never silent --------------------------------------------------------------------------


def undecided_scenario(tmp_path: Path) -> Path:
    path = tmp_path / "undecided.py"
    path.write_text(UNDECIDED + "\nx = Node(1.5)\nw = Node(-2.0)\ny = x * w * x\ny.backward()\n")
    return path


@pytest.mark.parametrize("mode", [["--check"], ["--print"], ["--export", "json"]])
def test_a_run_whose_class_could_not_be_told_exits_2_and_says_why(tmp_path, mode, capsys):
    path = undecided_scenario(tmp_path)
    assert main([str(path), *mode]) == 2
    out, err = capsys.readouterr()
    assert "no problems" not in out
    assert "no node was recorded" in err
    assert "Node (undecided.py:" in err and "inputs could be any of children, parents" in err
    assert "inputs (_prev, _children, children, parents" in err  # the fields looked for
    assert "[tool.mgtui] fields" in err and "--fields" in err


def test_the_project_table_names_the_fields_and_the_run_is_checked(tmp_path, capsys):
    path = undecided_scenario(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.mgtui]\nfields = {inputs = "parents"}\n')
    assert main([str(path), "--check"]) == 0
    out = capsys.readouterr().out
    assert "4 nodes" in out and "no problems found." in out
    found = mgtui.check(path)
    assert not found and found.report.checked_passes
    # y = x * w * x: dy/dx = 2 x w, from the formula
    t = found.report.trace
    (x,) = t.find("x")
    assert t.replay.final_grad[x] == pytest.approx(2 * 1.5 * -2.0)


def test_the_fields_option_names_them_too(tmp_path, capsys):
    path = undecided_scenario(tmp_path)
    assert main([str(path), "--check", "--fields", "inputs=parents"]) == 0
    assert "no problems found." in capsys.readouterr().out
    assert main([str(path), "--print", "--fields", "inputs=parents,data=value"]) == 0
    assert main([str(path), "--fields", "inputs=parents"]) == 2  # the app: pyproject.toml
    assert "--fields goes with --check, --print or --export" in capsys.readouterr().err
    found = mgtui.check(path, fields={"inputs": "parents"})
    assert not found and found.report.checked_passes
    with pytest.raises(NotAGraph, match="inputs could be any of children, parents"):
        mgtui.check(path)  # the same error as in-process (and as mgtui.show)


def test_the_runner_tells_a_run_that_recorded_nothing_from_one_that_could_not_run():
    from mgtui.trace import table
    from mgtui.trace.decoder import RecordDecoder

    decoder = RecordDecoder()
    decoder.take("X", table.encode_not_run("x.py: no node", "", "not-a-graph")[9:])
    assert decoder.not_run == {"message": "x.py: no node", "detail": "", "kind": "not-a-graph"}
    assert issubclass(NotAGraph, ScenarioLoadError) and issubclass(NotAGraph, TypeError)


def test_a_scenario_that_makes_no_node_exits_2(write_scenario, capsys):
    path = write_scenario("plain", """
        class Point:
            def __init__(self, x):
                self.x = x
        total = sum(Point(k).x for k in range(3))
    """)
    assert main([str(path), "--print"]) == 2
    err = capsys.readouterr().err
    assert "no micrograd-style node was recorded" in err and "(Point)" in err
    with pytest.raises(ScenarioLoadError, match="no micrograd-style node was recorded"):
        mgtui.check(path)


def test_a_run_that_raised_before_any_node_keeps_its_error(write_scenario, capsys):
    path = write_scenario("raises", "raise ValueError('before anything')\n")
    assert main([str(path), "--print"]) == 1
    assert "ValueError at line 1: before anything" in capsys.readouterr().err


def test_a_near_miss_beside_recorded_values_is_refused_too(write_scenario, capsys):
    path = write_scenario("beside", """
        from engine import Value
        class Tape:
            def __init__(self, data, parents=()):
                self.data = data
                self.grad = 0.0
                self.parents = list(parents)
        a = Value(2.0) * Value(3.0)
        t = Tape(1.0, [Tape(2.0)])
        a.backward()
    """)
    assert main([str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert "only 3 nodes were recorded" in err
    assert "Tape (beside.py:3) stores data, grad, parents: no field for backward" in err


def test_check_and_show_raise_the_same_error_in_process():
    Node = undecided_class()

    def build():
        x, w = Node(1.5), Node(-2.0)
        y = x * w * x
        y.backward()
        return x

    with pytest.raises(NotAGraph) as checked:
        mgtui.check(build)
    message = str(checked.value)
    assert "Node (<undecided>:5) stores" in message
    assert "inputs could be any of children, parents" in message
    assert "backward (_backward, backward_fn" in message
    with pytest.raises(NotAGraph, match="inputs could be any of children, parents"):
        mgtui.show(Node(1.0))
    with mgtui.record() as rec:
        build()
    with pytest.raises(NotAGraph, match="inputs could be any of children, parents"):
        rec.check()
    with pytest.raises(NotAGraph, match="no micrograd-style node was recorded"):
        mgtui.check(lambda: None)
    # named, the same function is recorded and checked
    found = mgtui.check(build, fields={"inputs": "parents"})
    assert not found and found.report.checked_passes
    x = build()
    assert x.grad == pytest.approx(2 * 1.5 * -2.0)


def test_a_report_with_no_numerical_check_says_so(monkeypatch):
    engine = engine_module("tuple_prev", monkeypatch)

    def forward_only():
        x = engine.Value(0.5)
        return x * x

    found = mgtui.check(forward_only)  # (issue 33: never a clean bill for what was not checked)
    assert found.unchecked == "no backward pass was run, so no gradient was checked"
    (f,) = found
    assert f.kind == "unchecked" and "no backward pass was run" in f.message
    assert repr(found).startswith("Findings(unchecked at ") and "no backward pass was run" \
        in repr(found)
    assert "no problems found, but no backward pass was run" in str(found)
    with mgtui.record() as rec:
        y = engine.Value(0.5) * engine.Value(2.0)
        y.backward()
    found = rec.check()
    assert "but no backward pass was checked numerically" in repr(found)


def test_a_cli_report_with_no_backward_pass_says_so(write_scenario):
    path = write_scenario("forward", "from engine import Value\na = Value(2.0) * Value(3.0)\n")
    done = subprocess.run([sys.executable, "-m", "mgtui.cli", str(path), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 3  # not a clean bill (issue 33)
    assert "no problems found, but no backward pass was run" in done.stdout
    assert "not a clean bill" in done.stdout


async def test_the_app_shows_the_message_instead_of_an_empty_trace(tmp_path):
    from mgtui.tui.app import MgtuiApp

    path = undecided_scenario(tmp_path)
    app = MgtuiApp(path)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(1000):
            await pilot.pause(0.02)
            if not app.loading and app.screen is not app.debugger:
                break
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert type(app.screen).__name__ == "ErrorScreen"
        text = app.screen.text
        assert "no node was recorded" in text and "inputs could be any of" in text


# -- in this process: mgtui.check(function) on every shape -----------------------------------

GRAPHS = {  # engine -> a graph through the op its twin plants its bug in, and the bug's kind
    "tuple_prev": (lambda a, b: (a * b + a).tanh() * a, "wrong-derivative"),
    "scalar_no_op": (lambda a, b: (a * b + a).sin() * b, "wrong-derivative"),
    "node_value_parents": (lambda a, b: (a * b).exp() * a + b * a, "overwrite"),
    "slots_renamed": (lambda a, b: (a * b + a ** 3) ** 2, "wrong-derivative"),
    "var_children": (lambda a, b: (a * b + a).tanh() * a, "wrong-derivative"),
    "children_tuple": (lambda a, b: (a * b + a * a).relu() * b, "topo-order"),
}


def bug_line(name: str) -> int:
    lines = (ENGINES / f"{name}_bug.py").read_text().splitlines()
    (n,) = [k for k, s in enumerate(lines, 1) if "# BUG" in s]
    return n


@pytest.mark.parametrize("name, cls", sorted(SHAPES))
def test_every_shape_in_process_clean_and_with_its_bug(name, cls, monkeypatch):
    graph, kind = GRAPHS[name]

    def exercise(Value):
        def build():
            y = graph(Value(0.7), Value(-1.3))
            y.backward()
        return build

    clean = mgtui.check(exercise(getattr(engine_module(name, monkeypatch), cls)))
    assert not clean and clean.report.checked_passes, repr(clean)
    found = mgtui.check(exercise(getattr(engine_module(f"{name}_bug", monkeypatch), cls)))
    assert [(f.kind, f.line) for f in found] == [(kind, bug_line(name))], repr(found)


def test_show_copies_and_replays_a_graph_of_renamed_fields(monkeypatch):
    from mgtui.api import _trace_of

    Node = engine_module("node_value_parents", monkeypatch).Node
    a, b = Node(0.3), Node(-0.8)
    e = (a * b).exp()
    loss = e * a + e * b
    loss.backward()
    grads = (a.grad, b.grad)
    t = _trace_of(loss, sys._getframe(), None)
    assert (a.grad, b.grad) == grads and a.value == 0.3  # the user's nodes as they were
    (ta,), (tb,), (tl,) = t.find("a"), t.find("b"), t.find("loss")
    assert t.op(tl) == "+" and t.replay.final_grad[tl] == 1.0
    # d loss / d a = e b a' ... from the formula: loss = e (a + b), e = exp(a b)
    import math
    ev = math.exp(0.3 * -0.8)
    assert t.replay.final_grad[ta] == pytest.approx(ev * -0.8 * (0.3 - 0.8) + ev)
    assert t.replay.final_grad[tb] == pytest.approx(ev * 0.3 * (0.3 - 0.8) + ev)
