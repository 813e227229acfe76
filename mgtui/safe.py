"""Text from a scenario or a trace, made inert before it reaches a terminal.

Labels, output, notes, source lines, error messages and search terms all come from code
or files mgtui did not write (and, in a class, the client's strings in the server's
log). Every one of them passes through `inert` (or `inert_line` where it must stay on
one line) on its way to the screen, so an escape sequence, a carriage return, a C1
control or an invisible format character shows as visible text (`\\x1b`, `\\u200b`)
instead of moving the cursor, leaving the alternate screen, retitling the window,
writing the clipboard or hiding what the text says.
Inert text is still plain text: it reaches rich and Textual as `Text` (or with
`markup=False`), never as markup to be parsed.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Callable

# What a terminal would obey or hide rather than show. The C0 controls but tab and
# newline, DEL and the C1 controls (U+009B is a one-character CSI to some terminals);
# Unicode's format characters (category Cf: the bidirectional overrides, isolates and
# marks that make shown text read differently from what it is, the zero-width space
# and joiners, the soft hyphen, the byte order mark, the tag characters); the line and
# paragraph separators (some terminals break the line there); and lone surrogates
# (a file name that is not UTF-8, which no terminal could be sent). The Cf list is
# Unicode 15's (a test checks it against `unicodedata`).
_FORMAT = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
           "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff"
           "\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
           "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
_NAMES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# Every character above is "Other" or "Separator" to Unicode, which `str.isprintable`
# finds at C speed: text it calls printable (tabs and newlines aside, for `inert`)
# needs no search (a search with the class above takes some 30 ns a character)


class _Unsafe:
    """The characters above as a pattern, compiled when text that is not printable first
    needs it: compiling the two takes about a millisecond, which the app's first frame
    (whose text is all printable, as most text is) does without."""

    def __init__(self, source: str) -> None:
        self._source = source
        self._pattern: re.Pattern[str] | None = None

    def _compiled(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile(self._source)
        return self._pattern

    def search(self, text: str) -> re.Match[str] | None:
        """The first unsafe character of `text`, if it has one."""
        return None if text.isprintable() else self._compiled().search(text)

    def sub(self, repl: Callable[[re.Match[str]], str], text: str) -> str:
        return self._compiled().sub(repl, text)


_UNSAFE = _Unsafe(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_FORMAT}]")
UNSAFE_LINE = _UNSAFE_LINE = _Unsafe(f"[\x00-\x1f\x7f-\x9f{_FORMAT}]")


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, as `os.fsdecode` keeps it
        return f"\\x{code - 0xDC00:02x}"
    return _NAMES.get(ch) or (f"\\x{code:02x}" if code < 0x100 else
                              f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")


def inert(text: object) -> str:
    """`text` with every control and format character but tab and newline shown as an
    escape."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable() or s.replace("\n", "").replace("\t", "").isprintable():
        return s
    return _UNSAFE.sub(_visible, s) if _UNSAFE.search(s) else s


def inert_line(text: object) -> str:
    """`text` on one line: newlines and tabs shown as escapes too (labels, titles)."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable():
        return s
    return _UNSAFE_LINE.sub(_visible, s) if _UNSAFE_LINE.search(s) else s


def bounded(text: str, budget: int = 200_000) -> str:
    """At most about `budget` characters of `text`: its head and its tail, with a line
    saying how much was left out between them (scenario output can be megabytes)."""
    if len(text) <= budget:
        return text
    half = budget // 2
    head, tail = text[:half], text[-half:]
    # cut at line boundaries where there is one near, so no line is shown half
    cut = head.rfind("\n", half - 2000)
    head = head[: cut + 1] if cut >= 0 else head
    cut = tail.find("\n", 0, 2000)
    tail = tail[cut + 1 :] if cut >= 0 else tail
    left_out = len(text) - len(head) - len(tail)
    lines = text.count("\n", len(head), len(text) - len(tail))
    return (f"{head}\n… {left_out:,} characters ({lines:,} lines) of output left out here …\n\n"
            f"{tail}")


# -- how much of a terminal's row text takes ----------------------------------------------------
# A wide character (CJK, most emoji) takes two cells of a terminal's row and a combining
# mark none, so a label cut by its length can overflow its column. The headless core
# (the Graph pane's layout, the node table's column widths) measures here, with
# `unicodedata`: it cannot ask rich, whose widths agree with these for those characters.

@functools.lru_cache(maxsize=4096)
def _char_cells(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """The terminal cells `text` takes on one row (of inert text: no controls)."""
    return len(text) if text.isascii() else sum(map(_char_cells, text))


def cells(text: str) -> list[str]:
    """`text` cut into terminal cells, one string each: a wide character is followed by
    an empty cell, and a combining mark joins the cell before it."""
    if text.isascii():
        return list(text)
    out: list[str] = []
    for ch in text:
        width = _char_cells(ch)
        if width == 0 and out:
            out[-1 if out[-1] else -2] += ch
        elif width == 2:
            out += [ch, ""]
        else:
            out.append(ch)
    return out


def clip_cells(text: str, width: int) -> str:
    """`text` if it fits in `width` cells, else cut to fit with `…` at its end (a wide
    character that would straddle the edge is left out)."""
    if cell_width(text) <= width:
        return text
    kept = cells(text)[: max(width - 1, 0)]
    if kept and kept[-1] and _char_cells(kept[-1][0]) == 2:
        kept.pop()  # (its second cell was cut off)
    return "".join(kept) + ("…" if width > 0 else "")
