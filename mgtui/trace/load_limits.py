"""The bounds a saved trace is read within: `--max-nodes` and `--max-memory` apply to
loading a file as they do to recording one.

A file is small and what it declares may not be: a megabyte of deflated records can
declare forty million nodes. So each record is charged, from the counts it declares,
before it is inflated or read into columns, with an estimate of the memory its rows take
once the trace is built (measured on bundled traces, rounded up); reading stops at the
first record that would go past either bound, with `LoadLimitError`.
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


class LoadLimitError(TraceFormatError):
    """A trace that is bigger than the limits it is read within (not a damaged one)."""


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
                 max_memory: int | None = DEFAULT_MAX_MEMORY) -> None:
        self.max_nodes = max_nodes
        self.max_memory = max_memory
        self.nodes = 0
        self.memory = 0  # estimated bytes

    def take_nodes(self, count: int, children: int = 0) -> None:
        if self.nodes + count > self.max_nodes:
            raise LoadLimitError("file", f"holds more than {self.max_nodes:,} nodes "
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

    def _spend(self, size: int) -> None:
        self.memory += size
        if self.max_memory is not None and self.memory > self.max_memory:
            raise LoadLimitError("file", f"would take more than {size_text(self.max_memory)} "
                                 "of memory once loaded (--max-memory)")
