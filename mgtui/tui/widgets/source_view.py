"""The source pane: the scenario line that made a node, or the `_backward` closure that
ran, with the lines that wrote each grad marked `▶` (a mark, not only a colour)."""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

from rich.text import Text
from textual.reactive import reactive

from mgtui.session import Source
from mgtui.tui.widgets.text_pane import TextPane


_highlighter_ready = False


def warm_highlighter(code: str = "x = 1") -> None:
    """Build pygments' Python lexer (slow the first time: ~0.1 s) off the UI thread.
    Until then the source pane shows plain text."""
    global _highlighter_ready
    highlighted_lines(code)
    _highlighter_ready = True


def highlighter_ready() -> bool:
    return _highlighter_ready


def source_lines(code: str) -> tuple[Text, ...]:
    if _highlighter_ready:
        return highlighted_lines(code)
    return tuple(Text(line) for line in code.split("\n"))


@lru_cache(maxsize=64)
def highlighted_lines(code: str) -> tuple[Text, ...]:
    """Python source highlighted with the terminal's own ANSI colours (fine in 16 colours)."""
    from rich.syntax import Syntax  # with pygments: imported off the path to the first paint

    text = Syntax(code, "python", theme="ansi_dark", background_color="default").highlight(code)
    text.rstrip()
    return tuple(text.split("\n", allow_blank=True))


def render_source(title: str, lines: tuple[str, ...], first_line: int,
                  marked: dict[int, str], numbers: Callable[[int], str] | None = None) -> Text:
    """`lines` numbered from `first_line`; `marked` maps a line number to its mark glyph;
    `numbers` gives the number shown for a line (a notebook's `cell:line`)."""
    code = "\n".join(lines)
    body = source_lines(code) if code.strip() else ()
    shown = numbers or str
    width = max((len(shown(first_line + k)) for k in range(len(lines))), default=1)
    out = Text()
    out.append(title + "\n", style="bold")
    for k, line in enumerate(body):
        number = first_line + k
        mark = marked.get(number)
        gutter = f"{mark or ' '} {shown(number):>{width}} "
        out.append(gutter, style="bold reverse" if mark else "dim")
        out.append(" ")
        if mark:
            line = line.copy()
            line.stylize("bold underline")
        out.append_text(line)
        out.append("\n")
    out.rstrip()
    return out


class SourceView(TextPane):
    """Source lines, not wrapped; opens scrolled to the first marked line."""

    NAME = "source"

    WRAP = False

    source: reactive[Source | None] = reactive(None, init=False, repaint=False)

    def watch_source(self, source: Source | None) -> None:
        self.redraw()

    def redraw(self) -> None:
        """Draw the source again (once the highlighter is ready, say)."""
        source = self.source
        if source is None:
            return
        rows = [n - source.first_line for n in source.marked if n >= source.first_line] or [0]
        self.set_text(render_source(source.title, source.lines, source.first_line,
                                    source.marked, source.numbers), focus_line=min(rows) + 1)
