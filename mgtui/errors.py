"""The one error for a scenario or a trace that cannot be shown at all: a missing file,
not Python, a syntax error, a corrupt trace. Its own module, so that the parts that only
report it (the runner's parent, the command line) need not import the recorder."""

from __future__ import annotations


class ScenarioLoadError(Exception):
    """The scenario could not run at all: missing file, not Python, syntax error."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
