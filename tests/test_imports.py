"""The walls between the rooms, checked in the test run rather than promised.

The import contract lives in pyproject.toml (`[tool.importlinter]`): the headless core
imports no textual or rich and nothing from the command line or the app, the engine
knows nothing of mgtui, and the command line sits over the app over the widgets.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).with_name("lint-imports")
CORE = ("engine", "engine.nn", "mgtui.recorder", "mgtui.naming", "mgtui.runner", "mgtui.runner_child",
        "mgtui.trace", "mgtui.timeline", "mgtui.session", "mgtui.view", "mgtui.explain", "mgtui.doctor", "mgtui.export",
        "mgtui.tracefile", "mgtui.bundled", "mgtui.bindings", "mgtui.config", "mgtui.safe")


def lint(cwd: Path, *contracts: str) -> subprocess.CompletedProcess:
    args = [str(LINT), "--no-cache"] + [f"--contract={c}" for c in contracts]
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_import_contract_holds():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_contract_fails_when_the_core_imports_textual(tmp_path):
    """The contract is not a check that cannot fail: `import textual` in trace.py breaks it."""
    for name in ("mgtui", "engine"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    assert lint(tmp_path, "headless-core").returncode == 0
    trace_py = tmp_path / "mgtui" / "trace.py"
    trace_py.write_text(trace_py.read_text(encoding="utf-8") + "\nimport textual\n",
                        encoding="utf-8")
    result = lint(tmp_path, "headless-core")
    assert result.returncode != 0
    assert "mgtui.trace -> textual" in result.stdout


def test_the_core_runs_with_textual_and_rich_unimportable():
    """harlequin's hygiene test: each headless module imports, and a scenario records,
    in a process where importing textual or rich would fail."""
    code = (
        "import sys\n"
        "sys.modules['textual'] = None; sys.modules['rich'] = None\n"
        f"for name in {CORE!r}: __import__(name)\n"
        "from mgtui.recorder import record\n"
        "trace = record('scenarios/chain.py')\n"
        "print(len(trace), trace.error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    steps, error = result.stdout.split()
    assert int(steps) > 0 and error == "None"
