"""The Checks pane: the gradient doctor's findings for the loaded scenario.

The doctor runs in a worker (it re-runs the scenario); this pane shows its progress,
then one entry per finding. Choosing an entry posts `ChecksPane.FindingChosen`, and the
debugger jumps to the finding's step and node.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from mgtui.safe import inert_line


class ChecksPane(Vertical):
    DEFAULT_CSS = """
    ChecksPane { height: 1fr; }
    ChecksPane #checks-status { height: auto; padding: 0 1; }
    ChecksPane #checks-progress { height: 1; padding: 0 1; }
    ChecksPane #checks-list { height: 1fr; border: none; padding: 0; }
    ChecksPane.-idle #checks-progress { display: none; }
    """

    class FindingChosen(Message):
        """A finding was chosen: go to its step and select its node."""

        def __init__(self, finding) -> None:
            super().__init__()
            self.finding = finding

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="-idle")
        self.findings: list = []

    def compose(self) -> ComposeResult:
        yield Static(Text("The gradient doctor has not run yet.", style="dim"),
                      id="checks-status", markup=False)
        # (a total while idle: a bar of unknown total animates 15 times a second, hidden
        # or not, which every session of `mgtui serve` pays for)
        yield ProgressBar(total=1, id="checks-progress", show_eta=False)
        yield OptionList(id="checks-list")

    @property
    def status(self) -> str:
        """The status line as plain text (for tests)."""
        return str(self.query_one("#checks-status", Static).render())

    def _status(self, text: Text) -> None:
        self.query_one("#checks-status", Static).update(text)

    def show_running(self, done: int = 0, total: int = 0, phase: str = "") -> None:
        self.remove_class("-idle")
        bar = self.query_one(ProgressBar)
        bar.update(total=total or None, progress=done)
        self._status(Text(f"Checking… {phase}".rstrip(), style="bold"))

    def _idle(self) -> None:
        self.add_class("-idle")
        self.query_one(ProgressBar).update(total=1, progress=0)

    def show_unavailable(self, reason: str) -> None:
        self._idle()
        self.findings = []
        self.query_one(OptionList).clear_options()
        self._status(Text(reason, style="dim"))

    def show_report(self, report) -> None:
        """Show a `mgtui.doctor.Report`."""
        self._idle()
        self.findings = list(report.findings)
        options = self.query_one(OptionList)
        options.clear_options()
        summary = Text()
        if self.findings:
            n = len(self.findings)
            summary.append(f"✗ {n} problem{'s' if n != 1 else ''} found", style="bold reverse")
            summary.append("  (enter on one goes to its step)")
        elif getattr(report, "unchecked", None):  # never a clean bill for what was not checked
            summary.append(f"? no problems found, but {inert_line(report.unchecked)}: not a "
                           "clean bill",
                           style="bold")
        else:
            summary.append("✓ no problems found", style="bold")
        if report.error is not None:
            summary.append(f"\nchecked up to the error: {report.trace.places.error_text()}")
        if hasattr(report, "checked_passes"):
            from mgtui.tui.report import numerically

            summary.append("\n" + numerically(report), style="dim")
        for note in getattr(report, "notes", [])[:3]:
            summary.append(f"\nnote: {note}", style="dim")
        self._status(summary)
        options.add_options(Option(self._prompt(f, self._pass_of(report, f), report.trace), id=f"finding-{i}")
                            for i, f in enumerate(self.findings))
        if self.findings:
            options.highlighted = 0

    @staticmethod
    def _pass_of(report, finding) -> str:
        """` · backward pass 3/3` for a finding in a backward pass."""
        p = report.trace.pass_at(finding.step) if hasattr(report, "backward_number") else None
        if p is None or p.kind != "backward":
            return ""
        return f" · backward pass {report.backward_number(p)}/{report.backward_count}"

    @staticmethod
    def _prompt(finding, pass_text: str = "", trace=None) -> Text:
        text = Text()
        text.append(f"! {finding.title}", style="bold")
        text.append(f"  {finding.node_name} · step {finding.step + 1}{pass_text}")
        if finding.line:
            where = finding.file.rsplit("/", 1)[-1]
            if trace is not None:
                where = trace.places.place(finding.file, finding.line, where)
            else:
                where = f"{where}:{finding.line}"
            text.append(f"\n  {where}: {finding.text.strip()}", style="italic")
        text.append(f"\n  {finding.message}")
        return text

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self.findings):
            self.post_message(self.FindingChosen(self.findings[event.option_index]))
