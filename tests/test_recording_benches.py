"""The recording benchmarks still run: each once, in its quick mode (seconds, on a few
points, measuring nothing), so that a bench the code has moved away from fails here
rather than on the day someone needs its figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("bench, says", [
    ("record_overhead.py", "inlined recording: the run"),
    ("record_instructions.py", "every run ran"),
    ("inprocess_cost.py", "in mgtui.record() (with probe)"),
])
def test_the_bench_runs_in_its_quick_mode(bench, says):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / bench), "--quick"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert says in done.stdout
