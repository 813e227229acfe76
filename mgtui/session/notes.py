"""Notes tied to steps: a comment `#: text` on a line attaches `text` to every step that
happens on that line, forward or backward, in a scenario or in a class it defines.
Read with `tokenize`, so a `#:` inside a string is not a note."""

from __future__ import annotations

import io
import tokenize

MARK = "#:"


def notes_in(source: str, first_line: int = 1) -> dict[int, str]:
    """{line number: note} for every `#: text` comment in `source`, whose first line is
    numbered `first_line`. Source that does not tokenize gives the notes before the fault."""
    notes: dict[int, str] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT and token.string.startswith(MARK):
                text = token.string[len(MARK):].strip()
                if text:
                    notes[token.start[0] + first_line - 1] = text
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return notes
