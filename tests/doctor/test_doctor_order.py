"""An order bug is found where the order is built, in whatever file (issue 19, item 5):
the recording notes the frames each `backward()` call's `_backward`s came from
(`Records.callers`), and the doctor reads the line that fills the walked list in the
innermost of them that walks one (`mgtui.doctor.order_lines`), in the user's package
(`myad/value.py`) as in the scenario.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

import mgtui
from mgtui.cli import main
from mgtui.doctor.order_lines import chain_at, order_line
from mgtui.recording.recorder import Recorder, load_scenario
from mgtui.trace import EventKind

ROOT = Path(__file__).resolve().parent.parent.parent
PROJECT = ROOT / "tests" / "data" / "myad_project"
ENGINES = ROOT / "tests" / "data" / "engines"
GOOD = "            order.append(v)\n"
BAD = "            order.insert(0, v)  # BUG: a node belongs after its inputs\n"


def project(tmp_path: Path, bug: bool) -> Path:
    """A copy of `myad_project` (its sort planted with the bug if `bug`): train.py."""
    home = tmp_path / ("bug" if bug else "clean")
    shutil.copytree(PROJECT, home, ignore=shutil.ignore_patterns("__pycache__"))
    if bug:
        value = home / "myad" / "value.py"
        text = value.read_text()
        assert text.count(GOOD) == 1, "myad/value.py changed: update this test"
        value.write_text(text.replace(GOOD, BAD))
    return home / "train.py"


def bug_line(train: Path) -> int:
    lines = (train.parent / "myad" / "value.py").read_text().splitlines()
    (n,) = [k for k, s in enumerate(lines, 1) if "# BUG" in s]
    return n


def test_a_sort_in_the_users_package_is_named_there(tmp_path, capsys):
    train = project(tmp_path, bug=True)
    assert main([str(train), "--check"]) == 1
    out = capsys.readouterr().out
    line = bug_line(train)
    assert f"myad/value.py:{line}: order.insert(0, v)" in out
    assert f"the order is built at value.py:{line}" in out
    assert "train.py:14" not in out  # not `loss.backward()` in the script
    (f,) = mgtui.check(train)
    assert f.kind == "topo-order"
    assert Path(f.file) == train.parent / "myad" / "value.py" and f.line == line


def test_the_package_sorted_right_has_no_finding(tmp_path, capsys):
    assert main([str(project(tmp_path, bug=False)), "--check"]) == 0
    assert "no problems found." in capsys.readouterr().out


@pytest.fixture
def forget_myad():
    """The `myad` package imported by a test is forgotten after it (another test's copy
    lives elsewhere)."""
    yield
    for name in [m for m in sys.modules if m == "myad" or m.startswith("myad.")]:
        del sys.modules[name]


def test_in_process_too(tmp_path, monkeypatch, forget_myad):
    train = project(tmp_path, bug=True)
    monkeypatch.syspath_prepend(str(train.parent))
    assert "myad" not in sys.modules
    from myad import Value, ops

    def step():
        w, b = Value(0.5), Value(-0.2)
        loss = ops.square_error(ops.sigmoid(w * 2.0 + b), 1.0)
        loss.backward()

    (f,) = mgtui.check(step)
    assert f.kind == "topo-order" and f.line == bug_line(train)
    assert Path(f.file).name == "value.py" and "order.insert(0, v)" in f.text
    with mgtui.record() as rec:
        step()
    assert [(g.kind, g.line) for g in rec.check()] == [("topo-order", bug_line(train))]


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "hooks"])
def test_the_recording_notes_where_each_backward_was_called_from(tmp_path, inline, forget_myad):
    train = project(tmp_path, bug=False)
    rec = Recorder(load_scenario(train), inline=inline)
    trace = rec.run()
    callers = rec.records.callers
    assert len(callers) == 1  # three `loss.backward()` from one line: one chain
    event, chain = callers[0]
    assert trace.kind(event) is EventKind.BACKWARD
    assert event == trace.events_of(EventKind.BACKWARD)[0]
    (inner, outer) = chain  # out to the first frame of the scenario's own
    value = (train.parent / "myad" / "value.py").read_text().splitlines()
    assert Path(inner[0]).name == "value.py" and inner[2] == "backward"
    assert value[inner[1] - 1].strip() == "v._backward()"
    assert Path(outer[0]) == train.resolve() and outer[2] == "<module>"
    assert train.read_text().splitlines()[outer[1] - 1].strip() == "loss.backward()"
    assert chain_at(callers, len(trace) - 1) == chain and chain_at(callers, event - 1) == ()


def test_a_sort_in_the_scenario_ends_the_chain_there():
    rec = Recorder(load_scenario(ENGINES / "stack_sort.py"))
    rec.run()
    ((_, chain),) = rec.records.callers
    assert [name for _, _, name in chain] == ["backward"]  # the scenario's own method


def test_a_chain_is_noted_once_for_a_loop_of_passes():
    rec = Recorder(load_scenario(ENGINES / "zero_in_backward.py"))
    trace = rec.run()
    passes = [p for p in trace.passes if p.kind == "backward"]
    assert len(passes) == 3 and len(rec.records.callers) == 1  # the same chain each time


def test_the_list_may_be_filled_by_another_function_of_the_module():
    source = '''
def build(v, topo, seen):
    if v not in seen:
        seen.add(v)
        for c in v._prev:
            build(c, topo, seen)
        topo.append(v)

class Value:
    def backward(self):
        topo = []
        build(self, topo, set())
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()
'''
    call = source.splitlines().index("            v._backward()") + 1
    assert order_line(source, call, by_name=False) == 7  # `topo.append(v)` in build
