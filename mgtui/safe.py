"""Text from a scenario or a trace, made inert before it reaches a terminal.

Labels, output, notes, source lines, error messages and search terms all come from code
or files mgtui did not write. Every one of them passes through `inert` (or `inert_line`
where it must stay on one line) on its way to the screen, so an escape sequence, a
carriage return or a C1 control shows as visible text (`\\x1b`) instead of moving the
cursor, leaving the alternate screen, retitling the window or writing the clipboard.
Inert text is still plain text: it reaches rich and Textual as `Text` (or with
`markup=False`), never as markup to be parsed.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, the C1 controls (U+009B is a one-character CSI
# to some terminals), and the bidirectional overrides and isolates that can make shown
# text read differently from what it is.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
UNSAFE_LINE = _UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    return _NAMES.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def inert(text: object) -> str:
    """`text` with every control character but tab and newline shown as an escape."""
    s = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_visible, s) if _UNSAFE.search(s) else s


def inert_line(text: object) -> str:
    """`text` on one line: newlines and tabs shown as escapes too (labels, titles)."""
    s = text if isinstance(text, str) else str(text)
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
