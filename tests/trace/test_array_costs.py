"""Values that cost what they are (issue 32 point 3, issue 34 point 7): a broadcast or
expanded view is summarised from its storage, never materialised, and says so; a big
array's summary is worked out in its own dtype; a big array changed in place after it
was recorded keeps the value it had when recorded."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mgtui.recording.recorder import record
from mgtui.run.runner import Run, RunSpec
from mgtui.trace import export
from mgtui.trace.array_numpy import from_numpy, snapshot, summarised
from mgtui.trace.arrays import WHOLE_LIMIT, brief, display


def test_a_broadcast_view_of_a_trillion_elements_is_summarised_from_its_storage():
    view = np.broadcast_to(np.arange(1000.0), (10**9, 1000))
    start = time.process_time()
    v = from_numpy(view)
    assert time.process_time() - start < 1.0
    assert v.shape == (10**9, 1000) and not v.whole and v.basis == 1000
    low, high, mean, norm, bad = v.summary
    # every row the same 0..999: the exact figures of all 10^12 elements
    assert (low, high, bad) == (0.0, 999.0, 0) and mean == 499.5
    assert norm == pytest.approx(math.sqrt(10**9 * sum(k * k for k in range(1000))))
    assert list(v.values) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert "broadcast view" in display(v) and "1,000 stored elements" in display(v)


def test_a_huge_array_is_summarised_from_a_sample_and_says_so():
    a = np.linspace(-1.0, 3.0, (1 << 24) + 3, dtype=np.float32)
    v = from_numpy(a)
    assert v.basis < 0 and "strided sample" in display(v)
    low, high, mean, norm, bad = v.summary
    assert (low, high, bad) == (-1.0, 3.0, 0)  # (min and max of every element)
    assert mean == pytest.approx(1.0, abs=1e-3)
    a[12345] = np.nan  # (a nan the sample steps over is still counted)
    assert from_numpy(a).summary[4] == 1


def test_a_big_float32_summary_is_worked_out_without_a_float64_copy():
    a = np.random.default_rng(3).normal(size=200_000).astype(np.float32)
    now = snapshot(a)  # (summarised as taken: `array_numpy.DEFER` is off)
    v = summarised(a, "float32", defer=True)
    assert v.raw is not None and v.raw.dtype == np.float32  # a raw copy, summarised later
    assert now.summary == v.summary
    low, high, mean, norm, bad = v.summary
    f = a.astype(np.float64)
    assert (low, high, bad) == (float(f.min()), float(f.max()), 0)
    assert mean == pytest.approx(float(f.mean()), abs=1e-6)
    assert norm == pytest.approx(float(np.linalg.norm(f)), rel=1e-6)
    assert v.raw is None and list(v.values) == f[:8].tolist()


BROADCAST = '''
import numpy as np
from engine.tensor import Tensor
t = Tensor(np.zeros(3), label='t')
t.data = np.broadcast_to(np.arange(3.0), (10**11, 3))   # 3e11 elements: 2.4 TB as float64
t.grad = np.broadcast_to(np.float32(2.0), (10**6, 10**6))
'''


# (the CLI's own peak is its VmHWM, not its ru_maxrss: a process keeps across exec the
# ru_maxrss of the one that started it, and a test worker may be gigabytes by then; its
# children's is RUSAGE_CHILDREN's, the recording child's among them)
PEAK = ("import resource, sys; from mgtui.cli import main; code = main(sys.argv[1:]); "
        "me = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]); "
        "print(max(me, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss), "
        "file=sys.stderr); sys.exit(code)")


def cli_peak(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    """`mgtui ARGS` in a fresh process: how it ended, and the peak resident memory (KB)
    of it and of the recording child it started."""
    env = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent.parent),
           "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-c", PEAK, *args], capture_output=True,
                         text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return run, int(run.stderr.split()[-1])


def test_recording_a_broadcast_view_takes_its_storage_only(tmp_path):
    path = tmp_path / "views.py"
    path.write_text(BROADCAST)
    saved = tmp_path / "v.mgtrace"
    _, peak = cli_peak(str(path), "--save", str(saved))
    assert peak < 500_000  # KB: the CLI and its recording child, never 2.4 TB
    trace = export.load(saved)
    (t,) = trace.find("t")
    data, grad = trace.values.final_value(t, False), trace.values.final_value(t, True)
    assert data.shape == (10**11, 3) and data.summary[:3] == (0.0, 2.0, 1.0)
    assert grad.shape == (10**6, 10**6) and grad.dtype == "float32"
    assert grad.summary[:4] == (2.0, 2.0, 2.0, 2.0 * 10**6)
    assert "broadcast view" in display(grad)
    again_json = tmp_path / "v.json"
    again_json.write_text(export.dumps(trace))
    for back in (export.load(saved), export.load(again_json)):
        again = back.values.final_value(t, True)
        assert again.basis == grad.basis == 1 and again.summary == grad.summary


IN_PLACE = f'''
import numpy as np
from engine.tensor import Tensor
n = {WHOLE_LIMIT * 4}
w = Tensor(np.ones(n, dtype=np.float32), label='w')
y = (w * w).sum(); y.label = 'y'
y.backward()
for k in range(3):            # changed in place, each after it was recorded
    w.data -= 0.5 * w.grad
    w.grad[:] = 0.0
    w.data *= 1.0
'''


def test_big_arrays_changed_in_place_keep_the_values_they_had(tmp_path):
    path = tmp_path / "in_place.py"
    path.write_text(IN_PLACE)
    for trace in (record(path), Run(RunSpec(str(path))).start().wait().trace):
        (w,) = trace.find("w")
        made = trace.values.created_value(w)
        assert not made.whole and made.summary[:3] == (1.0, 1.0, 1.0)
        # dy/dw = 2w = 2 at the backward; each update w -= 0.5 * grad: 1 -> 0 -> 0 ...
        grads = [trace.values.value_at(w, True, i + 1, math.nan) for i in range(len(trace))]
        seen = {brief(g) for g in grads if not isinstance(g, float)}
        assert any("μ 2" in s for s in seen), seen
        datas = [trace.values.value_at(w, False, i + 1, math.nan) for i in range(len(trace))]
        means = [d.summary[2] for d in datas if not isinstance(d, float)]
        assert means[0] == 1.0 and means[-1] == 0.0 and 1.0 in means and 0.0 in means


EXPAND = '''
import torch
x = torch.randn(20000, 1, requires_grad=True)
y = x.expand(20000, 20000)   # 4e8 elements of view; its grad an expanded view too
y.sum().backward()
'''


def test_a_torch_expand_view_costs_no_more_than_its_storage(tmp_path):
    """Recorded and printed (every step explained): the view and its gradient as their
    storage, and no rule worked out element by element over 4e8 of them (before: 9.8 GB
    in the child, then 15 GB in --print)."""
    pytest.importorskip("torch")
    path = tmp_path / "expand.py"
    path.write_text(EXPAND)
    run, peak = cli_peak(str(path), "--print")
    assert peak < 1_500_000  # KB, the CLI and the recording child
    assert "(20000, 20000) float32" in run.stdout and "broadcast view" in run.stdout
    assert "step    7" in run.stdout
