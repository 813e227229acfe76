"""Strips with as few style changes as they can have: the bytes a step sends over SSH.

Textual writes every segment of a strip with its whole SGR code and a reset after it,
so a row cut into 18 segments of the same colours costs 18 codes. `compact` merges
adjacent segments that look the same, including blanks whose style differs only in what
a blank does not show (its foreground colour, bold, italic, dim), and ignoring the meta
Textual keeps in a style for the mouse (it is never sent). `CompactLines` does it to
every line a widget renders for the screen; `render_line`, which Textual's text
selection reads, keeps its segments.
"""

from __future__ import annotations

from itertools import repeat
from typing import Iterable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache
from textual.geometry import Region
from textual.strip import Strip

from mgtui.tui.textual_private import strip_cache


def _look(style: Style | None) -> tuple:
    """What a style sends to the terminal: its colours, attributes and link. (Not its
    meta, which Textual keeps for the mouse and never sends.)"""
    if style is None:
        return (None, None, 0, None)
    look = _LOOKS.get(style)
    if look is None:
        if len(_LOOKS) > 4096:
            _LOOKS.clear()
        look = _LOOKS[style] = (style.color, style.bgcolor, _attribute_bits(style),
                                style.link)
    return look


_ATTRIBUTES = ("bold", "dim", "italic", "underline", "blink", "blink2", "reverse", "conceal",
               "strike", "underline2", "frame", "encircle", "overline")


def _attribute_bits(style: Style) -> int:
    """The attributes `style` turns on, one bit each."""
    return sum(1 << k for k, name in enumerate(_ATTRIBUTES) if getattr(style, name))


def _blank_look(style: Style | None) -> tuple | None:
    """What a run of spaces in `style` looks like, or None if it shows more than a
    background (underline, strike, overline, reverse video, a link)."""
    if style is None:
        return (None,)
    look = _BLANK_LOOKS.get(style, False)
    if look is False:
        if len(_BLANK_LOOKS) > 4096:
            _BLANK_LOOKS.clear()
        shows = (style.underline or style.underline2 or style.strike or style.overline
                 or style.reverse or style.link)
        look = _BLANK_LOOKS[style] = None if shows else (style.bgcolor,)
    return look


_LOOKS: dict[Style, tuple] = {}
_BLANK_LOOKS: dict[Style, tuple | None] = {}


def _blank(text: str) -> bool:
    return not text.strip(" ")


def compact(strip: Strip) -> Strip:
    """`strip` with adjacent segments that render alike merged into one."""
    segments = list(strip)
    if len(segments) < 2:
        return strip
    out: list[list] = []  # [text, style, look] triples, and control segments as they are
    for text, style, control in segments:
        if control:
            out.append(Segment(text, style, control))
            continue
        if not text:
            continue
        look = _look(style)
        if out and isinstance(last := out[-1], list):
            last_text, last_style, last_look = last
            if last_look == look:
                last[0] = last_text + text
                continue
            if _blank(text) or _blank(last_text):
                blank = _blank_look(style)
                if blank is not None and blank == _blank_look(last_style):
                    last[0] = last_text + text
                    if _blank(last_text):  # the run takes the style of what shows
                        last[1], last[2] = style, look
                    continue
        out.append([text, style, look])
    if len(out) == len(segments):
        return strip
    return Strip([s if isinstance(s, Segment) else Segment(s[0], s[1]) for s in out],
                 strip.cell_length)


class CompactLines:
    """A widget mixin: every line it renders is `compact`."""

    def render_lines(self, crop: Region) -> list[Strip]:
        return [_compacted(strip) for strip in super().render_lines(crop)]  # type: ignore[misc]


# Textual hands back the same Strip for a line that did not change (its own caches), so
# each is compacted once and the result kept in that strip's own cache of restyled
# copies, under a key no style equals: it lives exactly as long as the strip. (A cache of
# mgtui's, by the strip's id, kept the last thousand strips and their compacted copies
# alive for every session at once: some 40% of the strips a server's full collections
# walked.) A strip that cannot be compacted is marked, not kept in its own cache: that
# would make it a reference cycle, which only the collector can free.
_COMPACT_KEY = object()
_SAME = object()


def _compacted(strip: Strip) -> Strip:
    cache = strip_cache(strip)
    small = cache.get(_COMPACT_KEY)
    if small is None:
        small = compact(strip)
        cache.set(_COMPACT_KEY, _SAME if small is strip else small)
        return small
    return strip if small is _SAME else small


def cells(segments: Iterable[Segment]) -> tuple[str, list[tuple]]:
    """A line's characters, and what each of its cells shows (a blank: only what
    `_blank_look` says)."""
    chars: list[str] = []
    looks: list[tuple] = []
    for text, style, control in segments:
        if control or not text:
            continue
        chars.append(text)
        look = _look(style)
        blank = _blank_look(style) or look
        if " " in text and blank != look:
            looks.extend(blank if ch == " " else look for ch in text)
        else:
            looks.extend(repeat(look, len(text)))
    return "".join(chars), looks


_NO_CELL = (None,)  # the look of a blank past the end of a line


def changed_width(old: Iterable[Segment] | None, new: Iterable[Segment], width: int) -> int:
    """How many cells from the left of a line of `width` hold every difference between
    what was drawn (`old`) and what is to be drawn (`new`): Textual sends a partly
    refreshed line from its left edge to the refreshed region's right edge, so the
    rest of a line that did not change need not be sent."""
    if old is None:
        return width
    return last_change(*cells(old), *cells(new), width)


def last_change(a: str, a_looks: list, b: str, b_looks: list, width: int) -> int:
    """One past the last cell where two lines (their characters and each cell's look)
    differ, within `width` cells; `width` when characters are not all one cell wide."""
    if max(len(a), len(b)) > width or cell_len(a) != len(a) or cell_len(b) != len(b):
        return width  # wide characters: cells are not characters
    a, b = a.ljust(width), b.ljust(width)
    a_looks = a_looks + [_NO_CELL] * (width - len(a_looks))
    b_looks = b_looks + [_NO_CELL] * (width - len(b_looks))
    for x in range(width - 1, -1, -1):
        if a[x] != b[x] or a_looks[x] != b_looks[x]:
            return x + 1
    return 0


class SharedLines:
    """Lines drawn once for every session of a process that shows the same thing: the
    students of a class following one step at one terminal size draw the same Graph
    pane (`mgtui serve` runs a worker's share of the class in one process). A key must
    hold everything the line is drawn from (a session's own cursor, breakpoints, hidden
    grads included), so that a line is only ever shared with a session that would have
    drawn it the same; and the console's colour system, since a strip keeps what it
    rendered to. `owner` (an object of the key held by identity, not by value: a
    picture) is kept with the line, and checked, so that its id cannot be reused."""

    def __init__(self, size: int) -> None:
        self._lines: LRUCache[tuple, tuple[object, Strip]] = LRUCache(size)

    def get(self, key: tuple, owner: object) -> Strip | None:
        found = self._lines.get(key)
        return found[1] if found is not None and found[0] is owner else None

    def put(self, key: tuple, owner: object, strip: Strip) -> Strip:
        self._lines[key] = (owner, strip)
        return strip

    def clear(self) -> None:
        self._lines.clear()


# the Graph pane's lines (a step of a class at one size: some 20 lines a form)
GRAPH_LINES = SharedLines(2048)


def clear_caches() -> None:
    """Forget every style looked at and every shared line: they refill at the next
    frame (`mgtui serve` empties them when a class has gone, and Textual's caches, where
    the compacted strips are kept)."""
    _LOOKS.clear()
    _BLANK_LOOKS.clear()
    GRAPH_LINES.clear()
