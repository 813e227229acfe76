"""The example of `mgtui.check` in a user's test suite (examples/test_my_op.py) passes,
under coverage too, and fails with the op's line when its derivative is broken."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "test_my_op.py"


def pytest_run(path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-p",
                           "no:cacheprovider", "-q", str(path), *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)


def test_the_example_passes():
    proc = pytest_run(EXAMPLE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout


def test_the_example_passes_under_coverage(tmp_path):
    pytest.importorskip("pytest_cov")
    config = tmp_path / ".coveragerc"
    config.write_text("[run]\ndata_file = " + str(tmp_path / ".coverage") + "\n")
    proc = pytest_run(EXAMPLE, "--cov=mgtui", "--cov-report=term", f"--cov-config={config}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout
    assert "mgtui/recording/inprocess.py" in proc.stdout  # coverage did trace the recording


def test_a_broken_derivative_fails_the_example_at_its_line(tmp_path):
    broken = tmp_path / "test_my_op.py"
    text = EXAMPLE.read_text(encoding="utf-8")
    assert "x.grad += s * (1 - s) * out.grad" in text
    broken.write_text(text.replace("x.grad += s * (1 - s) * out.grad",
                                   "x.grad += s * out.grad"), encoding="utf-8")
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "x.grad += s *" in t)
    proc = pytest_run(broken)
    assert proc.returncode == 1
    assert "1 failed, 2 passed" in proc.stdout
    assert f"wrong-derivative at test_my_op.py:{line}" in proc.stdout


def test_record_and_check_under_pdb(tmp_path):
    """pdb steps through code with sys.settrace, as every Python debugger does."""
    script = tmp_path / "debug_me.py"
    script.write_text(
        "import sys\n"
        "import mgtui\n"
        "from test_my_op import train_step, neuron, Value\n"
        "assert sys.gettrace() is not None, 'not under the debugger'\n"
        "with mgtui.record() as rec:\n"
        "    y = neuron(Value(-0.5), Value(0.25))\n"
        "    y.backward()\n"
        "print('RECORDED', rec.trace.node_count, len(rec.trace))\n"
        "print('CHECKED', len(mgtui.check(train_step)), len(mgtui.check(rec)))\n",
        encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(EXAMPLE.parent)]))
    # a breakpoint that never stops keeps pdb tracing after `continue`
    proc = subprocess.run([sys.executable, "-m", "pdb", "-c", "break 9, 0", "-c", "continue",
                           str(script)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
                          stdin=subprocess.DEVNULL)
    # 8 nodes (w1, w2, x1, x2, two products, their sum, the sigmoid); 17 steps: 8 made,
    # the seed, and 8 `_backward` calls
    assert "RECORDED 8 17" in proc.stdout, proc.stdout + proc.stderr
    assert "CHECKED 0 0" in proc.stdout, proc.stdout + proc.stderr
