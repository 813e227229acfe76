"""A bundled lesson that needs an extra says how to install it (issue 36, point 8): on a
plain install `mgtui tensor_neuron` said only `No module named 'numpy'`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def without_numpy(tmp_path):
    """An environment where `import numpy` fails as it does where numpy is not installed
    (a `numpy` module first on the path that raises what the import system raises)."""
    (tmp_path / "numpy.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}


@pytest.mark.parametrize("how", [["--print"], ["--check"]])
def test_a_tensor_lesson_without_numpy_says_how_to_install_it(without_numpy, how):
    done = subprocess.run([sys.executable, "-m", "mgtui.cli", "tensor_neuron", *how],
                          capture_output=True, text=True, cwd=ROOT, env=without_numpy,
                          timeout=120)
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0
    assert "uses numpy, which is not installed here" in said
    assert "pip install 'mgtui[tensor]'" in said
    assert "Traceback" not in said


def test_a_module_no_extra_installs_is_said_as_python_said_it(tmp_path):
    (tmp_path / "s.py").write_text('"""Needs a module nobody has"""\nimport no_such_module_here\n')
    done = subprocess.run([sys.executable, "-m", "mgtui.cli", str(tmp_path / "s.py"), "--print"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 1
    assert "No module named 'no_such_module_here'" in done.stderr
    assert "pip install" not in done.stderr
