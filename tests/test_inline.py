"""The inlined recording (`mgtui.inline`) against the hooks: the same records, exactly.

Every bundled scenario and every bug scenario is recorded both ways, and the raw records
(nodes, children, events, writes, late labels, closures) and the finished trace's JSON
must be equal. The hooks are the reference: the inlined path is an optimisation of them.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from mgtui.export import dumps
from mgtui.recorder import Recorder, closure_source, load_scenario, record

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.py")) + sorted(
    (ROOT / "scenarios" / "bugs").glob("*.py"))
SCENARIOS = [p for p in SCENARIOS if p.name != "__init__.py"]


def raw_records(path, **options) -> tuple:
    recorder = Recorder(load_scenario(path), **options)
    error, output = recorder.execute()
    closures = [closure_source(code, code in recorder.default_codes) for code in recorder.codes]
    labels = recorder.resolve_labels()
    recorder.slots_ids.release()
    plain = recorder.inliner is None
    return (list(recorder.nodes), list(recorder.kids), list(recorder.events),
            list(recorder.writes), dict(recorder.late_labels), closures, labels,
            None if error is None else (error.type, error.message, error.line), output), plain


def same(a, b) -> bool:
    """Equal, with nan equal to nan (a record of a non-finite value)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_inlined_records_equal_the_hooks_records(path):
    hooks, plain = raw_records(path, inline=False)
    inlined, not_plain = raw_records(path)
    assert plain and not not_plain
    names = ("nodes", "kids", "events", "writes", "late labels", "closures", "labels",
             "error", "output")
    for name, a, b in zip(names, hooks, inlined):
        assert same(a, b), name
    assert len(hooks[2]) > 0  # it recorded something


@pytest.mark.parametrize("name", ["chain.py", "neuron.py", "mlp.py"])
def test_the_exported_json_is_the_same_both_ways(name):
    path = ROOT / "scenarios" / name
    assert dumps(record(path)) == dumps(record(path, inline=False))
