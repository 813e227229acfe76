"""Lessons as files and directories: the scenario, notebook and trace files a directory
holds, with their titles read without running anything, and a lesson recorded once
(for `mgtui serve`, which replays one trace to every session).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mgtui.run.bundled import title_of
from mgtui.trace import Trace

SUFFIXES = (".py", ".ipynb", ".json", ".mgtrace")
TITLE_READ_LIMIT = 4 << 20  # bytes: a bigger JSON trace or notebook is listed by its name


@dataclass(frozen=True)
class LessonFile:
    """One file a lesson directory offers: its name in the picker, its path, its title."""

    name: str
    path: Path
    title: str


def lessons_in(directory: Path) -> list[LessonFile]:
    """The lesson files directly in `directory`, by name (no dotfiles, no `__init__.py`)."""
    found = []
    for path in sorted(directory.iterdir()):
        if (path.suffix in SUFFIXES and path.is_file() and not path.name.startswith(".")
                and path.name != "__init__.py"):
            found.append(LessonFile(path.name, path, file_title(path)))
    return found


def file_title(path: Path) -> str:
    """A lesson file's title: a scenario's docstring, a notebook's first heading, a
    trace's recorded title; "" when it has none or cannot be read."""
    if path.suffix == ".py":
        return title_of(path)
    try:
        if path.suffix == ".mgtrace":
            return _trace_file_title(path)
        if path.stat().st_size > TITLE_READ_LIMIT:
            return ""
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, StopIteration):
        return ""
    if not isinstance(doc, dict):
        return ""
    if path.suffix == ".ipynb":
        return _notebook_title(doc)
    title = doc.get("title")
    return title.strip().splitlines()[0] if isinstance(title, str) and title.strip() else ""


def _notebook_title(doc: dict) -> str:
    """The first line of the notebook's first markdown cell, without its `#`s."""
    for cell in doc.get("cells") or ():
        if isinstance(cell, dict) and cell.get("cell_type") == "markdown":
            source = cell.get("source", "")
            text = "".join(source) if isinstance(source, list) else str(source)
            for line in text.splitlines():
                if line.strip():
                    return line.strip().lstrip("#").strip()
    return ""


def _trace_file_title(path: Path) -> str:
    """The title in a binary trace's header record, read without the rest."""
    from mgtui.trace.binary import header_of

    title = header_of(path)["title"]
    return title.strip().splitlines()[0] if title.strip() else ""


# -- lessons recorded once, for a class ------------------------------------------------------

@dataclass(frozen=True)
class Lesson:
    """A lesson ready to serve: its name (what a `Position` names it by), its file, its
    title, and the one trace every session replays."""

    name: str
    path: Path
    title: str
    trace: Trace
    message: str = ""  # why the recording did not finish, when it did not
    seed: int = 0  # the seed of `random` it was recorded with (the doctor re-runs with it)


class LessonError(Exception):
    """A lesson that cannot be served: the message says which and why."""


def lesson_paths(targets: list[Path]) -> list[Path]:
    """Every lesson file named: the files themselves, and the lesson files of directories."""
    paths: list[Path] = []
    for target in targets:
        if target.is_dir():
            paths += [lesson.path for lesson in lessons_in(target)]
        elif target.is_file():
            paths.append(target)
        else:
            raise LessonError(f"{target}: no such file or directory")
    if not paths:
        raise LessonError("no lesson files there (scenario .py, notebook .ipynb or trace "
                          ".json/.mgtrace)")
    return paths


def record_lesson(path: Path, name: str | None = None, **options) -> Lesson:
    """Record a scenario once (in the runner's child process), or read a saved trace.
    Raises LessonError when it cannot be shown at all."""
    from mgtui.errors import ScenarioLoadError
    from mgtui.trace.export import is_saved_trace, load

    try:
        if is_saved_trace(path):  # (within the limits a recording would have)
            limits = {k: options[k] for k in ("max_nodes", "max_memory") if k in options}
            trace, message = load(path, **limits), ""
        else:
            from mgtui.run.runner import run

            result = run(path, **options)
            trace, message = result.trace, result.message
    except ScenarioLoadError as exc:
        raise LessonError(exc.message) from None
    except Exception as exc:  # noqa: BLE001 - a corrupt trace file, said in one line
        raise LessonError(f"{path}: {exc}") from None
    trace.index.build_indexes(final=True)  # once here, not in every session (shared by a class)
    return Lesson(name or path.name, path, trace.title or file_title(path), trace, message,
                  options.get("seed", 0))

