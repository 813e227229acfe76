"""The one way to make a `Trace`, for the recorder and the file loaders alike: a
`TraceBuilder` takes records one at a time or in bulk, only ever appends, checks them
(`mgtui.trace.validation`) and builds a trace of everything added so far, its strings
made inert (`mgtui.safe`) and its passes found (`split_passes`)."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from copy import copy
from dataclasses import replace
from itertools import compress
from operator import itemgetter
from typing import Iterable

from mgtui.trace import engine_kind, lanes, widths
from mgtui.safe import UNSAFE_LINE, inert, inert_line
from mgtui.trace.arrays import NODE, GRAD, EVENT, WRITE, ArrayChunk, ArrayTable
from mgtui.trace.chunks import Chunk, EventChunk, NodeChunk, lone_values
from mgtui.trace.model import Texts, Trace
from mgtui.trace.node_names import CODE_LIMIT, NodeNames
from mgtui.trace.records import (
    _BACKWARD,
    _CREATE,
    _DATA,
    _GRAD,
    _LONE,
    Closure,
    EventKind,
    Field,
    Pass,
    TraceError,
    TraceFormatError,
)
from mgtui.trace.validation import RecordValidation
from mgtui.trace.widths import CLOSURES, LINES


class TraceBuilder(RecordValidation):
    """Makes a `Trace`, chunk by chunk. It only appends, so a trace can be built while
    the scenario still runs; `build()` gives the trace of everything added so far.

    Records come in bulk, as parallel sequences (what the recorder keeps), or one at a
    time (what a file loader reads). In both, kinds and fields are `EventKind.code` and
    `Field.code`, lines are 0 when unknown, and the closure is -1 when there is none.
    """

    def __init__(self, scenario: str, title: str = "", notes: str = "", source: str = "") -> None:
        self.scenario, self.title, self.notes, self.source = scenario, title, notes, source
        self.labels: list[str] = []
        self.names = NodeNames()  # the names `mgtui.recording.naming` gave nodes
        self.ops: list[str] = []
        self.node_data = array("d")
        self.node_line = array("B")  # lines and closures: as narrow as they fit (`widths`)
        self.child_start = array("i", [0])
        self.child_ids = array("i")
        self.ev_kind = array("b")
        self.ev_node = array("i")
        self.ev_line = array("B")
        self.ev_closure = array("b")
        self.ev_write_start = array("i")
        self.lone_at = array("i")  # the grad and data events outside `_backward`
        self.lone_before = array("d")
        self.lone_after = array("d")
        self.wr_node = array("i")
        self.wr_field = array("b")
        self.wr_before = array("d")
        self.wr_after = array("d")
        self.wr_line = array("B")
        self.closures: list[Closure] = []
        # What validate() has checked and build() has derived so far: a trace that grows
        # while its scenario records is checked and built a chunk at a time, not in full
        # on every update.
        self._checked_nodes = self._checked_events = self._checked_writes = 0
        self._made = 0  # nodes made by the checked events
        # The labels and ops above are those of the nodes from `_raw_from` on, not yet made
        # inert; those before are `_labels` (the labels not empty, made inert, by id) and
        # `_op_code`.
        self._raw_from = 0
        self._labels: dict[int, str] = {}
        self._op_code = array("B")  # the ops made inert, each once in `_ops`
        self._ops: list[str] = []
        self._op_codes: dict[str, int] = {}
        self.values: dict[int, tuple[tuple[str, float], ...]] = {}
        self.arrays = ArrayTable()  # (`mgtui.trace.arrays`)
        self.engine: str | None = None  # the engine that recorded it, where it is said

    @property
    def node_count(self) -> int:
        return self._raw_from + len(self.ops)

    @property
    def event_count(self) -> int:
        return len(self.ev_kind)

    # -- one record at a time --------------------------------------------------------------
    def add_node(self, label: str, op: str, children: Iterable[int], data: float,
                 line: int = 0) -> int:
        nid = self.node_count
        self.labels.append(label)
        self.ops.append(op)
        self.node_data.append(data)
        self.node_line = widths.append(self.node_line, line, LINES, f"nodes[{nid}].line")
        self.names.codes.append(0)
        try:
            self.child_ids.extend(children)
        except OverflowError:
            raise TraceFormatError(f"nodes[{nid}].children", "an id is out of range") from None
        self.child_start.append(len(self.child_ids))
        return nid

    def add_event(self, kind: EventKind, node: int, before: float = 0.0, after: float = 0.0,
                  line: int = 0, closure: int = -1) -> int:
        index = len(self.ev_kind)
        code = kind.code
        self.ev_kind.append(code)
        try:
            self.ev_node.append(node)
        except OverflowError:
            raise TraceFormatError(f"events[{index}]", "an id is out of range") from None
        self.ev_closure = widths.append(self.ev_closure, closure, CLOSURES,
                                        f"events[{index}].closure")
        self.ev_line = widths.append(self.ev_line, line, LINES, f"events[{index}].line")
        self.ev_write_start.append(len(self.wr_node))
        if code >= _GRAD:
            self.lone_at.append(index)
            self.lone_before.append(before)
            self.lone_after.append(after)
        return index

    def add_write(self, node: int, field_: Field, before: float, after: float,
                  line: int = 0) -> None:
        """A write made by the `_backward` call of the last event added."""
        try:
            self.wr_node.append(node)
        except OverflowError:
            raise TraceFormatError(f"writes[{len(self.wr_node)}].node",
                                   "an id is out of range") from None
        self.wr_field.append(field_.code)
        self.wr_before.append(before)
        self.wr_after.append(after)
        self.wr_line = widths.append(self.wr_line, line, LINES, "writes.line")

    def relabel(self, nid: int, label: str) -> None:
        """A label given after the node was made (`e.label = 'e'`, or the variable that
        holds it at the end). Labels are names, not structure: the one thing that may
        change after it was added."""
        if not (isinstance(label, str) and isinstance(nid, int)
                and 0 <= nid < self.node_count):
            raise TraceFormatError("labels", f"no node {nid!r} to name {label!r}")
        if nid >= self._raw_from:
            self.labels[nid - self._raw_from] = label
            return
        label = inert_line(label)
        if label:
            self._labels[nid] = label
        else:
            self._labels.pop(nid, None)

    def add_name(self, nid: int, name: str) -> None:
        """The name a node goes by when it has no label: the variable it was bound to,
        or its path from a global object (`mgtui.recording.naming`)."""
        self.names.add(nid, name, self.node_count)

    def add_values(self, event: int, pairs: Iterable[tuple[str, float]]) -> None:
        """What the `_backward` call of event `event` read as it began: (name, value)
        pairs. It may come before the event itself (the stream sends it first); one
        for an event that never arrives is dropped when the trace is built."""
        if not isinstance(event, int) or isinstance(event, bool) or event < 0:
            raise TraceFormatError("values", f"{event!r} is not an event")
        checked = []
        for pair in pairs:
            name, value = pair
            if not isinstance(name, str) or isinstance(value, bool) \
                    or not isinstance(value, (int, float)):
                raise TraceFormatError(f"values[{event}]", f"{pair!r} is not a name and a number")
            checked.append((name, value if type(value) is int else float(value)))
        self.values[event] = tuple(checked)

    def add_closure(self, closure: Closure) -> int:
        self.closures.append(closure)
        return len(self.closures) - 1

    # -- in bulk ---------------------------------------------------------------------------
    def add_nodes(self, labels: Sequence[str], ops: Sequence[str], data: Sequence[float],
                  lines: Sequence[int], child_ends: Sequence[int], child_ids: Sequence[int]) -> None:
        """Nodes in creation order. `child_ends[k]` is where node k's children end in
        `child_ids`, counted from the start of this chunk's `child_ids`."""
        base = len(self.child_ids)
        self.labels.extend(labels)
        self.ops.extend(ops)
        _append(self.node_data, data)
        self.node_line = widths.extend(self.node_line, lines, LINES, "nodes.line")
        self.names.grow(len(ops))
        _extend(self.child_ids, child_ids, "nodes.children")
        ends: Iterable[int] | None = child_ends
        if base:  # counted from this chunk's first child: from the first of all
            ends = (lanes.shifted(child_ends, base)
                    if isinstance(child_ends, (array, memoryview)) and child_ends.itemsize == 4
                    else None)
            if ends is None:
                ends = map(base.__add__, child_ends)
        _extend(self.child_start, ends, "nodes.children")

    def add_events(self, kinds: Sequence[int], nodes: Sequence[int], before: Sequence[float],
                   after: Sequence[float], lines: Sequence[int], closures: Sequence[int],
                   write_starts: Sequence[int]) -> None:
        """Events in order. `write_starts[k]` is the number of writes made before event
        k, over the whole run (writes are numbered by the recorder, not by the chunk).
        `before` and `after` are those of the lone writes among the events (grad and
        data events), in order; given one per event, only theirs are kept."""
        e0 = len(self.ev_kind)
        _append(self.ev_kind, kinds)
        _extend(self.ev_node, nodes, "events.node")
        self.ev_line = widths.extend(self.ev_line, lines, LINES, "events.line")
        self.ev_closure = widths.extend(self.ev_closure, closures, CLOSURES, "events.closure")
        _extend(self.ev_write_start, write_starts, "events.writes")
        kinds = self.ev_kind[e0:]
        lone = kinds.tobytes().translate(_LONE)  # 1 for a lone write, else 0
        if lone.count(1):
            self.lone_at.extend(compress(range(e0, len(self.ev_kind)), lone))
        before, after = lone_values(kinds, before, after)
        _append(self.lone_before, before)
        _append(self.lone_after, after)

    def add_writes(self, nodes: Sequence[int], fields: Sequence[int], before: Sequence[float],
                   after: Sequence[float], lines: Sequence[int]) -> None:
        _extend(self.wr_node, nodes, "writes.node")
        _append(self.wr_field, fields)
        _append(self.wr_before, before)
        _append(self.wr_after, after)
        self.wr_line = widths.extend(self.wr_line, lines, LINES, "writes.line")

    def add_arrays(self, chunk: ArrayChunk) -> None:
        """Array values of records already added (a stream sends them after the chunks
        of their rows): each place and index is checked against those."""
        counts = (self.node_count, self.node_count, self.event_count, len(self.wr_node))
        columns = chunk.columns
        if not (_columns_fit(columns, counts, self.ev_kind) if columns is not None
                else _entries_fit(chunk.entries, counts, self.ev_kind)):
            self._check_each_array(chunk, counts)
        if chunk.unrecorded:  # (type names from a scenario or a file: made inert)
            unrecorded = tuple((inert_line(name), n) for name, n in chunk.unrecorded)
            chunk = (ArrayChunk(columns=columns, unrecorded=unrecorded) if columns is not None
                     else ArrayChunk(chunk.entries, unrecorded))
        self.arrays.add(chunk)

    def _check_each_array(self, chunk: ArrayChunk, counts: tuple[int, ...]) -> None:
        """Find the first entry of `chunk` that does not fit, and raise for it."""
        kinds = self.ev_kind
        for k, (place, index, side, _value) in enumerate(chunk.entries):
            if place not in (NODE, GRAD, EVENT, WRITE) or side not in (0, 1):
                raise TraceFormatError(f"arrays[{k}]", f"no place {place!r}, side {side!r}")
            if not (type(index) is int and 0 <= index < counts[place]):
                raise TraceFormatError(f"arrays[{k}]",
                                       f"refers to a record that is not there ({index!r})")
            if place == EVENT and kinds[index] not in (_GRAD, _DATA):
                raise TraceFormatError(f"arrays[{k}]",
                                       f"event {index} is not a grad or data write")

    def add(self, chunk: Chunk | ArrayChunk) -> None:
        if isinstance(chunk, ArrayChunk):
            self.add_arrays(chunk)
            return
        if isinstance(chunk, NodeChunk):
            base = self.node_count
            self.add_nodes(chunk.labels, chunk.ops, chunk.data, chunk.lines, chunk.child_ends,
                           chunk.child_ids)
            self.names.add_run(base, chunk.names, self.node_count)
        elif isinstance(chunk, EventChunk):
            self.add_events(chunk.kinds, chunk.nodes, chunk.before, chunk.after, chunk.lines,
                            chunk.closures, chunk.write_starts)
        else:
            self.add_writes(chunk.nodes, chunk.fields, chunk.before, chunk.after, chunk.lines)

    @property
    def consistent(self) -> bool:
        """Have the writes that the events added so far start at arrived? (Between a
        chunk of events and the chunk of their writes, they have not.)"""
        return not self.ev_write_start or self.ev_write_start[-1] <= len(self.wr_node)

    def trim(self) -> None:
        """Drop events at the end whose writes never arrived (a stream cut off in the
        middle of a flush), so that what is left is a consistent trace. Only for the
        end of a stream: in the middle of one, their writes are on their way."""
        keep = len(self.ev_write_start)
        w = len(self.wr_node)
        while keep > self._checked_events and self.ev_write_start[keep - 1] > w:
            keep -= 1
        if keep < len(self.ev_write_start):
            for column in (self.ev_kind, self.ev_node, self.ev_line, self.ev_closure,
                           self.ev_write_start):
                del column[keep:]
            lone = bisect_left(self.lone_at, keep)
            for column in (self.lone_at, self.lone_before, self.lone_after):
                del column[lone:]
            for key in [k for k in self.arrays.events if k >= keep + keep]:
                del self.arrays.events[key]

    # -- the trace -------------------------------------------------------------------------
    def build(self, error: TraceError | None = None, output: str = "",
              passes: Sequence[tuple[str, int, int]] | None = None, *,
              last: bool = False) -> Trace:
        """The trace of everything added so far. `passes`, as (kind, start, end), are
        taken as given (a saved trace's); else they are found from the events.

        What is derived (inert names, the final state) is kept and carried forward, so a
        trace built again after more records were added costs those records, plus
        copying the columns. The `last` build hands its columns over to the trace
        instead of copying them (a file's load): the builder is empty after it."""
        self._catch_up_names()
        keep = (lambda column: column) if last else copy
        write_start = keep(self.ev_write_start)
        write_start.append(len(self.wr_node))
        n = self.node_count
        labels = Texts.of(self._labels if last else dict(self._labels), n)
        trace = Trace(
            scenario=inert_line(self.scenario),
            title=inert_line(self.title),
            notes=inert(self.notes),
            source=inert(self.source),
            _label=labels,
            _op_code=keep(self._op_code),
            _ops=tuple(self._ops),
            node_data=keep(self.node_data),
            _line=keep(self.node_line),
            _child_start=keep(self.child_start),
            _child_ids=keep(self.child_ids),
            _ev_kind=keep(self.ev_kind),
            _ev_node=keep(self.ev_node),
            _ev_line=keep(self.ev_line),
            _ev_closure=keep(self.ev_closure),
            _ev_write_start=write_start,
            _lone_at=keep(self.lone_at),
            _lone_before=keep(self.lone_before),
            _lone_after=keep(self.lone_after),
            _wr_node=keep(self.wr_node),
            _wr_field=keep(self.wr_field),
            _wr_before=keep(self.wr_before),
            _wr_after=keep(self.wr_after),
            _wr_line=keep(self.wr_line),
            closures=tuple(map(_inert_closure, self.closures)),
            error=None if error is None else replace(
                error, type=inert_line(error.type), message=inert(error.message)),
            output=inert(output),
            _name=self.names.texts_of(n, last),
            _values=self._inert_values(),
            arrays=(self.arrays if last else self.arrays.copy())
            if self.arrays or self.arrays.unrecorded else ArrayTable(),
        )
        if passes is None:
            found = split_passes(trace)
        else:
            found = [Pass(i, kind, start, end)  # type: ignore[arg-type]
                     for i, (kind, start, end) in enumerate(passes)]
        # (a new trace of the same columns, made whole: a trace is never changed)
        trace = replace(trace, passes=tuple(found),
                        engine=self.engine or engine_kind.infer(trace))
        if last:
            self.__init__(self.scenario, self.title, self.notes, self.source)  # type: ignore[misc]
        return trace

    def _inert_values(self) -> dict[int, tuple[tuple[str, float], ...]]:
        """What `_backward` calls read as they began, their names made inert."""
        n, kinds = self.event_count, self.ev_kind
        return {i: tuple((inert_line(name), value) for name, value in pairs)
                for i, pairs in self.values.items() if i < n and kinds[i] == _BACKWARD}

    def _catch_up_names(self) -> None:
        """Labels and ops made inert, for the nodes added since the last build or check
        (later labels are made inert by `relabel`), and the raw ones let go: the labels
        that are not empty are kept by id, equal ones one string; each op is kept once,
        and a node holds its number."""
        k = self._raw_from
        labels, ops = _inert_names(self.labels), _inert_names(self.ops)
        if labels.count("") != len(labels):  # (a big graph's nodes mostly have none)
            one = {}.setdefault  # equal labels, one string
            self._labels.update(zip(compress(range(k, k + len(labels)), labels),
                                    [one(x, x) for x in compress(labels, labels)]))
        codes = self._op_codes
        for op in set(ops) - codes.keys():
            codes[op] = len(self._ops)
            self._ops.append(op)
        if len(self._ops) > CODE_LIMIT[self._op_code.typecode]:  # more ops than it holds
            self._op_code = array("H" if len(self._ops) <= CODE_LIMIT["H"] else "i",
                                  self._op_code)
        if self._op_code.typecode == "B":  # (bytes() of a map is faster than extend)
            self._op_code.frombytes(bytes(map(codes.__getitem__, ops)))
        else:
            self._op_code.extend(map(codes.__getitem__, ops))
        self._raw_from += len(ops)
        self.labels, self.ops = [], []


def _append(column: array, values: Iterable) -> None:
    """column.extend(values); a memoryview of the column's own type (a file's chunk,
    read in place) is copied in as bytes, not an element at a time."""
    if isinstance(values, memoryview) and values.format == column.typecode:
        column.frombytes(values.cast("B"))
    else:
        column.extend(values)


def _extend(column: array, values: Iterable[int], where: str) -> None:
    """Append ids to an int32 column; one too big for it is a corrupt trace."""
    try:
        _append(column, values)
    except OverflowError:
        raise TraceFormatError(where, "an id or count is out of range") from None
    except TypeError:  # an array of another type (an older file's 64-bit ids)
        try:
            column.extend(array(column.typecode, values))
        except OverflowError:
            raise TraceFormatError(where, "an id or count is out of range") from None


_PLACES, _SIDES = frozenset((NODE, GRAD, EVENT, WRITE)), frozenset((0, 1))  # (an array entry's)
_WRITE_KINDS = frozenset((_GRAD, _DATA))  # the events an array entry may stand beside


def _inert_names(names: list[str]) -> tuple[str, ...]:
    """Labels or ops made inert (`mgtui.safe`); checked all at once, as most have nothing
    to change."""
    try:
        clean = not UNSAFE_LINE.search("".join(names))
    except TypeError:  # not all strings: validate() has not been run on them
        clean = False
    return tuple(names) if clean else tuple(inert_line(x) for x in names)


def _inert_closure(c: Closure) -> Closure:
    return replace(c, name=inert_line(c.name), filename=inert_line(c.filename),
                   lines=tuple(inert_line(x) for x in c.lines))


def split_passes(trace: Trace) -> list[Pass]:
    """Group the events into runs of one kind: forward, backward, zero_grad, update, other.

    A grad write that is followed directly by a `_backward` call (perhaps after more
    writes to the same node) is that backward pass's seed. Other grad writes outside
    `_backward` set to zero form `zero_grad` passes; any other lone grad write is
    `other`. Runs of one event kind are found with a regular expression over the kind
    bytes, so only grad writes are looked at one by one, and each only once.
    """
    kinds = trace._ev_kind
    nodes, after = trace._ev_node, trace._lone_after
    zeros_written = trace.arrays.zeros_written if trace.arrays else None
    n = len(kinds)
    spans: list[tuple[str, int, int]] = []  # (pass kind, start, end), merged as we go

    def add(kind: str, start: int, end: int) -> None:
        if spans and spans[-1][0] == kind and spans[-1][2] == start:
            spans[-1] = (kind, spans[-1][1], end)
        else:
            spans.append((kind, start, end))

    for run in re.finditer(rb"(.)\1*", kinds.tobytes(), re.S):
        start, end = run.span()
        kind = kinds[start]
        if kind != _GRAD:
            add(RUN_KINDS[kind], start, end)
            continue
        # Walk the run backwards, so each write knows at once whether a `_backward`
        # follows the writes to its node that come right after it (linear, not quadratic).
        lone = bisect_left(trace._lone_at, start) - start  # grad writes are lone writes
        seeds = [False] * (end - start)
        seeded = end < n and kinds[end] == _BACKWARD
        for i in range(end - 1, start - 1, -1):
            if i + 1 < end and nodes[i + 1] != nodes[i]:
                seeded = False
            seeds[i - start] = seeded
        for i in range(start, end):
            if seeds[i - start]:
                add("backward", i, i + 1)
            elif after[lone + i] == 0 or (zeros_written is not None and zeros_written(i)):
                add("zero_grad", i, i + 1)
            else:
                add("other", i, i + 1)
    return [Pass(index, kind, start, end)  # type: ignore[arg-type]
            for index, (kind, start, end) in enumerate(spans)]
RUN_KINDS = {_CREATE: "forward", _BACKWARD: "backward", _DATA: "update"}


def _columns_fit(columns: Sequence, counts: tuple[int, ...], kinds: array) -> bool:
    """`_entries_fit` for a chunk given as columns (`ArrayChunk.columns`): four places
    of (keys, values), each key an int, index * 2 + side, of a record there (an
    event's a grad or data write), checked at C speed."""
    try:
        if len(columns) != len(_PLACES) or any(len(keys) != len(values)
                                                for keys, values in columns):
            return False
    except TypeError:
        return False
    for place, (keys, _values) in enumerate(columns):
        if not keys:
            continue
        if not {int}.issuperset(map(type, keys)):
            return False
        ordered = sorted(keys)  # (one pass where in order, as a recording gives them)
        if ordered[0] < 0 or ordered[-1] >> 1 >= counts[place]:
            return False
        if place == EVENT and not _WRITE_KINDS.issuperset(
                map(kinds.__getitem__, map(_HALF, keys))):
            return False
    return True


_HALF = (1).__rrshift__  # k -> k >> 1 (at C speed, in a `map`)


def _entries_fit(entries: Sequence[tuple], counts: tuple[int, ...], kinds: array) -> bool:
    """Does every array entry name a place, a side and a record there (an event: a
    grad or data write)? Checked a column at a time, at C speed, for entries in place
    order (as a recording and a file give them); False for any other order, or any
    entry that does not fit (the caller then finds it, entry by entry)."""
    if not entries:
        return True
    try:
        if {4} != set(map(len, entries)):
            return False
    except TypeError:
        return False
    places, indexes, sides = (list(map(itemgetter(k), entries)) for k in range(3))
    if (not _PLACES.issuperset(places) or not _SIDES.issuperset(sides)
            or not {int}.issuperset(map(type, indexes)) or places != sorted(places)):
        return False
    end = 0
    for place in sorted(set(places)):
        start, end = end, bisect_right(places, place, end)
        if min(indexes[start:end]) < 0 or max(indexes[start:end]) >= counts[place]:
            return False
        if place == EVENT and not _WRITE_KINDS.issuperset(
                map(kinds.__getitem__, indexes[start:end])):
            return False
    return True
