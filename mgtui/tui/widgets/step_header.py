"""The header line: the scenario title, the pass (kind and n/N) and the step within it."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from mgtui.session import Header
from mgtui.tui.widgets.strips import CompactLines


class StepHeader(CompactLines, Widget):
    DEFAULT_CSS = """
    StepHeader { height: 1; background: $primary; color: $text; }
    """

    header: reactive[Header] = reactive(Header("mgtui", ""))
    recording: reactive[str] = reactive("")  # how far a recording still going on has got

    @property
    def where(self) -> str:
        return self.header.where

    def render(self) -> Text:
        width = self.size.width
        where = self.header.where
        if self.recording:
            where = f"{self.recording} · {where}"
        if self.header.short and len(where) + 12 > width:
            where = f"{self.recording} · {self.header.short}" if self.recording else self.header.short
        room = max(width - len(where) - 3, 0)
        title = self.header.title
        if len(title) > room:
            title = title[: max(room - 1, 0)] + "…" if room > 1 else ""
        line = Text(" ")
        line.append(title, style="bold")
        line.append(" " * max(width - len(title) - len(where) - 2, 1))
        line.append(where)
        return line
