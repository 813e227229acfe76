"""The teacher's console in a class: the roster of who is connected (`R`), and the small
questions a class asks (end the class? take over or watch?). Names come from clients
(an SSH user name, a key's comment): they reach the screen only as inert text."""

from __future__ import annotations

from typing import Iterable, Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from mgtui.safe import clip_cells, inert_line

NAME_CELLS = 24  # a name longer than this is clipped (by terminal cells)


COLUMNS = ("name", "state", "lesson", "step", "quiz", "")


def roster_table(rows: Iterable[Sequence[str]]) -> Text:
    """(name, state, lesson, step, quiz, note) per student (or the first of those), as
    columns of inert text under a bold heading (a Text, measured as wide as it is)."""
    cells = [[clip_cells(inert_line(cell), NAME_CELLS) for cell in row] for row in rows]
    count = max((len(row) for row in cells), default=3)
    headings = list(COLUMNS[:count])
    widths = [max(cell_len(row[i]) if i < len(row) else 0 for row in [headings, *cells])
              for i in range(count)]

    def line(row: list[str]) -> str:
        padded = [(str.rjust if COLUMNS[i] == "step" else str.ljust)(
            row[i] if i < len(row) else "", widths[i] + len(row[i] if i < len(row) else "")
            - cell_len(row[i] if i < len(row) else "")) for i in range(count)]
        return "  ".join(padded).rstrip()

    table = Text(line(headings), style="bold", no_wrap=True)
    for row in cells:
        table.append("\n" + line(row), style="not bold")
    return table


class RosterScreen(ModalScreen[None]):
    """Who is in the class, each one's state (following, paused, watching) and step."""

    DEFAULT_CSS = """
    RosterScreen { align: center middle; }
    #roster { width: auto; max-width: 90%; height: auto; max-height: 90%;
              border: round $accent; padding: 0 1; background: $surface;
              overflow-y: auto; }
    #roster-body { width: auto; }
    """
    BINDINGS = [Binding("escape,q,R", "dismiss", "Close", id="roster.close")]

    def __init__(self, title: str, rows: Sequence[Sequence[str]]) -> None:
        super().__init__()
        self.title_text, self.rows = title, list(rows)

    def compose(self) -> ComposeResult:
        with Vertical(id="roster"):
            yield Label(Text(self.title_text, style="bold"), id="roster-title")
            yield Static(roster_table(self.rows) if self.rows
                         else Text("nobody has joined yet"), id="roster-body")
            yield Label(Text("R or escape closes"), id="roster-hint")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


class AskScreen(ModalScreen[str | None]):
    """A question with a few answers, each on its own key; escape answers None."""

    DEFAULT_CSS = """
    AskScreen { align: center middle; }
    #ask { width: auto; max-width: 90%; height: auto; border: round $warning;
           padding: 0 1; background: $surface; }
    #ask Static { width: auto; height: auto; }
    """

    def __init__(self, question: str, answers: Sequence[tuple[str, str, str]]) -> None:
        """`answers`: (key, what it does, the value it answers)."""
        super().__init__()
        self.question, self.answers = question, list(answers)

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield Static(Text(self.question, style="bold"))
            for key, label, _value in self.answers:
                yield Static(Text.assemble((f" {key} ", "bold reverse"), " ", label))
            yield Static(Text.assemble((" escape ", "bold reverse"), " back"))

    def on_key(self, event) -> None:
        for key, _label, value in self.answers:
            if event.key == key or event.character == key:
                event.stop()
                event.prevent_default()
                self.dismiss(value)
                return
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            self.dismiss(None)


class SayScreen(ModalScreen[str | None]):
    """One line typed: the teacher's to the class (`!`), a student's prediction."""

    DEFAULT_CSS = """
    SayScreen { align: center middle; }
    #say { width: 70%; height: auto; border: round $accent; padding: 0 1;
           background: $surface; }
    #say Label { width: 1fr; }  /* the question wraps: its end (the tolerance) shows */
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="say.cancel")]

    def __init__(self, limit: int, question: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.limit = limit
        self.question = question or ("One line to the class: every header shows it until "
                                     "the next step (empty clears it)")
        self.placeholder = placeholder or "e.g. what is dL/dd here?"

    def compose(self) -> ComposeResult:
        from textual.widgets import Input

        with Vertical(id="say"):
            yield Label(Text(self.question))
            yield Input(placeholder=self.placeholder, max_length=self.limit, id="say-input")

    def on_input_submitted(self, event) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
