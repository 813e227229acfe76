"""The walls between the rooms, checked in the test run rather than promised.

The import contracts live in pyproject.toml (`[tool.importlinter]`), written over the
folders, never over lists of modules: the rooms in their order (presentation, then the
doctor, the session and the diff, running, recording, the trace), the session
beside the doctor, the headless core free of textual and rich, the shared modules under
every room, no import cycle anywhere in `mgtui`, and the engine knowing nothing of mgtui.
"""

from __future__ import annotations

import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import mgtui

ROOT = Path(__file__).resolve().parent.parent.parent
LINT = Path(sys.executable).with_name("lint-imports")
# The headless core, by room: every module under these is imported with textual blocked.
CORE_ROOMS = ("mgtui.trace", "mgtui.recording", "mgtui.run", "mgtui.session", "mgtui.doctor",
              "mgtui.diff", "mgtui.graph", "mgtui.settings")
SHARED = ("mgtui.safe", "mgtui.errors", "mgtui.memory", "mgtui.defaults", "mgtui.version",
          "mgtui.marks")


def lint(cwd: Path, *contracts: str) -> subprocess.CompletedProcess:
    args = [str(LINT), "--no-cache"] + [f"--contract={c}" for c in contracts]
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)


def project_copy(tmp_path: Path) -> Path:
    for name in ("mgtui", "engine"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def append(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_the_import_contracts_hold():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_module_is_in_a_room():
    """A module left at the top of the package would stand outside every contract: only
    the entry points and the shared modules may."""
    top = {m.name for m in pkgutil.iter_modules(mgtui.__path__)}
    rooms = {name.split(".")[1] for name in CORE_ROOMS} | {"tui", "serve"}
    assert top - rooms == {"api", "cli"} | {name.split(".")[1] for name in SHARED}


def test_the_contracts_fail_on_a_cycle_a_wrong_way_import_and_textual(tmp_path):
    """The contracts are not checks that cannot fail: each breaks on the import it bans."""
    copy = project_copy(tmp_path)
    assert lint(copy, "headless-core", "rooms", "no-cycles").returncode == 0
    append(copy / "mgtui" / "trace" / "model.py", "import textual")
    append(copy / "mgtui" / "recording" / "store.py", "import mgtui.doctor.findings")
    append(copy / "mgtui" / "trace" / "lanes.py", "import mgtui.trace.builder")
    result = lint(copy, "headless-core")
    assert result.returncode != 0 and "mgtui.trace.model -> textual" in result.stdout
    result = lint(copy, "rooms")
    assert result.returncode != 0
    assert "mgtui.recording.store -> mgtui.doctor.findings" in result.stdout
    result = lint(copy, "no-cycles")
    assert result.returncode != 0 and "No cycles are allowed in mgtui.trace" in result.stdout


def test_the_core_runs_with_textual_and_rich_unimportable():
    """harlequin's hygiene test: every module of the headless rooms imports, and a
    scenario records, in a process where importing textual or rich would fail."""
    code = (
        "import sys, pkgutil, importlib\n"
        "sys.modules['textual'] = None; sys.modules['rich'] = None\n"
        "import engine, engine.nn\n"
        f"for name in {SHARED!r}: importlib.import_module(name)\n"
        "count = 0\n"
        f"for room in {CORE_ROOMS!r}:\n"
        "    package = importlib.import_module(room)\n"
        "    for info in pkgutil.walk_packages(package.__path__, room + '.'):\n"
        "        importlib.import_module(info.name); count += 1\n"
        "from mgtui.recording.recorder import record\n"
        "trace = record('scenarios/chain.py')\n"
        "print(count, len(trace), trace.error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    modules, steps, error = result.stdout.split()
    assert int(modules) > 40 and int(steps) > 0 and error == "None"
