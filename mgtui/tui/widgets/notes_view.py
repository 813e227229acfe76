"""The notes, full screen: the current step's `#:` notes, then the lesson notes (the
scenario's docstring), for terminals where the Notes tab is a few lines high."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label, Markdown, Static


class NotesScreen(Screen[None]):
    DEFAULT_CSS = """
    NotesScreen #notes-title { width: 1fr; background: $primary; text-style: bold; }
    NotesScreen #notes-body { height: 1fr; padding: 0 1; }
    NotesScreen #notes-step { margin-bottom: 1; }
    """
    BINDINGS = [Binding("escape,N,q", "app.pop_screen", "Back", id="notes.back")]

    def __init__(self, title: str, step: int, step_notes: tuple[str, ...], notes: str) -> None:
        super().__init__()
        self.title_text, self.step, self.step_notes, self.notes = title, step, step_notes, notes

    def compose(self) -> ComposeResult:
        yield Label(Text(f" Notes · {self.title_text}"), id="notes-title")
        with VerticalScroll(id="notes-body"):
            text = Text()
            if self.step_notes:
                text.append(f"At step {self.step}:\n", style="bold")
                for note in self.step_notes:
                    text.append("  ✎ ", style="bold")
                    text.append(note + "\n", style="italic")
            else:
                text.append(f"No #: note on the lines of step {self.step}.\n", style="dim")
            yield Static(text, id="notes-step", markup=False)
            # (Markdown renders no terminal escapes: the notes were made inert in the trace)
            yield Markdown(self.notes or "*This scenario has no lesson notes: write them in "
                           "its docstring, after the title line.*", id="notes-lesson")
        yield Footer(compact=True)
