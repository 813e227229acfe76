"""A fixed-size pane of text that scrolls by its own offset.

The step detail and the source change at every step. In a `VerticalScroll` a new text of
another height means a layout pass over the whole screen, which costs more than the rest
of a step; this pane only repaints itself. Text that does not fit ends in a `↓ more` line,
and the pane scrolls with the arrow keys and the mouse wheel when focused.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text
from textual.events import MouseScrollDown, MouseScrollUp
from textual.geometry import Region
from textual.widget import Widget

from mgtui.settings.bindings import TEXT_KEYS
from mgtui.tui.widgets.keys import bindings_of
from mgtui.tui.widgets.strips import CompactLines, last_change


def line_key(line: Text) -> tuple:
    """What a line shows: its text and its styles."""
    return (line.plain, str(line.style), tuple(line.spans))


def text_cells(line: Text) -> tuple[str, list[tuple]]:
    """A line's characters and, for each, the styles on it (by name, unresolved: two
    cells alike in their names look alike; a difference only ever sends more)."""
    plain = line.plain
    looks: list[tuple] = [(line.style,)] * len(plain)
    for start, end, style in line.spans:
        for i in range(max(start, 0), min(end, len(plain))):
            looks[i] = looks[i] + (style,)
    return plain, looks


class TextPane(CompactLines, Widget, can_focus=True):
    BINDINGS = bindings_of(TEXT_KEYS)
    DEFAULT_CSS = """
    TextPane { height: 1fr; overflow: hidden; }
    """

    WRAP = True
    NAME = "text"  # what the pane is called where its focus is shown

    def on_focus(self) -> None:
        self._show_focus(f" ▼ {self.NAME} · ↑↓ scroll · tab: next pane ")

    def on_blur(self) -> None:
        self._show_focus("")

    def _show_focus(self, title: str) -> None:
        """Say on the rule above the pane that it has the focus: in words, so that it
        reads without colour (`tab` otherwise changes nothing you can see)."""
        self.refresh()  # its "↓ more lines" hint says how to scroll
        for ancestor in self.ancestors:
            if isinstance(ancestor, Widget) and ancestor.styles.border_top[0]:
                ancestor.border_title = title or None
                right = self.region.x > ancestor.region.x + ancestor.region.width // 3
                ancestor.styles.border_title_align = "right" if right else "left"
                return

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._text = Text()
        self._lines: list[Text] | None = None
        self._lines_width = -1
        self.offset_y = 0
        self._drawn: list[tuple] | None = None  # the lines last drawn: (line_key, Text)
        self._drawn_size = (0, 0)
        self._placed_at = 0  # the height the focus line was last placed for

    def set_text(self, text: Text, focus_line: int | None = None) -> None:
        """Show `text`, from the top, or scrolled so that `focus_line` sits a third of the
        way down (worked out when drawn, once the pane's height is known)."""
        self._text = text
        self._lines = None
        self.offset_y = 0
        self._focus_line = focus_line
        self._placed_at = 0
        self.refresh_changed()

    def refresh_changed(self) -> None:
        """Draw again only the lines whose text is not what is on screen (the step
        detail keeps most of its lines from one step to the next)."""
        width, height = self.content_size
        if self._drawn is None or self._drawn_size != (width, height):
            self.refresh()
            return
        old = self._drawn
        new = self._shown(width, height)
        for y in range(height):
            before = old[y] if y < len(old) else None
            after = new[y] if y < len(new) else None
            if (before and before[0]) == (after and line_key(after)):
                continue
            cut = last_change(*(text_cells(before[1]) if before else ("", [])),
                              *(text_cells(after) if after else ("", [])), width)
            if cut:
                self.refresh(Region(0, y, cut, 1))

    _focus_line: int | None = None

    @property
    def text(self) -> str:
        """The plain text shown (for tests)."""
        return self._text.plain

    def lines(self, width: int) -> list[Text]:
        if self._lines is None or width != self._lines_width:
            if self.WRAP:
                self._lines = wrap_hanging(self._text, max(width, 1))
            else:
                self._lines = self._text.split("\n", allow_blank=True)
            self._lines_width = width
        return self._lines

    def action_scroll_lines(self, delta: int) -> None:
        self._focus_line = None  # (the reader scrolls from here: the pane stays where put)
        height = self.content_size.height
        total = len(self.lines(self.content_size.width))
        self.offset_y = max(0, min(self.offset_y + delta, max(total - height + 1, 0)))
        self.refresh()

    def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        self.action_scroll_lines(2)
        event.stop()

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        self.action_scroll_lines(-2)
        event.stop()

    def _shown(self, width: int, height: int) -> list[Text]:
        """The lines on screen at this size: the text from `offset_y`, with a line that
        says what is above or below."""
        lines = self.lines(width)
        if self._focus_line is not None and height and height != self._placed_at:
            # placed again at each new height (a first draw may come at a height of a
            # layout still settling) until the reader scrolls
            self.offset_y = max(self._focus_line - height // 3, 0)
            self._placed_at = height
        top = min(self.offset_y, max(len(lines) - 1, 0))
        shown = lines[top : top + height]
        if top + height < len(lines) and height >= 2:
            more = len(lines) - (top + height) + 1
            how = "↓ scrolls" if self.has_focus else "tab here, then ↓"
            shown = shown[:-1] + [Text(f"↓ {more} more lines ({how})", style="dim italic")]
        if top > 0 and shown and height >= 3:
            shown = [Text(f"↑ {top} lines above", style="dim italic")] + shown[1:]
        return [line if self.WRAP else self._crop(line, width) for line in shown]

    def render(self) -> Text:
        width, height = self.content_size
        shown = self._shown(width, height)
        self._drawn = [(line_key(line), line) for line in shown]
        self._drawn_size = (width, height)
        out = Text("\n").join(shown)
        out.no_wrap = True
        out.overflow = "crop"
        return out

    @staticmethod
    def _crop(line: Text, width: int) -> Text:
        if line.cell_len <= width:
            return line
        line = line.copy()
        line.truncate(max(width - 1, 0))
        line.append("…", style="dim")
        return line


def wrap_hanging(text: Text, width: int) -> list[Text]:
    """`text` wrapped to `width`, each line's continuations indented as far as the line
    itself (and past its `• `), so a wrapped sentence never runs back to column 0."""
    console = Console(width=width, color_system=None, legacy_windows=False)
    out: list[Text] = []
    for line in text.split("\n", allow_blank=True):
        plain = line.plain
        indent = len(plain) - len(plain.lstrip(" "))
        if plain.startswith("• ", indent):
            indent += 2
        if line.cell_len <= width or not 0 < indent <= width // 2:
            out.extend(line.wrap(console, width) or [Text()])
            continue
        head, body = line[:indent], line[indent:]
        for k, piece in enumerate(body.wrap(console, width - indent)):
            out.append(Text.assemble(head if k == 0 else " " * indent, piece))
    return out
