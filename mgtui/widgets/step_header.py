"""The header line: the scenario title, the pass (kind and n/N) and the step within it."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget


class StepHeader(Widget):
    DEFAULT_CSS = """
    StepHeader { height: 1; background: $primary; color: $text; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.title_text = "mgtui"
        self.where = ""

    short = ""

    def show(self, title: str, where: str, short: str = "") -> None:
        """`short` replaces `where` when the line is too narrow for it."""
        if (title, where, short) != (self.title_text, self.where, self.short):
            self.title_text, self.where, self.short = title, where, short
            self.refresh()

    def render(self) -> Text:
        width = self.size.width
        where = self.where
        if self.short and len(where) + 12 > width:
            where = self.short
        room = max(width - len(where) - 3, 0)
        title = self.title_text
        if len(title) > room:
            title = title[: max(room - 1, 0)] + "…" if room > 1 else ""
        line = Text(" ")
        line.append(title, style="bold")
        line.append(" " * max(width - len(title) - len(where) - 2, 1))
        line.append(where)
        return line
