"""Lines as the user knows them: `neuron.py:12`, or `lecture.ipynb, cell 3, line 2` for
a scenario that is a notebook (`mgtui.trace.notebook`). What `Trace.places` hands out."""

from __future__ import annotations

import os

from mgtui.trace import notebook
from mgtui.trace.records import TraceError


class Places:
    """The places of a trace's lines, in the words the user knows them by: a trace's
    scenario, source and error, and nothing else (`trace.places`)."""

    __slots__ = ("scenario", "source", "error")

    def __init__(self, scenario: str, source: str, error: TraceError | None) -> None:
        self.scenario, self.source, self.error = scenario, source, error

    def where(self, line: int | None) -> str:
        """A scenario line as the user knows it: `line 12`, or `cell 3, line 2` in a
        notebook (`mgtui.trace.notebook`); "" for no line."""
        return notebook.where(self.source, line)

    def place(self, filename: str, line: int | None, shown: str | None = None) -> str:
        """A line of `filename` as the user knows it, `neuron.py:12` or
        `lecture.ipynb, cell 3, line 2`, with the file `shown` as given."""
        shown = filename if shown is None else shown
        if not line:
            return shown
        return f"{shown}, {self.where(line)}" if self.in_cells(filename) else f"{shown}:{line}"

    def error_text(self) -> str:
        """The error as `str(error)` says it, its line as the user knows it (a notebook's
        `cell 3, line 2`); "" if the run did not raise."""
        e = self.error
        if e is None:
            return ""
        if not (e.line and self.in_cells(self.scenario)):
            return str(e)
        where = f" at {self.where(e.line)}"
        return f"{e.type}{where}: {e.message}" if e.message else f"{e.type}{where}"

    def in_cells(self, filename: str) -> bool:
        """Are the lines of `filename` in cells? (It is this trace's notebook.)"""
        return bool(notebook.cells_of(self.source)) and _same_file(filename, self.scenario)

    def line_in(self, filename: str, line: int) -> str:
        """A line of `filename`: `line 9`, or `cell 3, line 5` for the notebook's own."""
        return self.where(line) if self.in_cells(filename) else f"line {line}"

    def line_number(self, line: int) -> str:
        """A scenario line's number for a gutter: `12`, or `3:2` in a notebook."""
        return notebook.number(self.source, line)


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)
