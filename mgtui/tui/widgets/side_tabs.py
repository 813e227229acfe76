"""The debugger screen's side tabs: Source, Notes (the lesson notes, as Markdown), Output
(what the scenario printed) and Checks (the gradient doctor's progress and report, and
its findings to go to). `SideTabs` is an object the `DebuggerScreen` holds.
"""

from __future__ import annotations

from operator import methodcaller
from typing import TYPE_CHECKING, Callable

from rich.text import Text
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import MountError
from textual.widget import Widget
from textual.widgets import Static

from mgtui.session import StepState
from mgtui.tui.messages import ChecksDone, ChecksFailed, ChecksProgress, RunChecks
from mgtui.safe import bounded, inert_line
from mgtui.tui.widgets.node_table import NodeTable

if TYPE_CHECKING:  # (imported with the panes: in the compact layout, after the first paint)
    from textual.widgets import TabbedContent

    from mgtui.tui.widgets.checks import ChecksPane
    from mgtui.tui.widgets.source_view import SourceView
    from mgtui.tui.widgets.topo_list import TopoList

NOT_RUN = "The gradient doctor has not run on this trace: press d to run it."
OUTPUT_PANE_BUDGET = 40_000  # characters of scenario output in the Output pane


def side_panes() -> Widget:
    """The side tabs' panes: Source, Notes, Output and Checks. Their modules (the tabs,
    the Checks pane's lists) are imported here, when the panes are made: in the compact
    layout after the first paint."""
    from textual.widgets import TabbedContent, TabPane

    from mgtui.tui.widgets.checks import ChecksPane
    from mgtui.tui.widgets.source_view import SourceView

    side = TabbedContent(id="side")
    for pane in (TabPane("Source", SourceView(id="source"), id="tab-source"),
                 TabPane("Notes", VerticalScroll(id="notes-scroll"), id="tab-notes"),
                 TabPane("Output", VerticalScroll(Static("", id="output", markup=False),
                                                  id="output-scroll"), id="tab-output"),
                 TabPane("Checks", ChecksPane(id="checks"), id="tab-checks")):
        side.compose_add_child(pane)
    return side


class SideTabs:
    """What the side tabs (and the topo list beside the table) show, and the moves they
    make. It reads the `screen`'s `session`, `state` and `trace`, moves with its `move`,
    and opens the panes the compact layout hides (`open_panes`). The panes may not be
    mounted yet (the compact layout mounts them after the first paint): what they are
    to show is kept until they are.

    Its state: `_notes_shown`, the notes on screen; `_output_shown`, the Output pane and
    the text it shows; `_checks_status`, how the Checks pane shows the doctor's status."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self._notes_shown: str | None = None  # the notes on screen (not their trace)
        self._output_shown: tuple[int, str] | None = None  # (the pane, the text it shows)
        self._checks_status: Callable[[ChecksPane], None] = methodcaller(
            "show_unavailable", reason=NOT_RUN)

    def reset(self, tab: str) -> None:
        """A new trace is on screen, on tab `tab`: its notes, its output, and no checks."""
        screen = self.screen
        self._notes_shown = None
        if tab == "notes":
            screen.call_later(self.show_notes)
        else:  # off the path to the first paint: Markdown is slow to import and parse
            screen.set_timer(0.5, self.show_notes)
        screen.query_one(NodeTable).flagged = frozenset()
        self._checks_status = methodcaller("show_unavailable", reason=NOT_RUN)
        self.panes_in()
        if tab == "checks":
            screen.call_later(self.checks)

    def panes_in(self) -> None:
        """Set up the side panes once they are mounted: they show the trace's output and
        the doctor's status, and the tab strip leaves ←/→ alone (`t` switches tabs)."""
        for tabs in self.screen.query("Tabs"):
            tabs.can_focus = False
        if self.screen.trace is None or not self.show_output():
            return
        self._show_checks(self._checks_status)

    def show(self, state: StepState, single: bool) -> None:
        """The topo list and the side tabs at `state`, once they are mounted."""
        screen = self.screen
        topo = screen.query_one_optional("TopoList")
        if topo is not None:
            topo.show(state, single)
        source = screen.query_one_optional("SourceView")
        if source is not None:
            source.source = state.source
        side = screen.query_one_optional("#side")
        if side is not None and side.active != f"tab-{state.position.tab}":
            switching = bool(side.active)  # not the first tab of panes just mounted
            try:
                side.active = f"tab-{state.position.tab}"
            except (ValueError, NoMatches):  # its tab strip is still being mounted: once it is
                screen.call_after_refresh(self.show, state, single)
                return
            if switching:  # a tab the user asked for: show it in the compact layout too
                screen.open_panes()

    def redraw_source(self) -> None:
        source = self.screen.query_one_optional("SourceView")
        if source is not None:
            source.redraw()

    def show_output(self) -> bool:
        """Show the trace's output in the Output pane (False if it is not mounted yet).
        A recording's trace grows: its output with it."""
        trace, output = self.screen.trace, self.screen.query_one_optional("#output", Static)
        if trace is None or output is None:
            return False
        if self._output_shown != (id(output), trace.output):
            self._output_shown = (id(output), trace.output)
            # a pane of text wraps and measures every line it holds: keep it to a budget
            output.update(Text(bounded(trace.output, OUTPUT_PANE_BUDGET)
                               or "(the scenario printed nothing)"))
        return True

    def _show_checks(self, show: Callable[[ChecksPane], None]) -> None:
        """Show the doctor's status in the Checks pane: now, or once it is mounted."""
        self._checks_status = show
        pane = self.screen.query_one_optional("#checks")
        if pane is not None:
            show(pane)

    async def show_notes(self) -> None:
        """Render the lesson notes (the scenario docstring after its title) as Markdown."""
        trace = self.screen.trace
        scroll = self.screen.query_one_optional("#notes-scroll", VerticalScroll)
        if trace is None or scroll is None or self._notes_shown == trace.notes:
            return
        if not scroll.is_mounted:  # the side panes are still coming in: once they are
            self.screen.call_after_refresh(self.show_notes)
            return
        self._notes_shown = trace.notes
        from textual.widgets import Markdown

        try:
            await scroll.remove_children()
            await scroll.mount(Markdown(
                trace.notes or "*This scenario has no lesson notes: write them in its "
                "docstring, after the title line.*", id="notes"))
        except MountError:  # the pane went while this waited (the app is closing)
            self._notes_shown = None

    # -- the tabs ----------------------------------------------------------------------------
    def activated(self, event: TabbedContent.TabActivated) -> None:
        """The user chose a tab in the tab strip."""
        if event.tabbed_content.active != event.pane.id:
            return  # stale: another tab was chosen since (else two tabs would ping-pong)
        tab = (event.pane.id or "").removeprefix("tab-")
        session = self.screen.session
        if session is not None and session.position.tab != tab:
            self.screen.state = session.show_tab(tab)
        if tab == "notes":
            self.screen.call_later(self.show_notes)
        elif tab == "checks":
            self.screen.call_later(self.checks)

    def next_tab(self) -> None:
        if self.screen.session is not None:
            self.screen.move(self.screen.session.next_tab())
        self.screen.open_panes()

    def show_tab(self, tab: str) -> None:
        """Show a side tab (`tab-source`, `tab-notes`, …), opening the panes if they are hidden."""
        side = self.screen.query_one_optional("#side")
        if self.screen.session is not None:
            self.screen.move(self.screen.session.show_tab(tab.removeprefix("tab-")))
        elif side is not None:
            side.active = tab
        self.screen.open_panes()

    # -- the gradient doctor -----------------------------------------------------------------
    def checks(self) -> None:
        """Show the Checks tab, and ask the app to run the doctor on this trace once."""
        session = self.screen.session
        if session is None:
            return
        if session.position.tab != "checks":
            self.show_tab("tab-checks")
        self.screen.post_message(RunChecks())

    def checks_progress(self, message: ChecksProgress) -> None:
        self._show_checks(methodcaller("show_running", done=message.done,
                                       total=message.total, phase=message.phase))

    def checks_done(self, message: ChecksDone) -> None:
        screen, report = self.screen, message.report
        self._show_checks(methodcaller("show_report", report=report))
        count = screen.trace.node_count if screen.trace is not None else 0
        screen.query_one(NodeTable).flagged = frozenset(n for n in report.nodes if n < count)
        if screen.session is not None:
            screen.move(screen.session.set_findings(report.findings))
        n = len(report.findings)
        unchecked = getattr(report, "unchecked", None)
        screen.notify(f"Checks: {n} problem{'s' if n != 1 else ''} found." if n
                      else f"Checks: no problems found, but {inert_line(unchecked)}."
                      if unchecked else "Checks: no problems found.",
                      severity="warning" if n or unchecked else "information",
                      timeout=4, markup=False)

    def checks_failed(self, message: ChecksFailed) -> None:
        self._show_checks(methodcaller("show_unavailable", reason=message.message))

    def finding_chosen(self, event: ChecksPane.FindingChosen) -> None:
        if self.screen.session is not None:
            self.screen.move(self.screen.session.goto_finding(event.finding))
            self.screen.open_panes()
