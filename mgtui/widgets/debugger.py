"""The debugger screen: the panes of one trace and the keys that move through its steps.

The screen owns the `Timeline`. Every move goes through `goto`, which moves the timeline
and then hands each pane the state it shows; panes never read the trace on their own.
"""

from __future__ import annotations

import math
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane, Tabs

from mgtui.explain import explain
from mgtui.timeline import Timeline
from mgtui.trace import EventKind, Trace
from mgtui.widgets.checks import ChecksPane
from mgtui.widgets.graph_view import GraphView, views_for
from mgtui.widgets.node_table import NodeTable
from mgtui.widgets.pass_bar import PassBar
from mgtui.widgets.source_view import SourceView, short_path
from mgtui.widgets.step_detail import StepDetail, render_error, render_explanation, render_start
from mgtui.widgets.step_header import StepHeader
from mgtui.widgets.topo_list import TopoList

SIDE_TABS = ("tab-source", "tab-notes", "tab-output", "tab-checks")

# Actions that move through time, and which end of the trace stops them.
FORWARD_ACTIONS = {"next", "continue", "end", "next_pass"}
BACKWARD_ACTIONS = {"prev", "continue_back", "start", "prev_pass"}


HELP = {
    "next": "next step (forward in time)",
    "prev": "previous step (back in time)",
    "next_pass": "first step of the next pass",
    "prev_pass": "first step of this pass, then of the previous one",
    "continue": "continue to the next breakpoint, or the end",
    "continue_back": "continue backwards to the previous breakpoint, or the start",
    "start": "go to the start (step 0)",
    "end": "go to the end (the last step)",
    "breakpoint": "breakpoint on the selected node: stops when its _backward runs or its grad changes",
    "find": "find a node of the current graph by label",
    "app.reload": "reload the scenario after editing it, staying at this step",
    "toggle_panes": "show or hide the topo list and source/notes/output (small terminals)",
    "next_tab": "next side tab: source, lesson notes, the scenario's output, checks",
    "checks": "run the gradient doctor: its findings go to the Checks tab, enter on one "
              "goes to its step",
    "app.focus_next": "move the focus to the next pane",
    "app.focus_previous": "move the focus to the previous pane",
    "help": "this help",
    "app.quit": "quit",
}


class DebuggerScreen(Screen[None]):
    """All the panes of one trace. Empty until `load_trace` is called."""

    AUTO_FOCUS = "#nodes"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (18, "-medium"), (34, "-tall")]

    BINDINGS = [
        Binding("n", "next", "Next", id="next"),
        Binding("right,space", "next", "Next", show=False, priority=True, id="next.alt"),
        Binding("p", "prev", "Prev", id="prev"),
        Binding("left", "prev", "Prev", show=False, priority=True, id="prev.alt"),
        Binding("right_square_bracket", "next_pass", "Pass", key_display="]", id="next_pass"),
        Binding("left_square_bracket", "prev_pass", "Prev pass", key_display="[", show=False,
                id="prev_pass"),
        Binding("c", "continue", "Cont", id="continue"),
        Binding("C", "continue_back", "Cont back", show=False, id="continue_back"),
        Binding("g", "start", "Start", show=False, id="start"),
        Binding("G", "end", "End", show=False, id="end"),
        Binding("b", "breakpoint", "Break", id="breakpoint"),
        Binding("slash", "find", "Find", key_display="/", id="find"),
        Binding("r", "app.reload", "Reload", show=False, id="reload"),
        Binding("v", "toggle_panes", "Panes", id="toggle_panes"),
        Binding("t", "next_tab", "Tab", show=False, id="next_tab"),
        Binding("d", "checks", "Checks", show=False, id="checks"),
        Binding("tab", "app.focus_next", "Focus", show=False, id="focus_next"),
        Binding("shift+tab", "app.focus_previous", "Focus back", show=False, id="focus_previous"),
        Binding("question_mark", "help", "Help", key_display="?", id="help"),
        Binding("q", "app.quit", "Quit", id="quit"),
    ]

    position: reactive[int] = reactive(0, init=False, repaint=False)
    panes_open: reactive[bool] = reactive(False, init=False)

    def __init__(self) -> None:
        super().__init__(id="debugger")
        self.trace: Trace | None = None
        self.timeline: Timeline | None = None
        self.breakpoints: set[int] = set()
        self._views: dict[tuple[int, int], GraphView] = {}
        self._pending: tuple[Trace, int, int | None] | None = None
        self._notes_shown: Trace | None = None
        self._shown = -10  # the position the panes show

    # -- layout ----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        # Take the breakpoint classes now, from the terminal's size, rather than at the
        # first resize: that would restyle every pane once more before the first paint.
        width, height = self.app.size
        for breakpoints, value in ((self.HORIZONTAL_BREAKPOINTS, width),
                                   (self.VERTICAL_BREAKPOINTS, height)):
            chosen = [name for limit, name in breakpoints if value >= limit][-1:]
            for _, name in breakpoints:
                self.set_class(name in chosen, name, update=False)
        yield StepHeader(id="header")
        yield PassBar(id="passbar")
        with Horizontal(id="top"):
            yield NodeTable(id="nodes")
            yield TopoList(id="topo")
        with Horizontal(id="bottom"):
            yield StepDetail(id="detail")
            with TabbedContent(id="side"):
                with TabPane("Source", id="tab-source"):
                    yield SourceView(id="source")
                with TabPane("Notes", id="tab-notes"):
                    yield VerticalScroll(id="notes-scroll")
                with TabPane("Output", id="tab-output"):
                    with VerticalScroll(id="output-scroll"):
                        yield Static("", id="output", markup=False)
                with TabPane("Checks", id="tab-checks"):
                    yield ChecksPane(id="checks")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        # The tab strip would take ←/→ for itself; the panes are switched with `t`.
        for tabs in self.query(Tabs):
            tabs.can_focus = False
        if self._pending is not None:
            self._load_pending()
        elif self.trace is None:  # a trace may have arrived already: then keep it
            self.query_one(StepDetail).show(Text("No trace loaded.", style="dim"))

    def show_loading(self, path) -> None:
        if self.query(StepDetail) and self.trace is None:
            self.query_one(StepDetail).show(Text(f"Recording {Path(path).name} …", style="dim"))
            self.query_one(StepHeader).show(Path(path).name, "loading")

    def _load_pending(self) -> None:
        if self._pending is not None:
            trace, position, select = self._pending
            self._pending = None
            self.load_trace(trace, position, select)

    # -- the trace -------------------------------------------------------------------------
    @property
    def total(self) -> int:
        """The number of steps: one per event, plus the error as a last step if it raised."""
        if self.trace is None:
            return 0
        return len(self.trace) + (1 if self.trace.error is not None else 0)

    @property
    def at_error(self) -> bool:
        return self.trace is not None and self.trace.error is not None and self.position > len(self.trace)

    def load_trace(self, trace: Trace, position: int = 0, select: int | None = None) -> None:
        """Show `trace` at step `position` (clamped), keeping breakpoints that still exist."""
        if not self.query("#output"):  # the panes are not composed yet: try once they are
            self._pending = (trace, position, select)
            self.call_after_refresh(self._load_pending)
            return
        self.trace = trace
        self.timeline = Timeline(trace)
        self._views.clear()
        self.breakpoints = {n for n in self.breakpoints if n < trace.node_count}
        self.query_one(NodeTable).breakpoints = self.breakpoints
        self._notes_shown = None
        if self.query_one("#side", TabbedContent).active == "tab-notes":
            self.call_later(self.show_notes)
        else:  # off the path to the first paint: Markdown is slow to import and parse
            self.set_timer(0.5, self.show_notes)
        self.query_one(NodeTable).flagged = set()
        self.query_one(ChecksPane).show_unavailable(
            "The gradient doctor has not run on this trace: press d to run it.")
        if self.query_one("#side", TabbedContent).active == "tab-checks":
            self.call_later(self.action_checks)
        output = trace.output or "(the scenario printed nothing)"
        self.query_one("#output", Static).update(Text(output))
        self.position = -1  # force the watcher
        self._shown = -10
        self.goto(position, select=select)

    async def show_notes(self) -> None:
        """Render the lesson notes (the scenario docstring after its title) as Markdown."""
        trace = self.trace
        if trace is None or self._notes_shown is trace:
            return
        self._notes_shown = trace
        from textual.widgets import Markdown

        scroll = self.query_one("#notes-scroll", VerticalScroll)
        await scroll.remove_children()
        await scroll.mount(Markdown(
            trace.notes or "*This scenario has no lesson notes: write them in its docstring, "
            "after the title line.*", id="notes"))

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "tab-notes":
            self.call_later(self.show_notes)
        elif event.pane.id == "tab-checks":
            self.call_later(self.action_checks)

    # -- the gradient doctor -----------------------------------------------------------------
    def action_checks(self) -> None:
        """Show the Checks tab, and run the doctor on this trace's scenario once."""
        if self.trace is None:
            return
        if self.query_one("#side", TabbedContent).active != "tab-checks":
            self.show_tab("tab-checks")
        start_checks = getattr(self.app, "start_checks", None)
        if start_checks is not None:
            start_checks()

    def show_checks(self, report) -> None:
        self.query_one(ChecksPane).show_report(report)
        table = self.query_one(NodeTable)
        table.flagged = {n for n in report.nodes if self.trace and n < self.trace.node_count}
        table.refresh()

    def on_checks_pane_finding_chosen(self, event: ChecksPane.FindingChosen) -> None:
        finding = event.finding
        if self.trace is None:
            return
        self.goto(min(finding.step + 1, self.total), select=finding.node)
        self.show_tab("tab-source")
        self._show_finding_source(finding)
        self.notify(f"{finding.title}: {finding.message}", timeout=8)

    def _show_finding_source(self, finding) -> None:
        """The source pane at the finding's own line, marked `!`: the scenario's line, or
        the line of the `_backward` closure it names."""
        trace = self.trace
        if not finding.line:
            return
        where = f"{short_path(finding.file)}:{finding.line}  {finding.title}"
        if Path(finding.file).resolve() == Path(trace.scenario).resolve():
            self.query_one(SourceView).show(("finding", finding.line), where,
                                            tuple(trace.source.splitlines()), 1,
                                            {finding.line: "!"})
            return
        for closure in trace.closures:
            last = closure.first_line + len(closure.lines)
            if closure.filename == finding.file and closure.first_line <= finding.line < last:
                self.query_one(SourceView).show(("finding", finding.file, finding.line), where,
                                                closure.lines, closure.first_line,
                                                {finding.line: "!"})
                return

    def view_at(self, pass_index: int) -> GraphView | None:
        forward, backward = views_for(self.trace, pass_index)
        if forward is None and backward is None:
            return None
        key = (forward.index if forward else -1, backward.index if backward else -1)
        view = self._views.get(key)
        if view is None:
            view = GraphView.build(self.trace, forward, backward)
            if len(self._views) > 8:
                self._views.clear()
            self._views[key] = view
        return view

    # -- moving ------------------------------------------------------------------------------
    def goto(self, position: int, select: int | None = None) -> None:
        if self.trace is None:
            return
        position = max(0, min(position, self.total))
        self._select = select
        if position == self.position:
            self.watch_position(position)
        self.position = position

    def watch_position(self, position: int) -> None:
        if self.trace is None or self.timeline is None or position < 0:
            return
        trace, timeline = self.trace, self.timeline
        timeline.seek(min(position, len(trace)))
        event_index = timeline.position - 1 if timeline.position else None
        pass_ = timeline.pass_
        pass_index = pass_.index if pass_ is not None else 0
        view = self.view_at(pass_index)
        marks: dict[int, str] = {}
        follow = getattr(self, "_select", None)
        self._select = None
        error = self.at_error
        if event_index is not None and not error:
            kind = trace.kind(event_index)
            nid = trace.event_node(event_index)
            if kind is EventKind.BACKWARD:
                for w in trace.writes(event_index):
                    marks[w.node] = "acc"
                marks[nid] = "run"
            else:
                marks[nid] = "new" if kind is EventKind.CREATE else "set"
            if follow is None:
                follow = nid
        running = (event_index is not None and not error
                   and trace.kind(event_index) is EventKind.BACKWARD)
        single = abs(position - self._shown) == 1
        self._shown = position
        self.query_one(NodeTable).show(view, timeline.data, timeline.grad, timeline.created,
                                       marks, follow, single)
        self.query_one(TopoList).show(view, timeline.position, running, marks, timeline.grad,
                                      single)
        self.query_one(PassBar).show(trace, pass_index, error)
        self._show_header(pass_, event_index)
        self._show_detail(event_index)
        self._show_source(event_index)
        self._refresh_keys()

    def _refresh_keys(self) -> None:
        """Grey out the keys that cannot run, redrawing the footer only when that changes."""
        state = (self.position <= 0, self.position >= self.total, self._next_pass_start() is None,
                 self.query_one(NodeTable).selected_node is None, self.classes)
        if state != getattr(self, "_key_state", None):
            self._key_state = state
            self.refresh_bindings()

    def _show_header(self, pass_, event_index: int | None) -> None:
        trace = self.trace
        short = ""
        if self.at_error:
            where = f"✗ {trace.error.type} · step {self.position}/{self.total}"
        elif pass_ is None or event_index is None:
            where = f"start · step 0/{self.total}"
        else:
            where = (f"{pass_.kind} pass {pass_.index + 1}/{len(trace.passes)} · "
                     f"{event_index - pass_.start + 1}/{len(pass_)} in pass · "
                     f"step {self.position}/{self.total}")
            short = f"{pass_.kind} {pass_.index + 1}/{len(trace.passes)} · {self.position}/{self.total}"
        self.query_one(StepHeader).show(trace.title or Path(trace.scenario).name, where, short)

    def _show_detail(self, event_index: int | None) -> None:
        trace, timeline = self.trace, self.timeline
        detail = self.query_one(StepDetail)
        if self.at_error:
            detail.show(render_error(self.position, self.total, trace.error))
        elif event_index is None:
            detail.show(render_start(self.total, trace.title))
        else:
            exp = explain(trace, timeline.data, timeline.grad, event_index)
            closure = trace.closure_of(event_index)
            closure_file = Path(closure.filename).name if closure is not None else ""
            text = render_explanation(self.position, self.total, exp,
                                      trace.line_of(event_index), closure_file)
            touched = [exp.node] + [c.target for c in exp.contributions]
            for nid in dict.fromkeys(touched):
                for name, value in (("data", timeline.data[nid]), ("grad", timeline.grad[nid])):
                    if not math.isfinite(value):
                        text.append(f"\n  ⚠ {trace.label(nid)}.{name} is {value}: not a finite "
                                    "number, and everything computed from it will not be either",
                                    style="bold reverse")
            detail.show(text)

    def redraw_source(self) -> None:
        if self.trace is None or self.timeline is None:
            return
        self.query_one(SourceView).redraw()
        self._show_source(self.timeline.position - 1 if self.timeline.position else None)

    def _show_source(self, event_index: int | None) -> None:
        trace = self.trace
        source = self.query_one(SourceView)
        lines = tuple(trace.source.splitlines())
        name = Path(trace.scenario).name
        if not lines:
            source.show("none", f"{name}: no source in this trace", (), 1, {})
            return
        if self.at_error:
            line = trace.error.line
            marked = {line: "✗"} if line else {}
            source.show(("error", line), f"{name}:{line or '?'}  raised {trace.error.type}",
                        lines, 1, marked)
            return
        if event_index is None:
            source.show("start", name, lines, 1, {})
            return
        kind = trace.kind(event_index)
        closure_index = trace.closure_index(event_index)
        if kind is EventKind.BACKWARD and closure_index is not None:
            closure = trace.closures[closure_index]
            marked = {w.line: "▶" for w in trace.writes(event_index) if w.line}
            nid = trace.event_node(event_index)
            op = trace.op(nid)
            title = (f"{trace.label(nid)}._backward ({op or 'leaf'}) · "
                     f"{short_path(closure.filename)}:{closure.first_line}")
            if closure.default:
                title += "  (the default no-op)"
            source.show(("closure", closure_index, tuple(sorted(marked))), title,
                        closure.lines, closure.first_line, marked)
            return
        line = trace.line_of(event_index)
        marked = {line: "▶"} if line else {}
        what = {EventKind.CREATE: "made here", EventKind.GRAD: "seeded here"}.get(kind, "written here")
        source.show(("scenario", line), f"{name}:{line or '?'}  {what}", lines, 1, marked)

    # -- actions -----------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in FORWARD_ACTIONS | BACKWARD_ACTIONS | {"breakpoint", "find", "checks"}:
            if self.trace is None:
                return None
            if action in FORWARD_ACTIONS and self.position >= self.total:
                return None
            if action in BACKWARD_ACTIONS and self.position <= 0:
                return None
            if action == "next_pass" and self._next_pass_start() is None:
                return None
            if action == "breakpoint" and self.query_one(NodeTable).selected_node is None:
                return None
        if action == "toggle_panes":
            return not self.has_class("-wide") or not self.has_class("-tall")
        return True

    def action_next(self) -> None:
        self.goto(self.position + 1)

    def action_prev(self) -> None:
        self.goto(self.position - 1)

    def action_start(self) -> None:
        self.goto(0)

    def action_end(self) -> None:
        self.goto(self.total)

    def _next_pass_start(self) -> int | None:
        trace = self.trace
        if trace is None:
            return None
        if self.position == 0:
            return 1 if len(trace) else None
        current = trace.pass_at(min(self.position, len(trace)) - 1)
        nxt = current.index + 1 if current is not None else len(trace.passes)
        if nxt < len(trace.passes):
            return trace.passes[nxt].start + 1
        return self.total if self.at_error is False and trace.error is not None else None

    def action_next_pass(self) -> None:
        target = self._next_pass_start()
        if target is not None:
            self.goto(target)

    def action_prev_pass(self) -> None:
        trace = self.trace
        if trace is None or self.position == 0:
            return
        current = trace.pass_at(min(self.position, len(trace)) - 1)
        if current is None:
            self.goto(0)
            return
        first = current.start + 1
        if self.position > first:
            self.goto(first)
        elif current.index > 0:
            self.goto(trace.passes[current.index - 1].start + 1)
        else:
            self.goto(0)

    def _hits(self, i: int) -> bool:
        """Does event `i` touch a breakpoint: its `_backward` runs or its grad is written?"""
        trace, bps = self.trace, self.breakpoints
        kind = trace.kind(i)
        if kind in (EventKind.BACKWARD, EventKind.GRAD) and trace.event_node(i) in bps:
            return True
        return kind is EventKind.BACKWARD and any(n in bps for n in trace.grad_targets(i))

    def action_continue(self) -> None:
        if self.trace is None:
            return
        if self.breakpoints:
            for i in range(self.position, len(self.trace)):
                if self._hits(i):
                    self.goto(i + 1)
                    return
        self.goto(self.total)
        self.notify("No breakpoint ahead: ran to the end." if self.breakpoints
                    else "No breakpoints set (b sets one): ran to the end.", timeout=3)

    def action_continue_back(self) -> None:
        if self.trace is None:
            return
        if self.breakpoints:
            for i in range(min(self.position, len(self.trace)) - 2, -1, -1):
                if self._hits(i):
                    self.goto(i + 1)
                    return
        self.goto(0)
        self.notify("No breakpoint behind: back at the start.", timeout=3)

    def action_breakpoint(self) -> None:
        table = self.query_one(NodeTable)
        nid = table.selected_node
        if nid is None or self.trace is None:
            return
        label = self.trace.label(nid)
        if nid in self.breakpoints:
            self.breakpoints.discard(nid)
            self.notify(f"Breakpoint on {label} removed.", timeout=2)
        else:
            self.breakpoints.add(nid)
            self.notify(f"Breakpoint on {label}: c stops when its _backward runs or its grad "
                        "changes.", timeout=3)
        table.refresh()

    def action_find(self) -> None:
        if self.trace is not None:
            from mgtui.widgets.dialogs import FindScreen

            self.app.push_screen(FindScreen(), self.find)

    def find(self, query: str | None) -> bool:
        """Select the next node of the current graph labelled `query` (exactly, else
        containing it, case-insensitively). Returns whether one was found."""
        if not query or self.trace is None:
            return False
        table = self.query_one(NodeTable)
        view, rows = table.view, table.row_count
        created = self.trace.node_count  # every row, made yet or not
        if view is None or not rows:
            return False
        trace = self.trace
        order = [(table.cursor + 1 + k) % rows for k in range(rows)]
        needle = query.lower()
        for test in (lambda s: s == query, lambda s: needle in s.lower()):
            for row in order:
                if test(trace.label(view.row_node(row, created))):
                    table.set_cursor(row, center=True)
                    return True
        elsewhere = trace.find(query)
        if elsewhere:
            self.notify(f"{query} is not in the current graph: it is node {elsewhere[0]} "
                        "(ctrl+p → go to node takes you there).", severity="warning")
        else:
            self.notify(f"No node labelled {query!r} here.", severity="warning")
        return False

    def goto_node(self, nid: int) -> None:
        """Select node `nid`; if it is not in the current graph, go to the step that made it."""
        table = self.query_one(NodeTable)
        row = table.view.row_of(nid, self.trace.node_count) if table.view is not None else None
        if row is not None:
            table.set_cursor(row, center=True)
            return
        made = self.trace.created_at(nid)
        if made is not None:
            self.goto(made + 1, select=nid)

    def action_help(self) -> None:
        """The help screen, built from BINDINGS: the keys of each action on one line."""
        keys: dict[str, list[str]] = {}
        for binding in self.BINDINGS:
            shown = (binding.key_display or binding.key).replace("_", " ").replace(",", " / ")
            keys.setdefault(binding.action, []).append(shown)
        rows = []
        seen = set()
        for binding in self.BINDINGS:
            if binding.action in seen:
                continue
            seen.add(binding.action)
            rows.append((" / ".join(keys[binding.action]),
                         HELP.get(binding.action, binding.description)))
        rows.append(("ctrl+p", "command palette: every action; go to step N, pass N, node"))
        rows.append(("↑ ↓ pgup pgdn", "move the selection in the node table (when focused)"))
        from mgtui.widgets.dialogs import HelpScreen

        self.app.push_screen(HelpScreen(rows))

    def action_toggle_panes(self) -> None:
        self.panes_open = not self.panes_open

    def watch_panes_open(self, open_: bool) -> None:
        self.set_class(open_, "-panes")

    def action_next_tab(self) -> None:
        side = self.query_one("#side", TabbedContent)
        current = side.active if side.active in SIDE_TABS else SIDE_TABS[0]
        side.active = SIDE_TABS[(SIDE_TABS.index(current) + 1) % len(SIDE_TABS)]
        if not (self.has_class("-wide") and self.has_class("-tall")):
            self.panes_open = True

    def show_tab(self, tab: str) -> None:
        self.query_one("#side", TabbedContent).active = tab
        if not (self.has_class("-wide") and self.has_class("-tall")):
            self.panes_open = True

    def on_resize(self) -> None:
        self._refresh_keys()

    def on_node_table_selected(self, event: NodeTable.Selected) -> None:
        self._refresh_keys()
