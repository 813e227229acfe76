"""Messages shared across the app: what the loading and doctor workers report, what the
picker asks for, and the debugger's request to run the doctor."""

from __future__ import annotations

from pathlib import Path

from textual.message import Message

from mgtui.trace import Trace


class LoadProgress(Message):
    """The recorder has made `nodes` nodes so far."""

    def __init__(self, nodes: int) -> None:
        super().__init__()
        self.nodes = nodes


class TraceLoaded(Message):
    """A trace is ready. `reload` is True when it replaces the one on screen; `stopped`
    says why a recording did not finish ("" when it did)."""

    def __init__(self, trace: Trace, path: Path, reload: bool = False, stopped: str = "") -> None:
        super().__init__()
        self.trace = trace
        self.path = path
        self.reload = reload
        self.stopped = stopped


class TraceGrowing(Message):
    """The trace recorded so far, while the scenario still runs: it can be stepped."""

    def __init__(self, trace: Trace, path: Path) -> None:
        super().__init__()
        self.trace = trace
        self.path = path


class LoadFailed(Message):
    """The file could not be run or read at all (no trace)."""

    def __init__(self, path: Path, message: str, detail: str = "") -> None:
        super().__init__()
        self.path = path
        self.message = message
        self.detail = detail


class OpenScenario(Message):
    """Open this file (from the picker)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class ChecksProgress(Message):
    """The gradient doctor is at `done` of `total` in `phase` (total 0: not known)."""

    def __init__(self, done: int, total: int, phase: str) -> None:
        super().__init__()
        self.done = done
        self.total = total
        self.phase = phase


class ChecksDone(Message):
    """The gradient doctor's report (a `mgtui.doctor.Report`) for the scenario at `path`."""

    def __init__(self, report, path: Path) -> None:
        super().__init__()
        self.report = report
        self.path = path


class ChecksFailed(Message):
    """The gradient doctor could not run the scenario."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class RunChecks(Message):
    """Run the gradient doctor on the trace on screen (once per trace)."""
