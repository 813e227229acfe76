"""The example of `mgtui.check` in a user's test suite (examples/test_my_op.py) passes,
under coverage too, and fails with the op's line when its derivative is broken."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

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
    assert "mgtui/inprocess.py" in proc.stdout  # coverage did trace the recording


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
