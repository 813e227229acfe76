"""Every benchmark still runs: each once, in its quick mode (seconds, on small inputs,
measuring nothing), so that a bench the code has moved away from fails here rather than
on the day someone needs its figures. A bench without a quick mode fails too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
BENCH = ROOT / "bench"

# What each bench prints when it ran to the end (a line of its report).
SAYS = {
    "array_costs_side_by_side.py": "torch final grads bit for bit",
    "array_scale.py": "array/scalar: record",
    "big_chain.py": "| 20,0",
    "bytes_per_key.py": "80×24: first screen",
    "class_graph_cpu.py": "CPU per teacher step until every student is on it",
    "diff_time.py": "diff, MLP against its twin",
    "doctor_arrays.py": "tensor/scalar, best of",
    "doctor_time.py": "total, bundled bug scenarios",
    "exports.py": "--export html, phase by phase",
    "graph_layout.py": "neighbourhoods",
    "inprocess_cost.py": "in mgtui.record() (with probe)",
    "naming_overhead.py": "chain of 1,000 nodes",
    "record_instructions.py": "every run ran",
    "record_overhead.py": "inlined recording: the run",
    "recording_app.py": "time to first step",
    "runner_overhead.py": "runner, recorded",
    "scalars_side_by_side.py": "record",
    "serve_hostile.py": "the flood's session ended",
    "serve_load.py": "teacher's step until all",
    "serve_start.py": "first lesson screen",
    "step_latency.py": "first paint",
    "stop_latency.py": "ctrl+c, scenario ignores SIGINT",
    "tensor_instructions.py": "instructions of one step of tensor_mlp.py",
    "torch_child_heap.py": "recorded as the runner's child does",
    "torch_floor.py": "mgtui's recording",
    "torch_overhead.py": "the runner alone, launch to the whole trace",
    "torch_instructions.py": "instructions of one training step of torch_mlp.py",
    "torch_mnist.py": "a training step, CPU, medians",
    "trace_files.py": "load       json",
}
# Benches being reworked on other branches this round; each gets its quick mode there.
NOT_YET: set[str] = set()


def test_every_bench_is_listed():
    assert sorted(p.name for p in BENCH.glob("*.py")) == sorted(SAYS)


@pytest.mark.parametrize("bench", sorted(set(SAYS) - NOT_YET))
def test_the_bench_runs_in_its_quick_mode(bench):
    done = subprocess.run([sys.executable, str(BENCH / bench), "--quick"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert SAYS[bench] in done.stdout, done.stdout[-2000:]
