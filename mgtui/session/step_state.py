"""What the panes draw at one step: `StepState`, the plain value every move of a
`Session` returns, and its parts (`Position`, `Header`, `Passes`, `Detail`, `Source`,
`Notice`). Its `Position` is small and serialisable.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from mgtui.trace.explain import Explanation
from mgtui.trace import TraceError
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


@dataclass(frozen=True)
class Source:
    """The code the source pane shows: `lines` numbered from `first_line`, and the lines
    marked with a glyph (`▶` wrote a grad, `✗` raised, `!` a finding or a line that
    assigns a grad instead of adding to it)."""

    key: tuple
    title: str
    lines: tuple[str, ...] = ()
    first_line: int = 1
    marked: dict[int, str] = field(default_factory=dict)
    numbers: Callable[[int], str] | None = None  # a line's gutter number (a notebook's 3:2)


@dataclass(frozen=True)
class Header:
    title: str
    where: str
    short: str = ""  # replaces `where` on a narrow line


@dataclass(frozen=True)
class Passes:
    """The pass bar: every pass's kind, the current one, and the loss curve."""

    kinds: tuple[str, ...]
    current: int  # pass index
    at_error: bool  # on the error step after the last pass
    has_error: bool  # the trace ends with an error step
    losses: tuple[float, ...] = ()  # the root's data, one per backward pass
    bars: str = ""  # `losses` as a sparkline ("" when there is no curve)
    loss_at: int = -1  # the last loss point at or before the current pass


@dataclass(frozen=True)
class Detail:
    """What the step detail explains: the start, the error, or one event's working."""

    step: int
    total: int
    title: str  # the scenario's title
    explanation: Explanation | None = None
    line: int | None = None  # the scenario line of the event
    where: Callable[[int | None], str] = lambda line: f"line {line}" if line else ""
    closure_file: str = ""  # the file of the `_backward` that ran
    warnings: tuple[str, ...] = ()  # non-finite values among the nodes the step touched
    error: TraceError | None = None  # set on the error step
    notes: tuple[str, ...] = ()  # the `#: text` notes of the lines this step happened on
    asked: str = ""  # quiz mode: the question this step asks (its working hidden until then)


@dataclass(frozen=True)
class Notice:
    """A one-off message for the user about the move just made."""

    text: str
    severity: Literal["information", "warning", "error"] = "information"
    timeout: float = 3


@dataclass(frozen=True, eq=False)
class StepState:
    """Everything the panes draw at one step. `data` and `grad` are the timeline's own
    arrays (for a trace with arrays, `mgtui.trace.arrays.ValuesAt` views over them, whose
    items may be `ArrayValue`s): read them before the next move (copying them would cost
    in proportion to the graph at every step)."""

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
    notice: Notice | None = None
    hidden: frozenset[int] = frozenset()  # quiz mode: nodes whose grads show as ? for now
    quiz: str = ""  # quiz mode: the question, the verdict, or at the end the score

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

