"""A debugging session without a screen: one trace, the step it is at, the selected node,
the breakpoints, and every move through time. Each move returns one `StepState`
(`mgtui.session.step_state`), a plain value with everything the panes draw, worked out by
`mgtui.session.step_panes`; its `Position` is small and serialisable.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from mgtui.trace.values import state_values
from mgtui.session import step_panes
from mgtui.session.step_panes import short_path
from mgtui.session.step_state import (
    BARS,
    TABS,
    Detail,
    Header,
    Notice,
    Passes,
    Position,
    Source,
    StepState,
    sparkline,
)
from mgtui.session.timeline import Timeline
from mgtui.trace import EventKind, Trace
from mgtui.trace.names import mentions, shown_as
from mgtui.session.view import GraphView, take_prepared, view_key

if TYPE_CHECKING:
    from mgtui.session.quiz import SelfStudy

__all__ = ["ACTIONS", "BACKWARD_ACTIONS", "BARS", "FORWARD_ACTIONS", "TABS", "Detail", "Header",
           "Notice", "Passes", "Position", "Session", "Source", "StepState", "short_path",
           "sparkline"]


# Actions that move through time, and which end of the trace stops them.
FORWARD_ACTIONS = frozenset({"next", "continue", "end", "next_pass"})
BACKWARD_ACTIONS = frozenset({"prev", "continue_back", "start", "prev_pass"})
ACTIONS = FORWARD_ACTIONS | BACKWARD_ACTIONS | {"breakpoint", "find", "checks"}


# -- the session --------------------------------------------------------------------------------

class Session:
    """One trace and every move through it. A trace whose scenario raised has one more
    step than it has events: the error."""

    def __init__(self, trace: Trace, *, breakpoints=(), tab: str = "source",
                 quiz: bool = False) -> None:
        self.trace = trace
        # quiz mode for self-study: each backward step's grads hidden until predicted
        self.quiz: SelfStudy | None = None
        if quiz:  # (imported here: not needed for the first frame of a session without it)
            from mgtui.session import quiz as self_study

            self.quiz = self_study.SelfStudy.of(trace)
        self.timeline = Timeline(trace)
        self.breakpoints: frozenset[int] = frozenset(n for n in breakpoints
                                                     if 0 <= n < trace.node_count)
        self._views = take_prepared(trace)  # built off the UI thread, if they were
        self._notes = step_panes.notes_of(trace)  # file -> line -> `#:` note
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
        if self.quiz is not None:
            self.quiz.quiz.trace = trace
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

    def next_centre(self) -> tuple[GraphView | None, int | None]:
        """The graph and the node the next step (`next`) would show, without going
        there (its pictures may be laid out ahead); (None, None) at the end."""
        step = self.step + 1
        if step > min(self.total, len(self.trace)):
            return None, None
        pass_ = self.trace.pass_at(step - 1)
        return (self.view_at(pass_.index if pass_ is not None else 0),
                self.trace.event_node(step - 1))

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
        """Select the next node of the current graph, after the selected one, named
        `query` as the table shows it (its label, or its path shortened to fit:
        `model.l[1].n[0].b`, `…n[0].b`), else whose name holds it (case-insensitively)."""
        view, trace = self.state.view, self.trace
        every = trace.node_count
        rows = view.row_count(every) if view is not None else 0
        if not query or not rows:
            return self._update()
        here = view.row_of(self.node, every) if self.node is not None else None
        order = [((here or 0) + 1 + k) % rows for k in range(rows)]
        for test in (shown_as, mentions):
            for row in order:
                nid = view.row_node(row, every)
                if test(trace, nid, query):
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
        made = self.trace.index.created_at(nid)
        return self.state if made is None else self.goto(made + 1, select=nid)

    def backward_step(self, nid: int) -> int | None:
        """The step at which `nid`'s `_backward` ran, in the backward pass over the
        graph that made it."""
        made = self.trace.index.created_at(nid)
        pass_ = self.trace.pass_at(made) if made is not None else None
        view = self.view_at(pass_.index) if pass_ is not None else None
        if view is None or view.backward is None or nid not in view.topo_of:
            return None
        return view.walk_events[len(view.topo) - 1 - view.topo_of[nid]] + 1

    def goto_finding(self, finding) -> StepState:
        """The step after the doctor's `finding` (a `Finding`), its node selected and its
        line shown in the source tab."""
        self.position = replace(self.position, tab="source")
        source = step_panes.finding_source(self.trace, finding)
        return self.goto(finding.step + 1, select=finding.node, source=source,
                         notice=Notice(f"{finding.title}: {finding.message}", timeout=8))

    def goto_difference(self, step: int, node: int | None, message: str) -> StepState:
        """The step after event `step`, where a comparison with another run (`mgtui diff`)
        found this run's first difference: the `_backward` call that wrote the gradient
        that differs (or the step that made or set the value), with `node`, the one that
        differs, selected, that call's source shown, and the difference said."""
        self.position = replace(self.position, tab="source")
        return self.goto(step + 1, select=node, notice=Notice(message, timeout=10))

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
    # -- quiz mode (self-study) ------------------------------------------------------------
    def answer(self, value: float) -> StepState:
        """Quiz mode: the student predicts `value` for the grad this step asks about;
        the grads are shown, with right or wrong (nothing changes if nothing is asked)."""
        if self.quiz is None or self.quiz.answer(self.step, value) is None:
            return self._update()
        return self.goto(self.step, select=self.node)

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
        tl, trace, at_error = self.timeline, self.trace, self.at_error()
        running = event is not None and trace.kind(event) is EventKind.BACKWARD
        data, grad = state_values(trace, tl.position, tl.data, tl.grad)  # (arrays, if any)
        detail = step_panes.detail(trace, tl.data, tl.grad, self.step, self.total, event,
                                   at_error, self.numerical.get(event), self._notes)
        hidden, quiz = frozenset(), ""
        if self.quiz is not None:
            self.quiz.visit(self.step)
            hidden, quiz = self.quiz.hidden(self.step), self.quiz.line(self.step, self.total)
            if hidden:
                detail = replace(detail, asked=quiz)
        return StepState(
            position=self.position, total=self.total, at_error=at_error,
            event=event, pass_index=pass_index, view=view,
            data=data, grad=grad, created=tl.created,
            walked=view.walked(tl.position) if view is not None else 0, running=running,
            marks=step_panes.marks(trace, event), breakpoints=self.breakpoints,
            header=step_panes.header(trace, self.step, self.total, event, at_error),
            passes=self._pass_bar(pass_index),
            detail=detail, source=source or step_panes.source(trace, event, at_error),
            enabled=self._enabled(), notice=notice, hidden=hidden, quiz=quiz)

    def _pass_bar(self, pass_index: int) -> Passes:
        loss_at = bisect_right(self._loss_passes, pass_index) - 1
        return replace(self._passes, current=pass_index, at_error=self.at_error(),
                       loss_at=loss_at)

    def step_notes(self, event: int) -> tuple[str, ...]:
        """The `#:` notes of the lines event `event` happened on (`step_panes.step_notes`)."""
        return step_panes.step_notes(self.trace, event, self._notes)
