"""The debugger screen: the panes of one trace, and the keys that move through its steps.

The screen turns keys into calls on a headless `Session`; each call returns a
`StepState`, which the screen's `state` reactive hands to every pane. Panes never read
the trace on their own. The screen holds its side tabs (Source, Notes, Output, Checks:
`mgtui.tui.widgets.side_tabs`) and its self-study quiz (`self_quiz`); how it lays itself
out is `debugger_layout`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Static

from mgtui.settings.bindings import DEBUGGER_KEYS
from mgtui.safe import inert
from mgtui.session import Header, Session, StepState
from mgtui.trace import Trace
from mgtui.tui.messages import ChecksDone, ChecksFailed, ChecksProgress
from mgtui.tui.widgets.debugger_layout import HUGE, TableRoom, is_huge, take_breakpoints
from mgtui.tui.widgets.deferred import LatePanes
from mgtui.tui.widgets.key_footer import KeyFooter
from mgtui.tui.widgets.keys import bindings_of
from mgtui.tui.widgets.node_table import NodeTable
from mgtui.tui.widgets.pass_bar import PassBar
from mgtui.tui.widgets.screen_views import open_find, open_help, open_notes, screen_help_rows
from mgtui.tui.widgets.self_quiz import SelfQuiz
from mgtui.tui.widgets.side_tabs import NOT_RUN, OUTPUT_PANE_BUDGET, SideTabs, side_panes
from mgtui.tui.widgets.step_detail import StepDetail
from mgtui.tui.widgets.step_header import StepHeader

if TYPE_CHECKING:  # (imported with the panes: `side_panes`, `graph_pane`, `topo_list`)
    from textual.widgets import TabbedContent

    from mgtui.tui.widgets.checks import ChecksPane
    from mgtui.tui.widgets.graph import GraphPane
    from mgtui.tui.widgets.topo_list import TopoList

__all__ = ["HUGE", "MOVES", "NOT_RUN", "OUTPUT_PANE_BUDGET", "DebuggerScreen"]


def graph_pane() -> GraphPane:
    """The Graph pane. Its module is imported here, when the pane is made: after the
    first paint but on a huge screen."""
    from mgtui.tui.widgets.graph import GraphPane

    return GraphPane(id="graph")


def topo_list() -> TopoList:
    """The topo list, imported when it is made: after the first paint in the compact
    layout."""
    from mgtui.tui.widgets.topo_list import TopoList

    return TopoList(id="topo")

# The session's moves, by action name: each action is the call on the session.
MOVES = {
    "next": Session.next, "prev": Session.prev, "start": Session.start, "end": Session.end,
    "next_pass": Session.next_pass, "prev_pass": Session.prev_pass,
    "continue": Session.continue_forward, "continue_back": Session.continue_back,
    "breakpoint": Session.toggle_breakpoint,
}


def session_move(name: str):
    """The action `name` of `MOVES`: its call on the screen's session, as the user's move."""
    move = MOVES[name]

    def action(self: DebuggerScreen) -> None:
        if self.session is not None:
            self.move(move(self.session))

    action.__name__ = action.__qualname__ = f"action_{name}"
    action.__doc__ = f"`Session.{move.__name__}`, as the user's move."
    return action


class DebuggerScreen(Screen[None]):
    """All the panes of one trace. Empty until `load_trace` is called."""

    AUTO_FOCUS = "#nodes"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (18, "-medium"), (34, "-tall")]

    KEYS = DEBUGGER_KEYS  # the keys of the screen, for the help (`BINDINGS` from them)
    GRAPH_LATER = True  # the hidden Graph pane mounted after the first paint (`LatePanes`)
    BINDINGS = bindings_of(DEBUGGER_KEYS)

    state: reactive[StepState | None] = reactive(None, init=False, repaint=False)
    panes_open: reactive[bool] = reactive(False, init=False)

    def __init__(self, keymap: dict[str, str] | None = None) -> None:
        super().__init__(id="debugger")
        self.keymap = keymap or {}  # the user's keys by binding id, for the help
        self.session: Session | None = None
        self._pending: tuple[Trace, int, int | None] | None = None
        self._mounted = False
        self._key_state: tuple | None = None  # what the footer's greying was worked out from
        self.table_room = TableRoom(self)  # the table's rows, or the Graph pane in its place
        self.moved_at = 0.0  # time.monotonic() of the user's last move
        self.quiz = False  # quiz mode for self-study (`mgtui FILE --quiz`)
        # `mgtui diff`: the comparison's lines, and where it found the first difference
        self.comparison: tuple[str, ...] = ()
        self.difference: tuple[int, int | None, str] | None = None
        self._open_at_difference = False
        self.side_tabs = SideTabs(self)  # Source, Notes, Output, Checks (and the topo list)
        self.late_panes = LatePanes(self)  # the panes mounted after the first paint
        self.self_quiz = SelfQuiz(self)  # quiz mode for self-study: the prompt, the score

    # -- layout ----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        take_breakpoints(self, self.app.size)
        # The panes hidden in the compact layout (80×24) come in after the first paint,
        # their modules with them (`mount_later`); so does the Graph pane, hidden (until
        # `m`) but on a huge screen.
        full = self._full_layout()
        graph_now = not self.GRAPH_LATER or self.has_class("-huge")
        self.late_panes.hold(((topo_list, "#nodes"), full), ((graph_pane, "#top"), graph_now),
                             ((side_panes, "#detail"), full))
        yield StepHeader(id="header")
        yield Static("", id="quiz-line", markup=False)
        yield PassBar(id="passbar")
        with Horizontal(id="top"):
            yield NodeTable(id="nodes")
            if full:
                yield topo_list()
        if graph_now:
            yield graph_pane()
        with Horizontal(id="bottom"):
            yield StepDetail(id="detail")
            if full:
                yield side_panes()
        if self.comparison:
            yield Static("\n".join(self.comparison), id="comparison", markup=False)
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self._mounted = True
        self.late_panes.mount()
        self.show_recording(self._recording)
        self.side_tabs.panes_in()
        if self._pending is not None:
            self._load_pending()
        elif self.session is None:  # a trace may have arrived already: then keep it
            self.query_one(StepDetail).show_message(Text("No trace loaded.", style="dim"))

    def preload(self, trace: Trace, position: int = 0) -> None:
        """Show `trace` from the first paint on: called before the screen is mounted."""
        self._pending = (trace, position, None)

    def show_comparison(self, lines, difference: tuple[int, int | None, str] | None) -> None:
        """Show a comparison with another run (`mgtui diff`) in a pane of its own, and open
        at its first difference (`Session.goto_difference`): called before the screen is
        mounted."""
        self.comparison = tuple(inert(line) for line in lines)
        self.difference = difference
        self._open_at_difference = difference is not None

    def show_loading(self, path) -> None:
        if self.query(StepDetail) and self.session is None:
            self.query_one(StepDetail).show_message(Text(f"Recording {Path(path).name} …",
                                                         style="dim"))
            self.query_one(StepHeader).header = Header(Path(path).name, "loading")

    def _load_pending(self) -> None:
        if self._pending is not None:
            trace, position, select = self._pending
            self._pending = None
            self.load_trace(trace, position, select)

    # -- what tests, the palette and the app read -----------------------------------------------
    @property
    def trace(self) -> Trace | None:
        return self.session.trace if self.session is not None else None

    @property
    def position(self) -> int:
        return self.state.step if self.state is not None else 0

    @property
    def total(self) -> int:
        return self.session.total if self.session is not None else 0

    @property
    def at_error(self) -> bool:
        return self.state is not None and self.state.at_error

    @property
    def selected(self) -> int | None:
        return self.state.node if self.state is not None else None

    @property
    def graph_shown(self) -> bool:
        """The Graph pane in place of the node table (m: `show_graph`)."""
        return self.table_room.graph_shown

    _recording = ""  # what the header says about a recording still going on

    def show_recording(self, text: str) -> None:
        """Say in the header how far a recording still going on has got ("" when done)."""
        self._recording = text
        for header in self.query(StepHeader):
            header.recording = text

    # -- the trace -------------------------------------------------------------------------
    def load_trace(self, trace: Trace, position: int = 0, select: int | None = None) -> None:
        """Show `trace` at step `position` (clamped), keeping breakpoints that still exist.
        The Graph pane's turn (`T`) was for the lesson before: another lesson is laid
        out by its own size again."""
        if not self._mounted:  # the panes are not mounted yet: try once they are
            self._pending = (trace, position, select)
            self.call_after_refresh(self._load_pending)
            return
        old = self.session
        if old is None or old.trace.scenario != trace.scenario:  # (not a reload of it)
            for graph in self.query("GraphPane"):
                graph.orientation = None
        tab = old.position.tab if old is not None else "source"
        self.session = Session(trace, breakpoints=old.breakpoints if old else (), tab=tab,
                               quiz=self.quiz)
        self.side_tabs.reset(tab)
        self.state = None  # every pane draws the new trace in full
        if self._open_at_difference and self.difference is not None:
            self._open_at_difference = False
            self.state = self.session.goto_difference(*self.difference)
        else:
            self.state = self.session.goto(position, select=select)

    def grow_trace(self, trace: Trace, wanted: int | None = None) -> None:
        """Show `trace`, the run on screen recorded further, at the same step and node:
        the session goes on from where it is instead of starting again. `wanted` is the
        step the user asked to open at, which a shorter trace could not reach yet: it is
        gone to if the user has not moved since."""
        if self.session is None or not self._mounted or self._pending is not None:
            # nothing shown yet, so nobody has moved: the step asked for, else the one
            # the first steps were to open at
            pending = self._pending[1] if self._pending is not None else self.position
            self.load_trace(trace, pending if wanted is None else wanted, select=self.selected)
            return
        if wanted is not None and self.position != min(wanted, self._reachable()):
            wanted = None  # the user has moved: stay with them
        state = self.session.grow(trace)
        if wanted is not None and wanted != state.position.step:
            state = self.session.goto(wanted)
        self.state = None  # every pane draws the longer trace in full
        self.state = state
        self.side_tabs.show_output()

    def _reachable(self) -> int:
        """The last step of the trace on screen (or about to be)."""
        trace = self._pending[0] if self._pending is not None else self.trace
        if trace is None:
            return 0
        return len(trace) + (1 if trace.error is not None else 0)

    # -- handing a state to the panes -------------------------------------------------------
    def watch_state(self, old: StepState | None, new: StepState | None) -> None:
        if new is None:
            return
        single = old is not None and abs(new.step - old.step) <= 1
        self.query_one(NodeTable).show(new, single)
        self.table_room.fit()
        for graph in self.query("GraphPane"):  # (none before its first paint: `LatePanes`)
            graph.show(new)
        self.query_one(PassBar).passes = new.passes
        self.query_one(StepHeader).header = new.header
        self.query_one(StepDetail).detail = new.detail
        self.self_quiz.show(new)
        self.side_tabs.show(new, single)
        if new.notice is not None:
            self.notify(inert(new.notice.text), severity=new.notice.severity,
                        timeout=new.notice.timeout, markup=False)
        self._refresh_keys()

    def lay_out_ahead(self) -> Iterator[None]:
        """The Graph pane's pictures for the next step, laid out (if it shows) one form
        a `next`."""
        if self.session is not None:
            for graph in self.query("GraphPane"):
                yield from graph.lay_out_ahead(*self.session.next_centre())

    def hide_grads(self, nids: frozenset[int]) -> None:
        """Quiz mode: the grads of `nids` show as ? in every pane that shows grads."""
        self.late_panes.hidden = nids  # (for a Graph pane not mounted yet)
        for pane in (*self.query(NodeTable), *self.query("GraphPane"), *self.query("TopoList")):
            pane.hide_grads(nids)

    def action_answer(self) -> None:
        """Quiz mode (self-study): type a prediction of the grad asked for."""
        self.self_quiz.ask()

    def move(self, state: StepState) -> None:
        """Show `state`, the user's move."""
        self.moved_at = time.monotonic()  # (a recording's updates wait while the user steps)
        self.state = state

    def _refresh_keys(self) -> None:
        """Grey out the keys that cannot run, redrawing the footer only when that changes."""
        keys = (self.state.enabled if self.state is not None else None, self.classes)
        if keys != self._key_state:
            self._key_state = keys
            self.refresh_bindings()

    def _full_layout(self) -> bool:
        return self.has_class("-wide") and self.has_class("-tall")

    def open_panes(self) -> None:
        """Show the panes the compact layout hides (a tab the user asked for)."""
        self.panes_open = self.panes_open or not self._full_layout()

    # -- actions -----------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MOVES or action in ("find", "checks"):
            return True if self.state is not None and self.state.can(action) else None
        if action == "answer":  # (quiz mode only: else no key of this screen's)
            return self.self_quiz.can_answer()
        if action == "toggle_panes":
            return not self._full_layout()
        return True

    action_next = session_move("next")
    action_prev = session_move("prev")
    action_start = session_move("start")
    action_end = session_move("end")
    action_next_pass = session_move("next_pass")
    action_prev_pass = session_move("prev_pass")
    action_continue = session_move("continue")
    action_continue_back = session_move("continue_back")
    action_breakpoint = session_move("breakpoint")

    def goto(self, step: int, select: int | None = None) -> None:
        if self.session is not None:
            self.move(self.session.goto(step, select=select))

    def goto_difference(self) -> None:
        """Back to where `mgtui diff` found the first difference (`Session.goto_difference`)."""
        if self.session is not None and self.difference is not None:
            self.move(self.session.goto_difference(*self.difference))

    def goto_node(self, nid: int, to: str = "here") -> None:
        """Select node `nid`; if it is not in the current graph, go to the step that made it
        (`to`: "made" the step that made it, "backward" the step its `_backward` ran)."""
        if self.session is not None:
            self.move(self.session.goto_node(nid, to))  # type: ignore[arg-type]

    def action_find(self) -> None:
        open_find(self)

    def find(self, query: str | None) -> None:
        if self.session is not None and query:
            self.move(self.session.find(query))

    def action_notes_view(self) -> None:
        """The step's `#:` notes and the lesson notes, full screen."""
        open_notes(self)

    def action_help(self) -> None:
        """Every key that works on this screen now, and what it does."""
        open_help(self)

    def help_rows(self) -> list[tuple[str, str]]:
        return screen_help_rows(self)

    def help_texts(self) -> dict[str, str]:
        """What the help says of some keys here instead of the table's line, by id."""
        return {}

    def action_toggle_graph(self) -> None:
        """The Graph pane in place of the node table (on a huge screen: the table off)."""
        self.show_graph(not self.graph_shown)  # the pane draws once it is shown (or resized)
        pane = self.query_one_optional("GraphPane") if self.graph_shown else None
        (pane or self.query_one(NodeTable)).focus()

    def show_graph(self, shown: bool) -> None:
        """The Graph pane shown in place of the table and the topo list, or not."""
        self.table_room.show_graph(shown)

    def on_graph_pane_selected(self, event: GraphPane.Selected) -> None:
        if self.session is not None:
            self.state = self.session.select(event.nid)

    def action_toggle_panes(self) -> None:
        self.panes_open = not self.panes_open

    def watch_panes_open(self, open_: bool) -> None:
        self.set_class(open_, "-panes")

    def on_resize(self) -> None:
        self.set_class(is_huge(self.app.size), "-huge")
        self._refresh_keys()
        self.table_room.resized()

    # -- the side tabs (`SideTabs`) -----------------------------------------------------------
    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.side_tabs.activated(event)

    def action_next_tab(self) -> None:
        self.side_tabs.next_tab()

    def action_show_tab(self, tab: str) -> None:
        self.side_tabs.show_tab(f"tab-{tab}")

    def show_tab(self, tab: str) -> None:
        """Show a side tab (`tab-source`, `tab-notes`, …), opening the panes if they are hidden."""
        self.side_tabs.show_tab(tab)

    def action_checks(self) -> None:
        """Show the Checks tab, and ask the app to run the doctor on this trace once."""
        self.side_tabs.checks()

    def on_checks_progress(self, message: ChecksProgress) -> None:
        message.stop()
        self.side_tabs.checks_progress(message)

    def on_checks_done(self, message: ChecksDone) -> None:
        message.stop()
        self.side_tabs.checks_done(message)

    def on_checks_failed(self, message: ChecksFailed) -> None:
        # not stopped: the app hears it too, and lets the doctor run again
        self.side_tabs.checks_failed(message)

    def on_checks_pane_finding_chosen(self, event: ChecksPane.FindingChosen) -> None:
        self.side_tabs.finding_chosen(event)

    def on_node_table_selected(self, event: NodeTable.Selected) -> None:
        if self.session is not None:
            self.set_reactive(DebuggerScreen.state, self.session.select(event.nid))
            self._refresh_keys()
