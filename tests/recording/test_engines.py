"""The engine is a fact (issue 32): the recorder writes which engine made a trace, both
file formats carry it, files saved before it was written still open (inferred once, as
they load), and code outside an engine asks the engine. The behaviours over every
engine are `test_engine_behaviours.py`.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest

from mgtui.recording import torch_watch
from mgtui.recording.inprocess import record_call
from mgtui.recording.recorder import Recorder
from mgtui.recording.scenario import load_scenario
from mgtui.run.runner import Run, RunSpec
from mgtui.trace import TraceFormatError
from mgtui.trace import binary as tracefile
from mgtui.trace import export
from mgtui.trace.engine_kind import KINDS

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "mgtui"
SCENARIOS = {"scalar": "scenarios/neuron.py", "array": "scenarios/tensor_neuron.py",
             "torch": "scenarios/torch_neuron.py"}
V2_CHAIN = Path(__file__).parent.parent / "data" / "chain-v2.mgtrace"  # written by mgtui c1afd79


@pytest.fixture(scope="module")
def traces() -> dict:
    return {kind: Run(RunSpec(str(ROOT / path))).run().trace for kind, path in SCENARIOS.items()}


def test_the_recorder_writes_the_engine_of_each_run(traces):
    assert {kind: t.engine for kind, t in traces.items()} == {k: k for k in KINDS}


def test_both_file_formats_say_the_engine(traces, tmp_path):
    for kind, t in traces.items():
        binary = tmp_path / f"{kind}.mgtrace"
        binary.write_bytes(tracefile.dumpb(t))
        assert tracefile.header_of(binary)["engine"] == kind  # (in the header record)
        doc = json.loads(export.dumps(t))
        assert doc["engine"] == kind
        assert export.load(binary).engine == export.from_json(doc).engine == kind


def _as_older(doc: dict) -> dict:
    """A JSON document as an mgtui before issue 32 wrote it: no "engine", and the torch
    adapter's steps in the file it called "<torch>" then."""
    del doc["engine"]
    for c in doc.get("closures", ()):
        if c["filename"].startswith("<torch"):
            c["filename"] = "<torch>"
    return doc


def test_files_that_do_not_say_have_the_engine_inferred_as_they_load(traces):
    assert export.load(V2_CHAIN).engine == "scalar"  # (a version 2 file)
    for kind, t in traces.items():
        old = _as_older(json.loads(export.dumps(t)))
        assert "engine" not in old
        assert export.from_json(old).engine == kind


def test_an_engine_mgtui_does_not_know_is_refused_by_name(traces):
    doc = json.loads(export.dumps(traces["scalar"]))
    doc["engine"] = "jax"
    with pytest.raises(TraceFormatError, match="an engine mgtui does not know"):
        export.from_json(doc)


def test_a_micrograd_function_recorded_beside_torch_is_the_scalar_engines():
    """In-process, torch is loaded already and its probe is on: a run it recorded no
    tensor of is not torch's (the doctor would check it as torch's)."""
    import torch  # noqa: F401

    def run():
        from engine.value import Value

        x = Value(2.0)
        (x * x).backward()

    assert "torch" in sys.modules
    assert record_call(run).engine == "scalar"


def test_the_torch_probe_is_one_of_the_recorders_probes_and_its_hook_a_field():
    rec = Recorder(load_scenario(ROOT / SCENARIOS["torch"]), on_function=print)
    assert rec.torch in rec.probes and rec.hooks.on_function is print
    assert not hasattr(torch_watch, "function_check")  # (no module global)


def test_the_doctors_entries_ask_the_engines_and_name_none():
    """`diagnose`, `diagnose_call` and `diagnose_recorded` end in `examine()`, which asks
    the trace's engine (`doctor/engines.py`), and the watches the engines put on a
    recording come from there too: the entries import no engine's own module."""
    tree = ast.parse((PACKAGE / "doctor" / "__init__.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
    engines_own = {"mgtui.doctor.torch_functions", "mgtui.doctor.array_check",
                   "mgtui.doctor.array_runs", "mgtui.doctor.arrays"}
    assert "mgtui.doctor.engines.doctor_of" in imported  # (the measure sees imports)
    assert imported & engines_own == set()


def test_no_sentinel_and_array_checks_only_in_the_array_engines_modules():
    """The engine is asked, not guessed: no `"<torch>"` string in the package, and the
    checks for an array value only in the array engine's own modules."""
    array_engine = {  # (docs/engines.md: where each engine's code lives)
        "recording/array_values.py", "trace/arrays.py", "trace/array_text.py",
        "trace/explain_arrays.py", "trace/export_arrays.py", "doctor/arrays.py",
        "doctor/array_check.py", "doctor/array_calls.py", "doctor/array_elements.py",
        "doctor/array_runs.py", "diff/array_values.py"}
    sentinel, checks = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        text = path.read_text()
        sentinel += [where] if '"<torch>"' in text else []
        if where not in array_engine and re.search(
                r"isinstance\([^)]*ArrayValue|\bis_array\(", text):
            checks.append(where)
    assert (sentinel, checks) == ([], [])
