"""Narrow int columns: a trace's line numbers and closure indexes, each column in the
narrowest of 1, 2 or 4 bytes that holds its numbers ('B', 'H', 'i' for lines; 'b',
'h', 'i' for closures, where -1 is none), widened when a number that does not fit comes.

In a training loop's trace they are a third of the columns' numbers, and all small: at
4 bytes each they cost 18 bytes a node of a chain's 80 (issue 24). Columns of 32-bit
numbers (an older file's, or a recording's where a number was large) are narrowed as
they are appended, a whole column at C speed (`mgtui.trace.lanes`), where they fit."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable

from mgtui.trace import lanes
from mgtui.trace.records import TraceFormatError

LINES = "BHi"  # the widths of a column of line numbers, narrowest first
CLOSURES = "bhi"  # ... of closure indexes
_RANGE = {"B": (0, 1 << 8), "H": (0, 1 << 16), "b": (-(1 << 7), 1 << 7),
          "h": (-(1 << 15), 1 << 15), "i": (-(1 << 31), 1 << 31)}
_LITTLE = sys.byteorder == "little"


def _format(values: object) -> str | None:
    """The typecode of an array or a memoryview, else None."""
    return getattr(values, "typecode", None) or getattr(values, "format", None)


def narrowest(values: array | memoryview, ladder: str) -> str:
    """The narrowest width of `ladder` that holds every number of a 32-bit column."""
    for width in ladder[:-1]:
        if lanes.within(values, *_RANGE[width]):
            return width
    return ladder[-1]


def narrowed(values: array | memoryview, width: str) -> array:
    """A 32-bit column whose numbers fit `width`, as an array of that width: the low
    bytes of each number, taken a column at a time (`bytes` slices at C speed)."""
    raw = bytes(memoryview(values).cast("B"))
    size = array(width).itemsize
    low = range(size) if _LITTLE else range(4 - size, 4)
    out = bytearray(size * (len(raw) // 4))
    for k, at in enumerate(low):
        out[k::size] = raw[at::4]
    column = array(width)
    column.frombytes(out)
    return column


def extend(column: array, values: Iterable[int], ladder: str, where: str) -> array:
    """`column` with `values` appended: the same array, or one of a wider type of
    `ladder` holding the same numbers when one of them does not fit it."""
    width, given = column.typecode, _format(values)
    if given == width:
        if isinstance(values, memoryview):
            column.frombytes(values.cast("B"))
        else:
            column.extend(values)  # type: ignore[arg-type]
        return column
    if given in ("i", "l") and memoryview(values).itemsize == 4 and width != "i":
        fits = narrowest(values, ladder[ladder.index(width):])  # type: ignore[arg-type]
        if fits != width:
            column = array(fits, column)
        if fits == "i":
            column.frombytes(memoryview(values).cast("B"))
        else:
            column.frombytes(narrowed(values, fits).tobytes())  # type: ignore[arg-type]
        return column
    if given is not None and given in ladder and ladder.index(given) > ladder.index(width):
        column = array(given, column)  # (a wider column: its numbers need the width)
    if not isinstance(values, (list, tuple, range, array, memoryview)):
        values = list(values)  # (read again if a number does not fit)
    while True:
        n = len(column)
        try:
            column.extend(values)  # type: ignore[arg-type]
            return column
        except OverflowError:
            del column[n:]
            if column.typecode == ladder[-1]:
                raise TraceFormatError(where, "a number is out of range") from None
            column = array(ladder[ladder.index(column.typecode) + 1], column)


def append(column: array, value: int, ladder: str, where: str) -> array:
    """`column` with one number appended (widened, as `extend`, if it does not fit)."""
    try:
        column.append(value)
        return column
    except OverflowError:
        return extend(column, [value], ladder, where)
    except TypeError:
        raise TraceFormatError(where, f"{value!r} is not a number") from None
