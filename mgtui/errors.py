"""The one error for a scenario or a trace that cannot be shown at all: a missing file,
not Python, a syntax error, a corrupt trace, a run that recorded no node. Its own
module, so that the parts that only report it (the runner's parent, the command line)
need not import the recorder."""

from __future__ import annotations


class ScenarioLoadError(Exception):
    """The scenario could not run at all: missing file, not Python, syntax error."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class NotAGraph(ScenarioLoadError, TypeError):
    """No micrograd-style node where one was needed: `mgtui.show` given something else,
    or a run that recorded none (or made nodes of a class it could not record). The
    command line says its message and exits 2; `mgtui.check` and `mgtui.show` raise it.
    (`mgtui.recording.shapes` says which classes it saw and which fields it looked for.)"""

    kind = "not-a-graph"  # (its kind in the runner's X record)
