"""A function's source block found from its code object's own positions, without
tokenizing the file (`inspect.getblock` tokenizes the block in Python: about 60 µs for
a `_backward` closure of a few lines, most of what reading a closure's source costs).

`def_block` gives the lines `inspect.getblock` gives for a `def` (decorators
included; a code named `<lambda>` or `<listcomp>` is not a def's) where it can tell from the code's positions that they are the same, and None
where it cannot (the caller then tokenizes, as before): a `lambda` (its block is the
whole logical line around it, which its positions do not cover), comments after the
body's last statement (`inspect` keeps those indented as the body), a line after the
last instruction's that is indented more than the `def` (a `pass`, a closing bracket
of a constant, a string statement: statements that leave no instruction), a
function with no instruction past its `def` line (a body on that line, or a docstring
alone, whose lines may be at any indentation), or a last line continued with a
backslash. Not caught: a body ending in a string statement (it leaves no instruction)
whose last lines are indented no more than the `def`: the block ends before them.
"""

from __future__ import annotations

import re
import types

# the first line of a block this module reads: a `def` or a decorator (not a lambda)
_DEF_START = re.compile(r"\s*(?:@|def\s|async\s+def\s)")
_DEF = re.compile(r"\s*(?:def\s|async\s+def\s)")


def def_block(code: types.CodeType, lines: list[str]) -> list[str] | None:
    """The lines of `code`'s `def` in `lines` (its file's, from the line cache), from its
    `co_firstlineno` to the end of its body; None where `inspect.getblock` may differ."""
    first = code.co_firstlineno
    if not 0 < first <= len(lines) or code.co_name.startswith("<"):
        return None  # (a lambda's, a comprehension's: on a line of another block)
    head = lines[first - 1]
    if _DEF_START.match(head) is None:
        return None
    end = last_line(code)
    if end < first or end > len(lines) or lines[end - 1].rstrip("\r\n").endswith("\\"):
        return None
    indent = len(head) - len(head.lstrip())
    for line in lines[end:end + 50]:  # the next line that is not blank: not the block's?
        text = line.lstrip()
        if not text:  # (a line of spaces and a newline lstrips to nothing too)
            continue
        if text[0] == "#" or len(line) - len(text) > indent:
            return None  # a comment `inspect` may keep, or more of this block
        break
    else:  # (blank lines to the end of the file, or 50 of them: rare, tokenize)
        if end + 50 < len(lines):
            return None
    block = lines[first - 1:end]
    for k, line in enumerate(block):  # the `def` line (after any decorators): not the last
        if _DEF.match(line):
            return block if k < len(block) - 1 else None
    return None  # (no instruction past the decorators: a body of a docstring alone)


# A rewritten function's code's id -> (that code, the code Python compiled from the same
# source, the last line of the statements the rewrite placed its own instructions at),
# filled by `mgtui.recording.inline.rewrite` (which keeps both codes alive): every other
# instruction of the rewritten code is placed as its source's code places it, so the
# last line it spans is the greater of that code's and the statements', and that code
# has a quarter as many positions to read (a rewritten `_backward` closure's took 20 µs,
# most of what finding its block cost).
COMPILED_FROM: dict[int, tuple[types.CodeType, types.CodeType, int]] = {}


def last_line(code: types.CodeType) -> int:
    """The last line any instruction of `code` or of the code it holds (nested
    functions, comprehensions) spans; 0 if none has a position. (Read from the code its
    source compiles to, for a rewritten code: `COMPILED_FROM`.)"""
    found = COMPILED_FROM.get(id(code))
    if found is not None and found[0] is code:
        return max(last_line(found[1]), found[2])
    end = 0
    for position in code.co_positions():
        last = position[1]
        if last is not None and last > end:
            end = last
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            end = max(end, last_line(const))
    return end
