"""A debugging session without a screen: one trace, the step it is at, the selected node,
the breakpoints, and every move through time. Each move returns one `StepState`, a
plain value with everything the panes draw; its `Position` is small and serialisable.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Literal

from mgtui.assigns import assigning_lines
from mgtui.explain import Explanation, explain
from mgtui.notes import notes_in
from mgtui.timeline import Timeline
from mgtui.trace import EventKind, Trace, TraceError
from mgtui.view import GraphView, take_prepared, view_key

TABS = ("source", "notes", "output", "checks")
BARS = "▁▂▃▄▅▆▇█"

# Actions that move through time, and which end of the trace stops them.
FORWARD_ACTIONS = frozenset({"next", "continue", "end", "next_pass"})
BACKWARD_ACTIONS = frozenset({"prev", "continue_back", "start", "prev_pass"})
ACTIONS = FORWARD_ACTIONS | BACKWARD_ACTIONS | {"breakpoint", "find", "checks"}


def short_path(filename: str) -> str:
    """A path as a pane title: relative to the working directory when it is under it,
    else its last two parts (`micrograd/engine.py`)."""
    p = Path(filename)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return "/".join(p.parts[-2:]) if len(p.parts) > 1 else filename


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


# -- the values a move returns ------------------------------------------------------------------

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


@dataclass(frozen=True)
class Notice:
    """A one-off message for the user about the move just made."""

    text: str
    severity: Literal["information", "warning", "error"] = "information"
    timeout: float = 3


@dataclass(frozen=True, eq=False)
class StepState:
    """Everything the panes draw at one step. `data` and `grad` are the timeline's own
    arrays: read them before the next move (copying them would cost in proportion to
    the graph at every step)."""

    position: Position
    total: int
    at_error: bool
    event: int | None  # the event just applied; None at the start and on the error step
    pass_index: int
    view: GraphView | None
    data: array
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


# -- the session --------------------------------------------------------------------------------

class Session:
    """One trace and every move through it. A trace whose scenario raised has one more
    step than it has events: the error."""

    def __init__(self, trace: Trace, *, breakpoints=(), tab: str = "source") -> None:
        self.trace = trace
        self.timeline = Timeline(trace)
        self.breakpoints: frozenset[int] = frozenset(n for n in breakpoints
                                                     if 0 <= n < trace.node_count)
        self._views = take_prepared(trace)  # built off the UI thread, if they were
        self._notes: dict[str, dict[int, str]] | None = None  # file -> line -> `#:` note
        self._summarise(trace)
        self.position = Position(0, None, tab if tab in TABS else "source", trace.scenario)
        # the doctor's numerical local derivatives: event -> input -> d node / d input
        self.numerical: dict[int, dict[int, float]] = {}
        self.state = self.goto(0)

    def _summarise(self, trace: Trace) -> None:
        self.total = len(trace) + (1 if trace.error is not None else 0)
        losses = trace.losses()
        self._loss_passes = [index for index, _ in losses]
        values = tuple(v for _, v in losses)
        self._passes = Passes(tuple(p.kind for p in trace.passes), 0, False,
                              trace.error is not None, values, sparkline(values))

    def grow(self, trace: Trace) -> StepState:
        """Go on with `trace`, the same run recorded further (the one it had, with more
        records after them), at the same step and selection.

        What was worked out for the shorter trace is kept: the timeline stays where it
        is, and the views of passes that have not changed are carried over, so an update
        while a big scenario records costs what was added, not a replay to the step."""
        old = self.trace
        self.trace = trace
        self.timeline.grow(trace)
        same = {p.index for p in trace.passes[: len(old.passes)]
                if p == old.passes[p.index]}
        views = take_prepared(trace)  # those the app's worker built for this trace
        for key, view in self._views.items():
            if key not in views and all(k in same for k in key if k >= 0):
                views[key] = view.rebind(trace)
        self._views = views
        self._summarise(trace)
        return self.goto(self.step, select=self.node)

    # -- where we are ---------------------------------------------------------------------
    @property
    def step(self) -> int:
        return self.position.step

    @property
    def node(self) -> int | None:
        return self.position.node

    def at_error(self, step: int | None = None) -> bool:
        step = self.step if step is None else step
        return self.trace.error is not None and step > len(self.trace)

    def view_at(self, pass_index: int) -> GraphView | None:
        """The graph shown during pass `pass_index` (built once, then cached)."""
        key, forward, backward = view_key(self.trace, pass_index)
        if forward is None and backward is None:
            return None
        view = self._views.get(key)
        if view is None:
            view = GraphView.build(self.trace, forward, backward)
            if len(self._views) > 8:
                self._views.clear()
            self._views[key] = view
        return view

    def in_view(self, view: GraphView | None, nid: int | None) -> bool:
        return (view is not None and nid is not None
                and view.row_of(nid, self.trace.node_count) is not None)

    # -- moving in time -------------------------------------------------------------------
    def goto(self, step: int, select: int | None = None, *, source: Source | None = None,
             notice: Notice | None = None) -> StepState:
        """Go to step `step` (clamped) and select `select`, else the step's own node,
        else keep the selection if it is still in the graph."""
        step = max(0, min(step, self.total))
        self.timeline.seek(min(step, len(self.trace)))
        error = self.at_error(step)
        event = self.timeline.position - 1 if self.timeline.position and not error else None
        pass_ = self.timeline.pass_
        pass_index = pass_.index if pass_ is not None else 0
        view = self.view_at(pass_index)
        node = self._selection(view, event, select)
        self.position = replace(self.position, step=step, node=node)
        self.state = self._state(event, pass_index, view, source, notice)
        return self.state

    def _selection(self, view: GraphView | None, event: int | None,
                   select: int | None) -> int | None:
        if self.in_view(view, select):
            return select
        if event is not None:
            return self.trace.event_node(event)
        if self.in_view(view, self.node):
            return self.node
        every = self.trace.node_count
        return view.row_node(0, every) if view is not None and view.row_count(every) else None

    def next(self) -> StepState:
        return self.goto(self.step + 1)

    def prev(self) -> StepState:
        return self.goto(self.step - 1)

    def start(self) -> StepState:
        return self.goto(0)

    def end(self) -> StepState:
        return self.goto(self.total)

    def next_pass_start(self) -> int | None:
        """The first step of the next pass (or the error step after the last one)."""
        trace = self.trace
        if self.step == 0:
            return 1 if len(trace) else None
        current = trace.pass_at(min(self.step, len(trace)) - 1)
        nxt = current.index + 1 if current is not None else len(trace.passes)
        if nxt < len(trace.passes):
            return trace.passes[nxt].start + 1
        return self.total if not self.at_error() and trace.error is not None else None

    def next_pass(self) -> StepState:
        target = self.next_pass_start()
        return self.state if target is None else self.goto(target)

    def prev_pass(self) -> StepState:
        """The first step of this pass; from there, the first step of the previous one."""
        trace = self.trace
        if self.step == 0:
            return self.state
        current = trace.pass_at(min(self.step, len(trace)) - 1)
        if current is None:
            return self.goto(0)
        first = current.start + 1
        if self.step > first:
            return self.goto(first)
        if current.index > 0:
            return self.goto(trace.passes[current.index - 1].start + 1)
        return self.goto(0)

    # -- breakpoints ----------------------------------------------------------------------
    def hits(self, index: int) -> bool:
        """Does event `index` touch a breakpoint: its `_backward` runs or its grad is written?"""
        trace, bps = self.trace, self.breakpoints
        kind = trace.kind(index)
        if kind in (EventKind.BACKWARD, EventKind.GRAD) and trace.event_node(index) in bps:
            return True
        return kind is EventKind.BACKWARD and any(n in bps for n in trace.grad_targets(index))

    def continue_forward(self) -> StepState:
        """Run to the next step that hits a breakpoint, else to the end."""
        if self.breakpoints:
            for i in range(self.step, len(self.trace)):
                if self.hits(i):
                    return self.goto(i + 1)
        text = ("No breakpoint ahead: ran to the end." if self.breakpoints
                else "No breakpoints set (b sets one): ran to the end.")
        return self.goto(self.total, notice=Notice(text))

    def continue_back(self) -> StepState:
        """Run backwards to the previous step that hits a breakpoint, else to the start."""
        if self.breakpoints:
            for i in range(min(self.step, len(self.trace)) - 2, -1, -1):
                if self.hits(i):
                    return self.goto(i + 1)
        return self.goto(0, notice=Notice("No breakpoint behind: back at the start."))

    def toggle_breakpoint(self, nid: int | None = None) -> StepState:
        """Set or clear a breakpoint on `nid` (by default the selected node)."""
        nid = self.node if nid is None else nid
        if nid is None:
            return self.state
        label = self.trace.label(nid)
        if nid in self.breakpoints:
            self.breakpoints = self.breakpoints - {nid}
            notice = Notice(f"Breakpoint on {label} removed.", timeout=2)
        else:
            self.breakpoints = self.breakpoints | {nid}
            notice = Notice(f"Breakpoint on {label}: c stops when its _backward runs or its "
                            "grad changes.")
        return self._update(breakpoints=self.breakpoints, notice=notice)

    # -- nodes ----------------------------------------------------------------------------
    def select(self, nid: int | None) -> StepState:
        """Select `nid` without moving in time."""
        return self._update(position=replace(self.position, node=nid))

    def find(self, query: str | None) -> StepState:
        """Select the next node of the current graph, after the selected one, labelled
        `query` exactly, else containing it (case-insensitively)."""
        view, trace = self.state.view, self.trace
        every = trace.node_count
        rows = view.row_count(every) if view is not None else 0
        if not query or not rows:
            return self._update()
        here = view.row_of(self.node, every) if self.node is not None else None
        order = [((here or 0) + 1 + k) % rows for k in range(rows)]
        needle = query.lower()
        for test in (lambda s: s == query, lambda s: needle in s.lower()):
            for row in order:
                nid = view.row_node(row, every)
                if test(trace.label(nid)):
                    return self.select(nid)
        elsewhere = trace.find(query)
        if elsewhere:
            text = (f"{query} is not in the current graph: it is node {elsewhere[0]} "
                    "(ctrl+p → go to node takes you there).")
        else:
            text = f"No node labelled {query!r} here."
        return self._update(notice=Notice(text, "warning", 5))

    def goto_node(self, nid: int, to: Literal["here", "made", "backward"] = "here") -> StepState:
        """Select node `nid`: `here` if it is in the current graph (else where it was
        made), `made` at the step that made it, `backward` at the step its `_backward` ran."""
        if to == "here" and self.in_view(self.state.view, nid):
            return self.select(nid)
        if to == "backward":
            step = self.backward_step(nid)
            if step is not None:
                return self.goto(step, select=nid)
        made = self.trace.created_at(nid)
        return self.state if made is None else self.goto(made + 1, select=nid)

    def backward_step(self, nid: int) -> int | None:
        """The step at which `nid`'s `_backward` ran, in the backward pass over the
        graph that made it."""
        made = self.trace.created_at(nid)
        pass_ = self.trace.pass_at(made) if made is not None else None
        view = self.view_at(pass_.index) if pass_ is not None else None
        if view is None or view.backward is None or nid not in view.topo_of:
            return None
        return view.walk_events[len(view.topo) - 1 - view.topo_of[nid]] + 1

    def goto_finding(self, finding) -> StepState:
        """The step after the doctor's `finding` (a `Finding`), its node selected and its
        line shown in the source tab."""
        self.position = replace(self.position, tab="source")
        source = self._finding_source(finding)
        return self.goto(finding.step + 1, select=finding.node, source=source,
                         notice=Notice(f"{finding.title}: {finding.message}", timeout=8))

    def set_findings(self, findings) -> StepState:
        """Take in the doctor's findings (`Finding`s, of a recording of the same file):
        a step whose `_backward` the doctor measured shows its numerical local derivative
        next to the one the writes imply."""
        self.numerical = {}
        for f in findings:
            if getattr(f, "local", None) is not None and f.input is not None \
                    and 0 <= f.step < len(self.trace):
                self.numerical.setdefault(f.step, {})[f.input] = f.local
        return self.goto(self.step, select=self.node)

    def _finding_source(self, finding) -> Source | None:
        """The finding's own line, marked `!`: in the scenario, or in the `_backward`
        closure that holds it."""
        trace = self.trace
        if not finding.line:
            return None
        where = f"{trace.place(finding.file, finding.line, short_path(finding.file))}  {finding.title}"
        marked = {finding.line: "!"}
        numbers = self._numbers(finding.file)
        if Path(finding.file).resolve() == Path(trace.scenario).resolve():
            return Source(("finding", finding.line), where, tuple(trace.source.splitlines()),
                          1, marked, numbers)
        for closure in trace.closures:
            if closure.covers(finding.file, finding.line):
                return Source(("finding", finding.file, finding.line), where, closure.lines,
                              closure.first_line, marked, numbers)
        return None

    # -- the side tab, and a whole position -------------------------------------------------
    def show_tab(self, tab: str) -> StepState:
        if tab not in TABS:
            raise ValueError(f"no tab {tab!r}: one of {', '.join(TABS)}")
        return self._update(position=replace(self.position, tab=tab))

    def next_tab(self) -> StepState:
        return self.show_tab(TABS[(TABS.index(self.position.tab) + 1) % len(TABS)])

    def seek(self, position: Position) -> StepState:
        """Go to a position (another session's, say): its step, node and tab."""
        self.position = replace(self.position, tab=position.tab)
        return self.goto(position.step, select=position.node)

    # -- building the state ---------------------------------------------------------------------
    def _update(self, **changes) -> StepState:
        """The current state with `changes` (and no notice unless given)."""
        changes.setdefault("notice", None)
        if "position" in changes:
            self.position = changes["position"]
        self.state = replace(self.state, enabled=self._enabled(), **changes)
        return self.state

    def _enabled(self) -> frozenset[str]:
        off = set()
        if self.step >= self.total:
            off |= FORWARD_ACTIONS
        if self.step <= 0:
            off |= BACKWARD_ACTIONS
        if self.next_pass_start() is None:
            off.add("next_pass")
        if self.node is None:
            off.add("breakpoint")
        return ACTIONS - off

    def _state(self, event: int | None, pass_index: int, view: GraphView | None,
               source: Source | None, notice: Notice | None) -> StepState:
        tl = self.timeline
        running = event is not None and self.trace.kind(event) is EventKind.BACKWARD
        return StepState(
            position=self.position, total=self.total, at_error=self.at_error(),
            event=event, pass_index=pass_index, view=view,
            data=tl.data, grad=tl.grad, created=tl.created,
            walked=view.walked(tl.position) if view is not None else 0, running=running,
            marks=self._marks(event), breakpoints=self.breakpoints,
            header=self._header(event), passes=self._pass_bar(pass_index),
            detail=self._detail(event), source=source or self._source(event),
            enabled=self._enabled(), notice=notice)

    def _marks(self, event: int | None) -> dict[int, str]:
        """`run` on the node whose `_backward` runs and `acc` on the nodes it added to
        (`assign` on those a line like `x.grad = …` assigned); `new` on a node just made;
        `set` on one written outside a `_backward`."""
        if event is None:
            return {}
        trace = self.trace
        kind, nid = trace.kind(event), trace.event_node(event)
        if kind is EventKind.BACKWARD:
            closure = trace.closure_of(event)
            assigns = assigning_lines(closure) if closure is not None else frozenset()
            marks = {w.node: "assign" if w.line in assigns else "acc"
                     for w in trace.writes(event)}
            marks[nid] = "run"
            return marks
        return {nid: "new" if kind is EventKind.CREATE else "set"}

    def _header(self, event: int | None) -> Header:
        trace, step, total = self.trace, self.step, self.total
        title = trace.title or Path(trace.scenario).name
        if self.at_error():
            return Header(title, f"✗ {trace.error.type} · step {step}/{total}")
        if event is None:
            return Header(title, f"start · step 0/{total}")
        p = trace.pass_at(event)
        n = len(trace.passes)
        where = (f"{p.kind} pass {p.index + 1}/{n} · {event - p.start + 1}/{len(p)} in pass · "
                 f"step {step}/{total}")
        return Header(title, where, f"{p.kind} {p.index + 1}/{n} · {step}/{total}")

    def _pass_bar(self, pass_index: int) -> Passes:
        loss_at = bisect_right(self._loss_passes, pass_index) - 1
        return replace(self._passes, current=pass_index, at_error=self.at_error(),
                       loss_at=loss_at)

    def _detail(self, event: int | None) -> Detail:
        trace, tl = self.trace, self.timeline
        detail = Detail(self.step, self.total, trace.title, where=trace.where)
        if self.at_error():
            return replace(detail, error=trace.error)
        if event is None:
            return detail
        exp = explain(trace, tl.data, tl.grad, event, self.numerical.get(event))
        closure = trace.closure_of(event)
        warnings = []
        for nid in dict.fromkeys([exp.node] + [c.target for c in exp.contributions]):
            for name, value in (("data", tl.data[nid]), ("grad", tl.grad[nid])):
                if not math.isfinite(value):
                    warnings.append(f"⚠ {trace.label(nid)}.{name} is {value}: not a finite "
                                    "number, and everything computed from it will not be either")
        return replace(detail, explanation=exp, line=trace.line_of(event),
                       closure_file=Path(closure.filename).name if closure is not None else "",
                       warnings=tuple(warnings), notes=self.step_notes(event))

    def step_notes(self, event: int) -> tuple[str, ...]:
        """The `#:` notes (`mgtui.notes`) of the lines event `event` happened on: its
        scenario line and, for a `_backward` call, the line that made the node (the
        forward half of its op) and the closure's lines that wrote."""
        trace = self.trace
        if self._notes is None:
            self._notes = {trace.scenario: notes_in(trace.source)}
        where = [(trace.scenario, trace.line_of(event))]
        closure = trace.closure_of(event)
        if trace.kind(event) is EventKind.BACKWARD:
            made = trace.created_at(trace.event_node(event))
            if made is not None:
                where.append((trace.scenario, trace.line_of(made)))
        if closure is not None and trace.kind(event) is EventKind.BACKWARD:
            if closure.filename not in self._notes:
                self._notes[closure.filename] = notes_in("\n".join(closure.lines),
                                                         closure.first_line)
            where += [(closure.filename, w.line) for w in trace.writes(event)]
        found = (self._notes.get(filename, {}).get(line) for filename, line in where if line)
        return tuple(dict.fromkeys(note for note in found if note))

    def _source(self, event: int | None) -> Source:
        """The scenario line of a forward step or a write; the `_backward` closure that ran,
        with the lines that wrote marked `▶` (`!` a line that assigns a grad: `mgtui.assigns`);
        the line that raised, marked `✗`."""
        trace = self.trace
        lines = tuple(trace.source.splitlines())
        name = Path(trace.scenario).name
        numbers = trace.line_number
        if event is not None and not self.at_error():
            closure_index = trace.closure_index(event)
            if trace.kind(event) is EventKind.BACKWARD and closure_index is not None:
                return self._closure_source(event, closure_index)  # (from the closure's file)
        if not lines:
            return Source(("none",), f"{name}: no source in this trace")
        if self.at_error():
            line = trace.error.line
            return Source(("error", line), f"{self._at(line)}  raised {trace.error.type}",
                          lines, 1, {line: "✗"} if line else {}, numbers)
        if event is None:
            return Source(("start",), name, lines, numbers=numbers)
        kind = trace.kind(event)
        line = trace.line_of(event)
        what = {EventKind.CREATE: "made here", EventKind.GRAD: "seeded here"}.get(kind, "written here")
        return Source(("scenario", line), f"{self._at(line)}  {what}", lines, 1,
                      {line: "▶"} if line else {}, numbers)

    def _at(self, line: int | None) -> str:
        """`neuron.py:12`, or `lecture.ipynb, cell 3, line 2`."""
        trace = self.trace
        return trace.place(trace.scenario, line or None, Path(trace.scenario).name) \
            + ("" if line else ":?")

    def _closure_source(self, event: int, closure_index: int) -> Source:
        trace = self.trace
        closure = trace.closures[closure_index]
        assigns = assigning_lines(closure)
        marked = {w.line: "!" if w.line in assigns else "▶" for w in trace.writes(event) if w.line}
        nid = trace.event_node(event)
        title = (f"{trace.label(nid)}._backward ({trace.op(nid) or 'leaf'}) · "
                 f"{trace.place(closure.filename, closure.first_line, short_path(closure.filename))}")
        if closure.default:
            title += "  (the default no-op)"
        return Source(("closure", closure_index, tuple(sorted(marked))), title,
                      closure.lines, closure.first_line, marked, self._numbers(closure.filename))

    def _numbers(self, filename: str) -> Callable[[int], str] | None:
        """The gutter numbers of a file's lines: the notebook's own, in cells."""
        trace = self.trace
        return trace.line_number if trace.in_cells(filename) else None
