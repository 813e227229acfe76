"""One side of a comparison: a scenario recorded in a child process of its own
(`mgtui.run`), or a saved trace read without running code; both sides' runs go side by
side."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mgtui.defaults import DEFAULT_MAX_MEMORY, DEFAULT_MAX_NODES
from mgtui.errors import ScenarioLoadError
from mgtui.run.bundled import resolve
from mgtui.run.runner import Run, RunOptions, start_run
from mgtui.trace import Trace
from mgtui.trace.engine_kind import TORCH
from mgtui.trace.export import is_saved_trace, load


@dataclass(frozen=True)
class Side:
    """A trace and what the user called it: `mine.py`, `before.mgtrace`."""

    name: str
    path: Path
    trace: Trace
    saved: bool  # read from a saved trace, not run
    stopped: str = ""  # why its run did not finish, "" if it did

    @property
    def problem(self) -> str:
        """Why this side's trace is not a whole run ("" if it is)."""
        if self.stopped:
            return f"its recording stopped: {self.stopped}"
        if self.trace.error is not None:
            return f"it raised {self.trace.places.error_text()}"
        return ""

    @property
    def is_torch(self) -> bool:
        """Did the torch engine record this side (its nodes' backward is torch's own)?"""
        return self.trace.engine == TORCH

    def called_beside(self, yours: Side) -> str:
        """What the comparison calls this side, the reference, beside `yours`: `torch`
        for the torch twin of a run of another engine, else its file's name (two torch
        scripts: `theirs.py`, not "torch")."""
        return "torch" if self.is_torch and not yours.is_torch else Path(self.name).name

    def place(self, filename: str, line: int | None) -> str:
        """A line as the user knows it: `mine.py:37`, relative to the current directory
        where it can be."""
        shown = filename
        if os.path.isabs(filename):
            try:
                rel = os.path.relpath(filename)
            except ValueError:  # (another drive)
                rel = filename
            shown = filename if rel.startswith("..") else rel
        return self.trace.places.place(filename, line, shown)


def open_sides(a: str, b: str, *, seed: int = 0, timeout: float | None = None,
               max_nodes: int = DEFAULT_MAX_NODES,
               max_memory: int | None = DEFAULT_MAX_MEMORY) -> tuple[Side, Side]:
    """Both sides, their scenarios recording at the same time. Raises ScenarioLoadError,
    its message naming the side, if either cannot be shown at all (the other's run is
    ended then)."""
    paths = [resolve(a), resolve(b)]
    runs: list[Run | None] = []
    try:
        for target, path in zip((a, b), paths):
            _check_file(target, path)
            if is_saved_trace(path):
                runs.append(None)
            else:
                options = RunOptions(seed=seed, max_nodes=max_nodes, timeout=timeout,
                                     max_memory=max_memory)
                runs.append(start_run(path, options))
        return tuple(_finish(target, path, run, max_nodes, max_memory)
                     for target, path, run in zip((a, b), paths, runs))  # type: ignore[return-value]
    finally:
        for run in runs:  # (ended already, unless the other side failed)
            if run is not None:
                run.end_now("the other side could not be compared")
                try:
                    run.wait()
                except ScenarioLoadError:
                    pass


def _check_file(target: str, path: Path) -> None:
    if not path.exists():
        raise ScenarioLoadError(f"{target}: no such file (nor a bundled scenario)")
    if path.is_dir():
        raise ScenarioLoadError(f"{target} is a directory: diff compares two files, each a "
                                "scenario or a saved trace")


def _finish(target: str, path: Path, run: Run | None, max_nodes: int,
            max_memory: int | None) -> Side:
    try:
        if run is None:
            return Side(target, path, load(path, max_nodes=max_nodes, max_memory=max_memory),
                        saved=True)
        result = run.wait()
    except ScenarioLoadError as exc:
        named = target in exc.message or str(path) in exc.message
        message = exc.message if named else f"{target}: {exc.message}"
        raise ScenarioLoadError(message, exc.detail) from None
    return Side(target, path, result.trace, saved=False, stopped=result.message)
