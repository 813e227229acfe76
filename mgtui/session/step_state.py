"""What the panes draw at one step: `StepState`, the plain value every move of a
`Session` returns, and its parts (`Position`, `Header`, `Passes`, `Detail`, `Source`,
`Notice`). Its `Position` is small and serialisable.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from typing import Any, Callable, Literal

from mgtui.trace.explain import Explanation
from mgtui.trace import TraceError
from mgtui.trace.records import Frozen
from mgtui.session.view import GraphView

TABS = ("source", "notes", "output", "checks")
BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: tuple[float, ...]) -> str:
    """One bar per value, scaled between the finite extremes; `?` for a non-finite one.
    Empty when there is no curve to draw (fewer than two points, none finite)."""
    finite = [v for v in values if math.isfinite(v)]
    if len(values) < 2 or not finite:
        return ""
    lo, hi = min(finite), max(finite)
    span = (hi - lo) or 1.0
    top = len(BARS) - 1
    return "".join(BARS[min(int((v - lo) / span * top + 0.5), top)] if math.isfinite(v) else "?"
                   for v in values)


@dataclass(frozen=True)
class Position:
    """Where a session is: what a teacher's session broadcasts to a class."""

    step: int = 0
    node: int | None = None  # the selected node
    tab: str = "source"  # the side tab on show: one of TABS
    lesson: str = ""  # the scenario (its path as recorded)

    def to_dict(self) -> dict[str, Any]:
        return {"lesson": self.lesson, "step": self.step, "node": self.node, "tab": self.tab}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Position:
        """The inverse of `to_dict`. Raises ValueError on a malformed value."""
        step, node = data.get("step", 0), data.get("node")
        tab, lesson = data.get("tab", "source"), data.get("lesson", "")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise ValueError(f"step must be a natural number, not {step!r}")
        if node is not None and (not isinstance(node, int) or isinstance(node, bool) or node < 0):
            raise ValueError(f"node must be a node id or null, not {node!r}")
        if tab not in TABS:
            raise ValueError(f"tab must be one of {', '.join(TABS)}, not {tab!r}")
        if not isinstance(lesson, str):
            raise ValueError(f"lesson must be a string, not {lesson!r}")
        return cls(step, node, tab, lesson)


# The parts below are written by hand rather than made by `@dataclass` (`Frozen` says
# why); those `dataclasses.replace` is used on keep a `@dataclass` that lists their fields.
_set = object.__setattr__


class Source(Frozen):
    """The code the source pane shows: `lines` numbered from `first_line`, and the lines
    marked with a glyph (`▶` wrote a grad, `✗` raised, `!` a finding or a line that
    assigns a grad instead of adding to it)."""

    __slots__ = _fields = ("key", "title", "lines", "first_line", "marked", "numbers")
    key: tuple
    title: str
    lines: tuple[str, ...]
    first_line: int
    marked: dict[int, str]
    numbers: Callable[[int], str] | None  # a line's gutter number (a notebook's 3:2)

    def __init__(self, key: tuple, title: str, lines: tuple[str, ...] = (),
                 first_line: int = 1, marked: dict[int, str] | None = None,
                 numbers: Callable[[int], str] | None = None) -> None:
        _set(self, "key", key)
        _set(self, "title", title)
        _set(self, "lines", lines)
        _set(self, "first_line", first_line)
        _set(self, "marked", {} if marked is None else marked)
        _set(self, "numbers", numbers)


class Header(Frozen):
    """The step header: the scenario's title and where the step is."""

    __slots__ = _fields = ("title", "where", "short")
    title: str
    where: str
    short: str  # replaces `where` on a narrow line

    def __init__(self, title: str, where: str, short: str = "") -> None:
        _set(self, "title", title)
        _set(self, "where", where)
        _set(self, "short", short)


@dataclass(init=False, repr=False, eq=False)  # (for `dataclasses.replace`)
class Passes(Frozen):
    """The pass bar: every pass's kind, the current one, and the loss curve."""

    __slots__ = _fields = ("kinds", "current", "at_error", "has_error", "losses", "bars",
                           "loss_at")
    kinds: tuple[str, ...]
    current: int  # pass index
    at_error: bool  # on the error step after the last pass
    has_error: bool  # the trace ends with an error step
    losses: tuple[float, ...]  # the root's data, one per backward pass
    bars: str  # `losses` as a sparkline ("" when there is no curve)
    loss_at: int  # the last loss point at or before the current pass

    def __init__(self, kinds: tuple[str, ...], current: int, at_error: bool, has_error: bool,
                 losses: tuple[float, ...] = (), bars: str = "", loss_at: int = -1) -> None:
        _set(self, "kinds", kinds)
        _set(self, "current", current)
        _set(self, "at_error", at_error)
        _set(self, "has_error", has_error)
        _set(self, "losses", losses)
        _set(self, "bars", bars)
        _set(self, "loss_at", loss_at)


def line_where(line: int | None) -> str:
    """A `Detail`'s `where` unless it is given one: `line 12`."""
    return f"line {line}" if line else ""


@dataclass(init=False, repr=False, eq=False)  # (for `dataclasses.replace`)
class Detail(Frozen):
    """What the step detail explains: the start, the error, or one event's working."""

    __slots__ = _fields = ("step", "total", "title", "explanation", "line", "where",
                           "closure_file", "warnings", "error", "notes", "asked")
    step: int
    total: int
    title: str  # the scenario's title
    explanation: Explanation | None
    line: int | None  # the scenario line of the event
    where: Callable[[int | None], str]
    closure_file: str  # the file of the `_backward` that ran
    warnings: tuple[str, ...]  # non-finite values among the nodes the step touched
    error: TraceError | None  # set on the error step
    notes: tuple[str, ...]  # the `#: text` notes of the lines this step happened on
    asked: str  # quiz mode: the question this step asks (its working hidden until then)

    def __init__(self, step: int, total: int, title: str,
                 explanation: Explanation | None = None, line: int | None = None,
                 where: Callable[[int | None], str] = line_where, closure_file: str = "",
                 warnings: tuple[str, ...] = (), error: TraceError | None = None,
                 notes: tuple[str, ...] = (), asked: str = "") -> None:
        _set(self, "step", step)
        _set(self, "total", total)
        _set(self, "title", title)
        _set(self, "explanation", explanation)
        _set(self, "line", line)
        _set(self, "where", where)
        _set(self, "closure_file", closure_file)
        _set(self, "warnings", warnings)
        _set(self, "error", error)
        _set(self, "notes", notes)
        _set(self, "asked", asked)


class Notice(Frozen):
    """A one-off message for the user about the move just made."""

    __slots__ = _fields = ("text", "severity", "timeout")
    text: str
    severity: Literal["information", "warning", "error"]
    timeout: float

    def __init__(self, text: str,
                 severity: Literal["information", "warning", "error"] = "information",
                 timeout: float = 3) -> None:
        _set(self, "text", text)
        _set(self, "severity", severity)
        _set(self, "timeout", timeout)


_STATE = ("position", "total", "at_error", "event", "pass_index", "view", "data", "grad",
          "created", "walked", "running", "marks", "breakpoints", "header", "passes",
          "detail", "source", "enabled", "notice", "hidden", "quiz")


@dataclass(init=False, repr=False, eq=False)  # (for `dataclasses.replace` and `fields`)
class StepState(Frozen):
    """Everything the panes draw at one step. `data` and `grad` are the timeline's own
    arrays (for a trace with arrays, `mgtui.trace.arrays.ValuesAt` views over them, whose
    items may be `ArrayValue`s): read them before the next move (copying them would cost
    in proportion to the graph at every step). It compares and hashes by identity."""

    __slots__ = _fields = _STATE
    __eq__ = object.__eq__
    __hash__ = object.__hash__
    position: Position
    total: int
    at_error: bool
    event: int | None  # the event just applied; None at the start and on the error step
    pass_index: int
    view: GraphView | None
    data: array  # (or a `ValuesAt`)
    grad: array
    created: int  # nodes [0, created) exist
    walked: int  # `_backward` calls of the view's walk that have run
    running: bool  # this step runs a `_backward`
    marks: dict[int, str]  # node -> run / acc / new / set
    breakpoints: frozenset[int]
    header: Header
    passes: Passes
    detail: Detail
    source: Source
    enabled: frozenset[str]  # the actions that can run now
    notice: Notice | None
    hidden: frozenset[int]  # quiz mode: nodes whose grads show as ? for now
    quiz: str  # quiz mode: the question, the verdict, or at the end the score

    def __init__(self, position: Position, total: int, at_error: bool, event: int | None,
                 pass_index: int, view: GraphView | None, data: array, grad: array,
                 created: int, walked: int, running: bool, marks: dict[int, str],
                 breakpoints: frozenset[int], header: Header, passes: Passes,
                 detail: Detail, source: Source, enabled: frozenset[str],
                 notice: Notice | None = None, hidden: frozenset[int] = frozenset(),
                 quiz: str = "") -> None:
        for name, value in zip(_STATE, (
                position, total, at_error, event, pass_index, view, data, grad, created,
                walked, running, marks, breakpoints, header, passes, detail, source,
                enabled, notice, hidden, quiz)):
            _set(self, name, value)

    @property
    def step(self) -> int:
        return self.position.step

    @property
    def node(self) -> int | None:
        """The selected node: the panes follow it."""
        return self.position.node

    @property
    def explanation(self) -> Explanation | None:
        return self.detail.explanation

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.detail.warnings

    def can(self, action: str) -> bool:
        return action in self.enabled

