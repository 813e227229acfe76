"""The debugger screen's side tabs: Source, Notes (the lesson notes, as Markdown), Output
(what the scenario printed) and Checks (the gradient doctor's progress and report, and
its findings to go to). A part of `DebuggerScreen`.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widget import MountError
from textual.widgets import Static, TabbedContent, Tabs

from mgtui.tui.messages import ChecksDone, ChecksFailed, ChecksProgress, RunChecks
from mgtui.safe import bounded, inert_line
from mgtui.tui.widgets.checks import ChecksPane
from mgtui.tui.widgets.node_table import NodeTable

NOT_RUN = "The gradient doctor has not run on this trace: press d to run it."
OUTPUT_PANE_BUDGET = 40_000  # characters of scenario output in the Output pane


class SideTabs:
    """What the side tabs show, and the moves they make. A mixin of `DebuggerScreen`:
    it reads the screen's `session`, `state` and `trace`, moves with its `_move`, and
    opens the panes the compact layout hides (`panes_open`, `_full_layout`).

    Its state: `_notes_shown`, the notes on screen; `_output_shown`, the Output pane and
    the text it shows; `_checks_status`, how the Checks pane shows the doctor's status
    (kept for a pane not mounted yet)."""

    def _init_side_tabs(self) -> None:
        self._notes_shown: str | None = None  # the notes on screen (not their trace)
        self._output_shown: tuple[int, str] | None = None  # (the pane, the text it shows)
        self._checks_status: Callable[[ChecksPane], None] = partial(
            ChecksPane.show_unavailable, reason=NOT_RUN)

    def _reset_side_tabs(self, tab: str) -> None:
        """A new trace is on screen, on tab `tab`: its notes, its output, and no checks."""
        self._notes_shown = None
        if tab == "notes":
            self.call_later(self.show_notes)
        else:  # off the path to the first paint: Markdown is slow to import and parse
            self.set_timer(0.5, self.show_notes)
        self.query_one(NodeTable).flagged = frozenset()
        self._checks_status = partial(ChecksPane.show_unavailable, reason=NOT_RUN)
        self._side_panes_in()
        if tab == "checks":
            self.call_later(self.action_checks)

    def _side_panes_in(self) -> None:
        """Set up the side panes once they are mounted: they show the trace's output and
        the doctor's status, and the tab strip leaves ←/→ alone (`t` switches tabs)."""
        for tabs in self.query(Tabs):
            tabs.can_focus = False
        if self.trace is None or not self._show_output():
            return
        self._show_checks(self._checks_status)

    def _show_output(self) -> bool:
        """Show the trace's output in the Output pane (False if it is not mounted yet).
        A recording's trace grows: its output with it."""
        trace, output = self.trace, self.query_one_optional("#output", Static)
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
        pane = self.query_one_optional(ChecksPane)
        if pane is not None:
            show(pane)

    async def show_notes(self) -> None:
        """Render the lesson notes (the scenario docstring after its title) as Markdown."""
        trace, scroll = self.trace, self.query_one_optional("#notes-scroll", VerticalScroll)
        if trace is None or scroll is None or self._notes_shown == trace.notes:
            return
        if not scroll.is_mounted:  # the side panes are still coming in: once they are
            self.call_after_refresh(self.show_notes)
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

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.tabbed_content.active != event.pane.id:
            return  # stale: another tab was chosen since (else two tabs would ping-pong)
        tab = (event.pane.id or "").removeprefix("tab-")
        if self.session is not None and self.session.position.tab != tab:
            self.state = self.session.show_tab(tab)
        if tab == "notes":
            self.call_later(self.show_notes)
        elif tab == "checks":
            self.call_later(self.action_checks)

    def action_next_tab(self) -> None:
        if self.session is not None:
            self._move(self.session.next_tab())
        self.panes_open = self.panes_open or not self._full_layout()

    def action_show_tab(self, tab: str) -> None:
        self.show_tab(f"tab-{tab}")

    def show_tab(self, tab: str) -> None:
        """Show a side tab (`tab-source`, `tab-notes`, …), opening the panes if they are hidden."""
        side = self.query_one_optional("#side", TabbedContent)
        if self.session is not None:
            self._move(self.session.show_tab(tab.removeprefix("tab-")))
        elif side is not None:
            side.active = tab
        self.panes_open = self.panes_open or not self._full_layout()

    # -- the gradient doctor -----------------------------------------------------------------
    def action_checks(self) -> None:
        """Show the Checks tab, and ask the app to run the doctor on this trace once."""
        if self.session is None:
            return
        if self.session.position.tab != "checks":
            self.show_tab("tab-checks")
        self.post_message(RunChecks())

    def on_checks_progress(self, message: ChecksProgress) -> None:
        message.stop()
        self._show_checks(partial(ChecksPane.show_running, done=message.done,
                                  total=message.total, phase=message.phase))

    def on_checks_done(self, message: ChecksDone) -> None:
        message.stop()
        report = message.report
        self._show_checks(partial(ChecksPane.show_report, report=report))
        count = self.trace.node_count if self.trace is not None else 0
        self.query_one(NodeTable).flagged = frozenset(n for n in report.nodes if n < count)
        if self.session is not None:
            self._move(self.session.set_findings(report.findings))
        n = len(report.findings)
        unchecked = getattr(report, "unchecked", None)
        self.notify(f"Checks: {n} problem{'s' if n != 1 else ''} found." if n
                    else f"Checks: no problems found, but {inert_line(unchecked)}." if unchecked
                    else "Checks: no problems found.",
                    severity="warning" if n or unchecked else "information",
                    timeout=4, markup=False)

    def on_checks_failed(self, message: ChecksFailed) -> None:
        # not stopped: the app hears it too, and lets the doctor run again
        self._show_checks(partial(ChecksPane.show_unavailable, reason=message.message))

    def on_checks_pane_finding_chosen(self, event: ChecksPane.FindingChosen) -> None:
        if self.session is not None:
            self._move(self.session.goto_finding(event.finding))
            self.panes_open = self.panes_open or not self._full_layout()
