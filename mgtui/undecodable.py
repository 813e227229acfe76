"""Text that holds bytes which are not UTF-8, shown with those bytes made visible.

A file name is bytes; Python gives it as a string (`os.fsdecode`) in which each byte that
is not UTF-8 is a lone surrogate (U+DC80 to U+DCFF). Such a string cannot be encoded for
a terminal or a stream, and a terminal that is given it shows a replacement character at
best. `visible_bytes` writes each such byte as `\\xff` (and any other lone surrogate as
`\\udXXX`), the way `mgtui.safe.inert` writes control characters.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def visible_bytes(text: str) -> str:
    """`text` with each byte that was not UTF-8 (a lone surrogate) written as `\\xNN`."""
    return _SURROGATE.sub(_visible, text) if _SURROGATE.search(text) else text
