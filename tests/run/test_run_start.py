"""One place starts a recording (`mgtui.run.runner.start_run`, with `RunOptions`): the
command line, the app, the doctor and a comparison ask it, so every run's defaults (the
node and memory limits, the pyproject's fields, the app's UI first) are decided once."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from mgtui.defaults import DEFAULT_MAX_MEMORY, DEFAULT_MAX_NODES
from mgtui.doctor.jobs import rerun
from mgtui.run.runner import UI_FIRST, RunOptions, RunSpec, start_run

from tests.conftest import ROOT

PACKAGE = ROOT / "mgtui"
RUN_ROOM = PACKAGE / "run"


def _constructions(path: Path, names: set[str]) -> list[int]:
    """The lines of `path` that call one of `names` (by its bare name or as an attribute)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called in names:
                lines.append(node.lineno)
    return lines


def test_no_module_outside_the_run_room_builds_a_run_of_its_own():
    builders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if RUN_ROOM in path.parents:
            continue
        found = _constructions(path, {"Run", "RunSpec"})
        if found:
            builders[str(path.relative_to(ROOT))] = found
    assert builders == {}, f"runs built outside mgtui/run (use start_run): {builders}"


def test_a_run_asked_for_with_nothing_has_every_default():
    spec = RunOptions().spec("lesson.py")
    assert spec == RunSpec("lesson.py")
    assert (spec.seed, spec.max_nodes, spec.max_memory, spec.timeout) == (
        0, DEFAULT_MAX_NODES, DEFAULT_MAX_MEMORY, None)
    assert spec.fields is None  # the child reads `[tool.mgtui] fields` then
    assert spec.nice == 0 and spec.job is None and spec.job_args == {}


def test_the_apps_runs_put_its_ui_first_and_always_have_a_memory_limit():
    for given in (None, 0):
        spec = RunOptions.for_app(seed=3, max_nodes=50, max_memory=given,
                                  argv=["--lr", "0.5"]).spec("lesson.py")
        assert spec.nice == UI_FIRST and spec.max_memory == DEFAULT_MAX_MEMORY
        assert (spec.seed, spec.max_nodes, spec.argv) == (3, 50, ("--lr", "0.5"))
        assert spec.fields is None
    assert RunOptions.for_app(max_memory=1 << 30).spec("x.py").max_memory == 1 << 30


def test_a_job_travels_as_a_reference_the_child_can_import():
    spec = RunOptions().spec("lesson.py", job=rerun, job_args={"stop_after": 1})
    module, _, name = spec.job.partition(":")
    assert getattr(importlib.import_module(module), name) is rerun
    assert spec.job_args == {"stop_after": 1}
    assert RunSpec.from_json(spec.to_json()) == spec


def test_start_run_records_with_the_options_given(tmp_path):
    script = tmp_path / "scaled.py"
    script.write_text(
        "import sys\n"
        "from engine import Value\n"
        "print('argv:', sys.argv[1:])\n"
        "a = Value(2.0, label='a')\n"
        "b = a * float(sys.argv[2]); b.label = 'b'\n"
        "b.backward()\n", encoding="utf-8")
    result = start_run(script, RunOptions(argv=("--scale", "3"))).wait()
    assert result.finished and result.message == ""
    assert "argv: ['--scale', '3']" in result.trace.output
    assert sorted(result.trace.node(n).data for n in range(result.trace.node_count)) == [
        2.0, 3.0, 6.0]
