"""A trace's records in chunks, as they travel between processes and files: nodes,
events and writes, column by column, cut from a trace (`chunks_of`) and added to a
`TraceBuilder` as they come."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Iterator

from mgtui.trace.arrays import ArrayChunk, ArrayTable
from mgtui.trace.model import Trace
from mgtui.trace.records import _LONE, Frozen, TraceFormatError


# Written by hand rather than by `@dataclass` (`mgtui.trace.records.Frozen` says why).
_set = object.__setattr__


@dataclass(init=False, repr=False, eq=False)  # (for `dataclasses.replace`)
class NodeChunk(Frozen):
    """Nodes in creation order, as they travel between processes and files.
    `child_ends[k]` is where node k's children end in `child_ids`, counted from the
    start of this chunk's `child_ids`."""

    __slots__ = _fields = ("labels", "ops", "data", "lines", "child_ends", "child_ids",
                           "names")
    labels: tuple[str, ...]
    ops: tuple[str, ...]
    data: array  # 'd'
    lines: array  # 'i'
    child_ends: array  # 'i'
    child_ids: array  # 'i'
    names: tuple[str, ...]  # as `Trace._name`; () if none has one

    def __init__(self, labels: tuple[str, ...], ops: tuple[str, ...], data: array,
                 lines: array, child_ends: array, child_ids: array,
                 names: tuple[str, ...] = ()) -> None:
        _set(self, "labels", labels)
        _set(self, "ops", ops)
        _set(self, "data", data)
        _set(self, "lines", lines)
        _set(self, "child_ends", child_ends)
        _set(self, "child_ids", child_ids)
        _set(self, "names", names)


class EventChunk(Frozen):
    """Events in order. Kinds are `EventKind.code`; `write_starts[k]` is the number of
    writes made before event k over the whole run. `before` and `after` are those of
    the lone writes among them (grad and data events), in order; one per event is
    taken too, and only those kept."""

    __slots__ = _fields = ("kinds", "nodes", "before", "after", "lines", "closures",
                           "write_starts")
    kinds: array  # 'b'
    nodes: array  # 'i'
    before: array  # 'd'
    after: array  # 'd'
    lines: array  # 'i'
    closures: array  # 'i'
    write_starts: array  # 'i'

    def __init__(self, kinds: array, nodes: array, before: array, after: array,
                 lines: array, closures: array, write_starts: array) -> None:
        _set(self, "kinds", kinds)
        _set(self, "nodes", nodes)
        _set(self, "before", before)
        _set(self, "after", after)
        _set(self, "lines", lines)
        _set(self, "closures", closures)
        _set(self, "write_starts", write_starts)


class WriteChunk(Frozen):
    """Writes made inside `_backward` calls, in order. Fields are `Field.code`."""

    __slots__ = _fields = ("nodes", "fields", "before", "after", "lines")
    nodes: array  # 'i'
    fields: array  # 'b'
    before: array  # 'd'
    after: array  # 'd'
    lines: array  # 'i'

    def __init__(self, nodes: array, fields: array, before: array, after: array,
                 lines: array) -> None:
        _set(self, "nodes", nodes)
        _set(self, "fields", fields)
        _set(self, "before", before)
        _set(self, "after", after)
        _set(self, "lines", lines)


Chunk = NodeChunk | EventChunk | WriteChunk
# (A chunk read from a file may hold memoryviews of the same types instead of arrays:
# its columns in place, copied once, into the builder's own.)


def chunks_of(trace: Trace, size: int = 65536) -> Iterator[Chunk | ArrayChunk]:
    """The trace's records as chunks of at most `size` records: events and their writes
    in step, each chunk of them after the nodes they name, so a reader can build (and
    show) the first steps as they come, before the rest is read; then its arrays, if it
    has any (`mgtui.trace.arrays`)."""
    t = trace
    made = 0  # the nodes yielded
    w = 0
    for lo in range(0, len(t), size):
        hi = min(lo + size, len(t))
        end = t._ev_write_start[hi]
        named = max(t._ev_node[lo:hi]) + 1
        if end > w:
            named = max(named, max(t._wr_node[w:end]) + 1)
        if named > made:
            yield from node_chunks(t, made, named, size)
            made = named
        a, b = bisect_left(t._lone_at, lo), bisect_left(t._lone_at, hi)
        yield EventChunk(t._ev_kind[lo:hi], t._ev_node[lo:hi], t._lone_before[a:b],
                         t._lone_after[a:b], t._ev_line[lo:hi], t._ev_closure[lo:hi],
                         t._ev_write_start[lo:hi])
        if end > w:
            yield WriteChunk(t._wr_node[w:end], t._wr_field[w:end], t._wr_before[w:end],
                             t._wr_after[w:end], t._wr_line[w:end])
            w = end
    yield from node_chunks(t, made, t.node_count, size)  # (nodes no step names)
    if t.arrays or t.arrays.unrecorded:
        yield from array_chunks(t.arrays)


CHUNK_ELEMENTS = 1 << 22  # elements a chunk of arrays cut from a trace keeps (32 MB)
CHUNK_VALUES = 1 << 16  # values it holds (in a file, a JSON entry each: some 60 bytes)


def array_chunks(table: ArrayTable) -> Iterator[ArrayChunk]:
    """Every array of a trace, as chunks of at most `CHUNK_VALUES` values and (but for
    one bigger value alone) `CHUNK_ELEMENTS` elements kept: each an A record of a file
    well within what a record may hold (`mgtui.trace.table.MAX_RECORD`). Each carries
    `unrecorded` whole (totals, as a recording's chunks do)."""
    elements, count = CHUNK_ELEMENTS, CHUNK_VALUES
    unrecorded = tuple(sorted(table.unrecorded.items()))
    batch: list = []
    kept = 0
    for entry in table.entries():
        n = entry[3].kept
        if batch and (kept + n > elements or len(batch) >= count):
            yield ArrayChunk(tuple(batch), unrecorded)
            batch, kept = [], 0
        batch.append(entry)
        kept += n
    if batch or unrecorded:
        yield ArrayChunk(tuple(batch), unrecorded)


def node_chunks(t: Trace, first: int, end: int, size: int) -> Iterator[NodeChunk]:
    """Nodes `first` to `end` (not included) of `t`, as chunks of at most `size`."""
    for lo in range(first, end, size):
        hi = min(lo + size, end)
        base = t._child_start[lo]
        names = t._name.slice(lo, hi)
        yield NodeChunk(t._label.slice(lo, hi), tuple(map(t._ops.__getitem__, t._op_code[lo:hi])),
                        t.node_data[lo:hi], t._line[lo:hi],
                        array("i", (e - base for e in t._child_start[lo + 1 : hi + 1])),
                        t._child_ids[base : t._child_start[hi]], names if any(names) else ())


def lone_values(kinds: array, before: Sequence[float],
                after: Sequence[float]) -> tuple[Sequence[float], Sequence[float]]:
    """The before and after values of the lone writes (grad and data events) among
    events of `kinds` ('b'), given as theirs alone or as one per event."""
    lone = kinds.tobytes().translate(_LONE)
    count = lone.count(1)
    if len(before) == count and len(after) == count:
        return before, after
    if len(before) != len(lone) or len(after) != len(lone):
        raise TraceFormatError("events.before", f"{len(before)} and {len(after)} values "
                               f"for {count} grad and data writes")
    return array("d", compress(before, lone)), array("d", compress(after, lone))
