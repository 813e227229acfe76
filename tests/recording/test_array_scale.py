"""Array runs past one pack of the store (16,384 nodes, `PACK_EVERY`), several chunks:
recorded in this process and in the runner's child, saved in both formats and opened
again, `--print`ed, with gradients checked against numpy's own computation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mgtui.recording import store
from mgtui.recording.recorder import record
from mgtui.run.runner import Run, RunSpec
from mgtui.trace import chunks as trace_chunks
from mgtui.trace import binary, export, table

ROOT = Path(__file__).resolve().parent.parent.parent
TERMS = 7000  # 5 nodes a term: 35,002 array nodes, past the store's first pack
MANY = f'''
import numpy as np
from engine.tensor import Tensor

rng = np.random.default_rng(7)
A = rng.normal(size=({TERMS}, 4))
w = Tensor(rng.normal(size=4), label='w')
loss = Tensor(0.0, label='zero')
for k in range({TERMS}):
    loss = loss + (w * Tensor(A[k])).tanh().sum()
loss.label = 'loss'
loss.backward()
'''


def expected_grad() -> np.ndarray:
    """d loss / d w, by numpy alone: the sum over terms of a_k (1 - tanh(w a_k)²)."""
    rng = np.random.default_rng(7)
    a = rng.normal(size=(TERMS, 4))
    w = rng.normal(size=4)
    return (a * (1 - np.tanh(w * a) ** 2)).sum(axis=0)


def finite_difference() -> np.ndarray:
    rng = np.random.default_rng(7)
    a = rng.normal(size=(TERMS, 4))
    w = rng.normal(size=4)
    h, out = 1e-6, []
    for i in range(4):
        e = np.zeros(4)
        e[i] = h
        out.append((np.tanh((w + e) * a).sum() - np.tanh((w - e) * a).sum()) / (2 * h))
    return np.array(out)


def check(trace) -> None:
    assert trace.node_count == 5 * TERMS + 2 > 16384
    (w,) = trace.find("w")
    grad = trace.values.final_value(w, True)
    assert grad.shape == (4,)
    assert list(grad.values) == pytest.approx(expected_grad().tolist(), rel=1e-12)
    assert list(grad.values) == pytest.approx(finite_difference().tolist(), rel=1e-6)
    loss = trace.node_count - 1  # (the last made; `find` gives every `loss` named so)
    assert "loss" in trace.label(loss)
    assert trace.values.final_value(loss, True).values[0] == 1.0


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("many") / "many.py"
    path.write_text(MANY)
    return path


def test_numpy_is_the_reference():
    assert expected_grad() == pytest.approx(finite_difference(), rel=1e-6)


def test_a_run_of_several_packs_records_in_this_process(scenario):
    t = record(scenario)
    assert t.node_count > 2 * store.PACK_EVERY
    check(t)


def test_a_run_of_several_packs_streams_saves_and_opens(scenario, tmp_path, monkeypatch):
    trace = Run(RunSpec(str(scenario))).start().wait().trace
    check(trace)
    # saved arrays are cut into records a reader takes (a file's A records used to be one,
    # past what a record may hold): here with small bounds, to see several
    monkeypatch.setattr(trace_chunks, "CHUNK_ELEMENTS", 1 << 15)
    monkeypatch.setattr(table, "MAX_RECORD", 1 << 22)
    data = binary.dumpb(trace)
    tags = [tag for tag, _ in binary.records(__import__("io").BytesIO(data))]
    assert tags.count(table.ARRAYS) > 2
    path = tmp_path / "many.mgtrace"
    path.write_bytes(data)
    as_json = tmp_path / "many.json"
    as_json.write_text(export.dumps(trace))
    for saved in (path, as_json):
        back = export.load(saved)
        check(back)
        assert back.arrays.unrecorded == trace.arrays.unrecorded == {}


def test_the_cli_saves_and_prints_a_run_of_several_packs(scenario, tmp_path):
    saved = tmp_path / "cli.mgtrace"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "mgtui.cli", str(scenario), "--print", "--save",
                          str(saved)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    printed = subprocess.run([sys.executable, "-m", "mgtui.cli", str(saved), "--print"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert printed.returncode == 0, printed.stderr[-2000:]
    assert "loss" in printed.stdout and printed.stdout == run.stdout
    check(binary.load(saved))
