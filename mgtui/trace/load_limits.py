"""The bounds a saved trace is read within: `--max-nodes` and `--max-memory` apply to
loading a file as they do to recording one.

A file is small and what it declares may not be: a megabyte of deflated records can
declare forty million nodes. So each record is charged, from the counts it declares,
before it is inflated or read into columns, with an estimate of the memory its rows take
once the trace is built (measured on bundled traces, rounded up); reading stops at the
first record that would go past either bound, with `LoadLimitError`.

What reading a record needs for a moment is checked too, before it is spent: the bytes
a record inflates to (`inflate_bound`), and JSON at its worst (`json_cost`): `json.loads`
makes about 25 bytes of objects of every byte of nested empty lists, so a few hundred
kilobytes of deflated JSON could otherwise take gigabytes before any check of its shape.
"""

from __future__ import annotations

from mgtui.defaults import DEFAULT_MAX_MEMORY, DEFAULT_MAX_NODES
from mgtui.trace.records import TraceFormatError

# Bytes a row takes in a built trace (its columns, the lists of labels and ops, what
# `Trace` derives from them), rounded up from moons' (`bench/trace_files.py`): 117 bytes
# a node all told, with its events and writes.
NODE_BYTES = 64
CHILD_BYTES = 8
EVENT_BYTES = 32
LONE_BYTES = 16  # an event's own before and after (grad and data writes outside `_backward`)
WRITE_BYTES = 40
ARRAY_BYTES = 400  # an `ArrayValue` and its entry in the table, without its elements
TEXT_FACTOR = 2  # bytes of objects per byte of JSON text (labels, names, closures, output)
# The most `json.loads` makes of one value, with its place in the list or object that
# holds it (measured with tracemalloc: a list nested in a list 88, an object with one
# key 64, a float or a short string 60). Every value but the first follows a `,` `[`
# `{` or `:`, so counting those bounds the values of a text from above.
JSON_VALUE_BYTES = 96
JSON_CHAR_BYTES = 8  # a character: 4 in the text `json` decodes, 4 in the strings it makes
_OPENERS = ((b",", b"[", b"{", b":"), (",", "[", "{", ":"))
# Values an N record's JSON may have besides its lists of labels, ops and names (the
# commas and brackets inside them count as values too: `json_values` counts from above)
LABEL_SPARE = 1 << 21
# Values a JSON trace's field other than its nodes and events may hold (closures, passes:
# a few per pass; a field mgtui does not know is read and dropped)
FIELD_SPARE = 1 << 22


class LoadLimitError(TraceFormatError):
    """A trace that is bigger than the limits it is read within (not a damaged one)."""


def openers(text: bytes | str, start: int = 0, end: int | None = None) -> int:
    """How many of `text[start:end]`'s characters a JSON value may follow (`,` `[` `{`
    `:`), counted at C speed without a copy."""
    end = len(text) if end is None else end
    chars = _OPENERS[isinstance(text, str)]
    return sum(text.count(c, start, end) for c in chars)  # type: ignore[arg-type]


def json_values(text: bytes | str, start: int = 0, end: int | None = None) -> int:
    """How many values `text[start:end]` (JSON, bytes or str) can hold at most."""
    end = len(text) if end is None else min(end, len(text))
    return 0 if end <= start else 1 + openers(text, start, end)


def json_cost(text: bytes | str, start: int = 0, end: int | None = None) -> int:
    """The most memory `json.loads` can take to read `text[start:end]`: its values, and
    its characters, each as wide as a string's can be."""
    end = len(text) if end is None else min(end, len(text))
    return (json_values(text, start, end) * JSON_VALUE_BYTES
            + max(end - start, 0) * JSON_CHAR_BYTES)


def size_text(n: int) -> str:
    """A number of bytes as the command line takes it: 512M, 8G."""
    for unit, shift in (("T", 40), ("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g}{unit}"
    return f"{n} bytes"


class LoadLimits:
    """What a file being read has declared so far, against `max_nodes` and `max_memory`
    (None: no bound on memory)."""

    def __init__(self, max_nodes: int = DEFAULT_MAX_NODES,
                 max_memory: int | None = DEFAULT_MAX_MEMORY, where: str = "file") -> None:
        self.max_nodes = max_nodes
        self.max_memory = max_memory
        self.where = where  # what is read ("file", "stream"), as its errors name it
        self.nodes = 0
        self.memory = 0  # estimated bytes

    def take_nodes(self, count: int, children: int = 0) -> None:
        if self.nodes + count > self.max_nodes:
            raise LoadLimitError(self.where, f"holds more than {self.max_nodes:,} nodes "
                                 "(--max-nodes)")
        self.nodes += count
        self._spend(count * NODE_BYTES + children * CHILD_BYTES)

    def take_events(self, count: int, lone: int = 0) -> None:
        self._spend(count * EVENT_BYTES + lone * LONE_BYTES)

    def take_writes(self, count: int) -> None:
        self._spend(count * WRITE_BYTES)

    def take_arrays(self, count: int, elements: int) -> None:
        """Array values (`mgtui.trace.arrays`): `count` of them, `elements` floats in all."""
        self._spend(count * ARRAY_BYTES + elements * 8)

    def take_text(self, size: int) -> None:
        """JSON text about to be parsed, `size` bytes of it."""
        self._spend(size * TEXT_FACTOR)

    def take_json(self, text: bytes | str, start: int = 0, end: int | None = None) -> None:
        """JSON text about to be parsed (`text[start:end]`): what parsing it may take at
        worst checked (`json_cost`), and what its objects are likely to keep charged."""
        end = len(text) if end is None else min(end, len(text))
        self.check(self.json_bound(text, start, end))
        self.take_text(max(end - start, 0))

    def json_bound(self, text: bytes | str, start: int = 0, end: int | None = None) -> int:
        """`json_cost`, or, where even every character a value would leave room, that
        (not counted: the JSON reader asks again and again)."""
        end = len(text) if end is None else min(end, len(text))
        most = (max(end - start, 0) + 1) * (JSON_VALUE_BYTES + JSON_CHAR_BYTES)
        if self.max_memory is None or self.memory + most <= self.max_memory:
            return most if self.max_memory is not None else 0
        return json_cost(text, start, end)

    def check(self, size: int) -> None:
        """LoadLimitError if `size` bytes more, for a moment, would go past max_memory
        (nothing is charged: what reading a record needs while it is read)."""
        if self.max_memory is not None and self.memory + size > self.max_memory:
            self.refuse("to read")

    def inflate_bound(self, most: int) -> int:
        """How many bytes a record may inflate to: `most`, or less if the memory left
        is less (at least 1: zlib takes 0 for no bound)."""
        if self.max_memory is None:
            return most
        return max(1, min(most, self.max_memory - self.memory))

    def text_room(self) -> int | None:
        """The most bytes of JSON the memory left could read (None: no bound)."""
        if self.max_memory is None:
            return None
        return (self.max_memory - self.memory) // (JSON_CHAR_BYTES + 1)

    def refuse(self, when: str = "once loaded") -> None:
        raise LoadLimitError(self.where, f"would take more than {size_text(self.max_memory or 0)} "
                             f"of memory {when} (--max-memory)")

    def _spend(self, size: int) -> None:
        self.memory += size
        if self.max_memory is not None and self.memory > self.max_memory:
            self.refuse()
