"""The record store of one recording: what every probe writes, and what both the
finished trace (`Recorder.finish`) and the runner's child stream (`run/child.py`'s `Flusher`)
are read from.

Probes append rows flat, one `extend` of a tuple a record, into a few columns (plain
lists while the rows are fresh, so that a row costs one C call on the hot path). A row's
fields are named by the `IntEnum`s below; the code that cuts the columns into chunks
(`NodeChunk`, `EventChunk`, `WriteChunk` of `mgtui.trace`) reads them by those names,
never by bare offsets:

    nodes   NodeRow   kids_end, op, label, data, line      (children in `kids`)
    events  EventRow  kind, node, before, after, line, closure, writes_at
    writes  WriteRow  node, field, before, after, line     (made inside a `_backward`)

plus `kids` (every node's children's ids, one after another), `arrays` (array values,
`mgtui.recording.array_values`: a probe calls `arrays.made` / `arrays.write` for a value
whose `type` is not float, and puts what they return in its row), `late_labels` (labels set
after a node was made), the `_backward` closures' code (`codes`, by first call), the
names `mgtui.recording.naming` finds (`name_ids`, `name_texts`), and `callers`: where the
`_backward` calls of each `backward()` came from
(`mgtui.recording.backward_calls.Callers`), which the doctor reads to point at the line
that builds the order.

What a probe uses, bound once into its closures or globals: `add_node`, `add_kid`,
`add_event` and `add_write` (a row each, as a tuple), `len()` of `nodes`, `kids` and
`writes`, and `id_base` (a node's id is `len(nodes) // NODE_ROW + id_base[0]`; its
`kids_end` is `len(kids)`, an event's `writes_at` is `len(writes)`, both counted among
the fresh rows). C calls and a subscript: no Python code runs per record.

Packed as they are made (issue 24). Every `PACK_EVERY` nodes the probes call the
recorder's `on_progress`, which calls `pack`: on the recording's thread, outside a
replay, every fresh row is cut into chunks (a few bytes a record instead of a hundred)
and the lists are emptied; `packed` counts the rows moved out (`id_base[0]` its nodes),
and `ends` keeps where each packed node's children end, 4 bytes a node. The chunks are
kept (`shelf`) until they are `release`d: the runner's child releases what it has sent,
so it holds only what it has not sent yet; a recording in this process keeps them all,
packed.
"""

from __future__ import annotations

import linecache
import math
import re
import sys
import threading
import tokenize
import types
from array import array
from bisect import bisect_right
from enum import IntEnum
from itertools import compress
from struct import error as StructError, pack
from typing import Callable, NamedTuple

from mgtui.recording.array_values import ArraySnapshots
from mgtui.recording.blocks import def_block
from mgtui.trace import Closure, EventChunk, EventKind, NodeChunk, WriteChunk, lanes
from mgtui.trace.arrays import EVENT, WRITE, ArrayChunk

ID = "_mgtui_id"  # the attribute in which a node of a class with an instance dict keeps its id
CREATE, BACKWARD, GRAD, DATA = (k.code for k in EventKind)


class NodeRow(IntEnum):
    """The fields of a node's row in `Records.nodes`."""

    KIDS_END = 0  # where its children end in `kids` (they start where the last node's end)
    OP = 1
    LABEL = 2  # as made (None for a class without labels); see `late_labels`
    DATA = 3
    LINE = 4  # the scenario line that made it (0: none known)


class EventRow(IntEnum):
    """The fields of an event's row in `Records.events`."""

    KIND = 0  # `EventKind.code`
    NODE = 1
    BEFORE = 2  # a lone write's value before (grad and data events), else 0.0
    AFTER = 3
    LINE = 4
    CLOSURE = 5  # a `_backward` call's closure index in `codes`, else -1
    WRITES_AT = 6  # len(writes) as the event was made: its writes start there (after
    #                `Records.packed.writes` packed ones)


class WriteRow(IntEnum):
    """The fields of a write's row in `Records.writes` (a write inside a `_backward`)."""

    NODE = 0
    FIELD = 1  # `Field.code`
    BEFORE = 2
    AFTER = 3
    LINE = 4


NODE_ROW, EVENT_ROW, WRITE_ROW = len(NodeRow), len(EventRow), len(WriteRow)
# 1 for the kind of a lone write (a grad or data event), else 0: only theirs carry values
LONE = bytes(int(k in (GRAD, DATA)) for k in range(256))


class Mark(NamedTuple):
    """A point in a recording: how many rows of each kind it had made."""

    nodes: int = 0
    events: int = 0
    writes: int = 0


Chunks = list  # of NodeChunk | EventChunk | WriteChunk, in that order
PACK_EVERY = 0x4000  # nodes between two packs (the hooks' `not nid & 0x3FFF`, the inlined `limit`)


class Records:
    """The columns of one recording (see the module's docstring), and the tables every
    probe shares while it runs: `stack` (the `_backward` calls running, innermost last:
    a write while it is not empty is that call's), `made_inside` (nodes made inside a
    `_backward` call, whose creation steps follow that call's writes) and `replays` (odd
    while a `before_backward` hook runs: its records are taken back after it)."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.kids: list[int] = []
        self.events: list = []
        self.writes: list = []
        self.packed = Mark()  # the rows moved out of `nodes`, `events` and `writes`
        self.id_base = [0]  # its nodes, as the probes read it: the id of the first fresh one
        # where each packed node's children end: a column a pack, counted from that pack's
        # first child (`ends_from`: the pack's first node)
        self.ends: list[array] = []
        self.ends_from: list[int] = []
        self.released = Mark()  # the records taken and let go (`release`)
        self.shelf: list[tuple[Mark, Chunks]] = []  # the packed chunks, each from a mark
        self.lock = threading.Lock()  # held to move rows out, or to read them elsewhere
        self.late_labels: dict[int, object] = {}
        self.stack: list[int] = []
        self.made_inside: list[int] = []
        self.replays = 0
        self.name_ids = array("i")  # names found (`mgtui.recording.naming.Namer` appends)
        self.name_texts: list[str] = []  # (each name's id is appended before its text)
        self.codes: dict[object, int] = {}  # each `_backward` closure's code: its index
        # The same by the code object's id, which is kept alive in `codes` or here. (A
        # code object does not cache its hash, and hashes all its constants, nested code
        # included: looking a big one up by value on every node costs microseconds.)
        self.code_ids: dict[int, tuple[int, object]] = {}
        self.closure_ids: dict[int, int] = {}  # the same, the index alone
        self.default_codes: set[object] = set()  # the no-op `_backward` an __init__ sets
        self.add_node = self.nodes.extend  # (a row)
        self.add_kid = self.kids.append
        self.add_event = self.events.extend
        self.add_write = self.writes.extend
        self.forgetting: list[Callable[[int], None]] = []  # told the first node forgotten
        # (event, frames): the chain of frames, innermost first, each (file, line,
        # function), from which the `_backward` call `event` was made, for each call made
        # from a frame other than the last one's whose chain differs (`Callers`)
        self.callers: list[tuple[int, tuple[tuple[str, int, str], ...]]] = []
        self.arrays = ArraySnapshots(self, (EVENT_ROW, WRITE_ROW))  # array values, beside the rows

    # -- counts ----------------------------------------------------------------------------
    def node_count(self) -> int:
        return self.packed.nodes + len(self.nodes) // NODE_ROW

    def event_count(self) -> int:
        return self.packed.events + len(self.events) // EVENT_ROW

    def write_count(self) -> int:
        return self.packed.writes + len(self.writes) // WRITE_ROW

    def mark(self) -> Mark:
        return Mark(self.node_count(), self.event_count(), self.write_count())

    def is_leaf(self, nid: int) -> bool:
        first = self.packed.nodes
        if not 0 <= nid < self.node_count():
            return False
        if nid < first:
            at = bisect_right(self.ends_from, nid) - 1
            ends, k = self.ends[at], nid - self.ends_from[at]
            return ends[k] == (ends[k - 1] if k else 0)
        nodes, N = self.nodes, NODE_ROW
        k = (nid - first) * N + NodeRow.KIDS_END
        return nodes[k] == (nodes[k - N] if nid > first else 0)

    # -- closures --------------------------------------------------------------------------
    def closure_index(self, code) -> int:
        """The index of a `_backward` closure's code among those recorded."""
        found = self.code_ids.get(id(code))
        if found is not None:
            return found[0]
        ci = self.codes.get(code)
        if ci is None:
            ci = self.codes[code] = len(self.codes)
        self.code_ids[id(code)] = (ci, code)
        self.closure_ids[id(code)] = ci
        return ci

    def closures(self, since: int = 0) -> list[Closure]:
        """The source of each closure recorded since the first `since`."""
        codes = list(self.codes)[since:]
        return [closure_source(code, code in self.default_codes) for code in codes]

    # -- taking records back -----------------------------------------------------------------
    def forget_since(self, mark: Mark, kids: int) -> None:
        """Take back every record made since `mark` (and `kids` children): the nodes a
        hook's replay made are forgotten too, so that ids keep following the recorded
        creations. (Nothing is packed while a replay runs: they are all fresh.)"""
        packed = self.packed
        del self.writes[(mark.writes - packed.writes) * WRITE_ROW:]
        del self.events[(mark.events - packed.events) * EVENT_ROW:]
        if self.arrays:
            self.arrays.forget_since(mark.nodes, mark.events, mark.writes)
        while self.callers and self.callers[-1][0] >= mark.events:
            self.callers.pop()
        first = mark.nodes
        self.made_inside[:] = [nid for nid in self.made_inside if nid < first]
        if self.node_count() > first:
            del self.nodes[(first - packed.nodes) * NODE_ROW:]
            del self.kids[kids:]
            for nid in [n for n in self.late_labels if n >= first]:
                del self.late_labels[nid]
            for tell in self.forgetting:
                tell(first)

    def replay(self, hook: Callable, d, fn: Callable[[], object]) -> None:
        """Run a `before_backward` hook, which may call `fn`, then take back whatever it
        recorded. `replays` is odd meanwhile: a reader in another thread (the runner's
        flusher) takes the lengths only while it is even and unchanged."""
        mark, kids = self.mark(), len(self.kids)
        last = self.arrays.kept_last()  # (arrays' snapshots)
        self.replays += 1
        try:
            hook(d, fn)
        finally:
            self.forget_since(mark, kids)
            if last is not None:
                self.arrays.put_back(last)
            self.replays += 1

    def settled(self) -> Mark | None:
        """The records another thread may read now: None while a replay is being taken
        back; else the counts, less the events at the end whose writes are not all in
        yet. (Writes are counted first: an event made after that has its first write at
        or past the count, and is held back until those writes are counted too.)"""
        replays = self.replays
        mark = self.mark()
        if replays % 2 or self.replays != replays:
            return None
        events, E, at, packed = self.events, EVENT_ROW, EventRow.WRITES_AT, self.packed
        end, n_events = (mark.writes - packed.writes) * WRITE_ROW, mark.events
        # (a packed event's writes are all counted: they were packed with it)
        while n_events > packed.events and events[(n_events - packed.events - 1) * E + at] > end:
            n_events -= 1
        return mark._replace(events=n_events)

    # -- packing -----------------------------------------------------------------------------
    def pack(self, nodes: int = 0) -> None:
        """Move every fresh row out of the lists, into packed chunks on the `shelf` (those
        released already, let go): on the recording's thread, not while a replay runs
        (it may take rows back), nor while another thread reads (it packs next time).
        (`nodes`, the count the probes pass as to `on_progress`, is not needed.)"""
        if len(self.nodes) < PACK_EVERY // 2 * NODE_ROW or self.replays & 1 or \
                not self.lock.acquire(blocking=False):
            return  # (not a pack's worth of fresh nodes yet: the probes' first call)
        try:
            upto = self.mark()
            since = Mark(*map(max, self.packed, self.released))
            chunks = self._fresh_chunks(since, upto)
            if chunks:
                self.shelf.append((since, chunks))
            self._pack_ends(since, chunks)
            del self.nodes[:], self.kids[:], self.events[:], self.writes[:]
            self.packed = upto
            self.id_base[0] = upto.nodes
        finally:
            self.lock.release()

    def _pack_ends(self, since: Mark, chunks: Chunks) -> None:
        """Where the fresh nodes' children end, counted from the first fresh child, onto
        `ends`: the packed node chunk's own column; from the rows where the chunk does
        not hold them all (the runner's child sent some before this pack). (Not shifted
        to count over the whole run: `is_leaf` needs only a node's and the one before.)"""
        fresh = len(self.nodes) // NODE_ROW
        if not fresh:
            return
        rel = chunks[0].child_ends if chunks and isinstance(chunks[0], NodeChunk) else None
        if rel is None or since.nodes != self.packed.nodes or len(rel) != fresh:
            rel = int32s(self.nodes[NodeRow.KIDS_END::NODE_ROW])
        self.ends.append(rel)
        self.ends_from.append(self.packed.nodes)

    def release(self, upto: Mark) -> None:
        """The records before `upto` have been taken (the runner's child has sent them):
        let the packed ones go. Call with `lock` held."""
        self.released = upto
        self.shelf = [(since, chunks) for since, chunks in self.shelf
                      if any(map(int.__lt__, upto, _ends(since, chunks)))]

    # -- chunks ------------------------------------------------------------------------------
    # Each column is sliced straight out of the flat lists and converted at C speed (`map`
    # of an int's own method rather than a generator): the runner's child cuts chunks in
    # the recording process, so their time is the recording's too.
    def chunks(self, since: Mark, upto: Mark) -> Chunks:
        """The records made between two marks, as chunks: nodes, events, writes (each
        only if there are any; those packed first, as they were packed). The packed ones
        are taken whole: `since` is where a packed chunk starts, or past it (the runner's
        child asks from what it sent last, which is where the next pack started)."""
        out: Chunks = []
        for first, chunks in self.shelf:
            last = _ends(first, chunks)
            taken = False  # (a pack's arrays go with its rows: after them, if they go)
            for chunk in chunks:
                if type(chunk) is ArrayChunk:
                    if taken:
                        out.append(chunk)
                    continue
                k = _KINDS.index(type(chunk))
                if since[k] < last[k] and first[k] < upto[k]:
                    if not (since[k] <= first[k] and last[k] <= upto[k]):
                        raise ValueError(f"records {since} to {upto} cut a packed chunk")
                    out.append(chunk)
                    taken = True
        return out + self._fresh_chunks(Mark(*map(max, since, self.packed)), upto)

    def _fresh_chunks(self, since: Mark, upto: Mark) -> Chunks:
        """The fresh records between two marks (at or past `packed`), as chunks: nodes,
        events, writes, each only if there are any."""
        out: Chunks = []
        if upto.nodes > since.nodes:
            out.append(self.node_chunk(since.nodes, upto.nodes))
        if upto.events > since.events:
            out.append(self.event_chunk(since.events, upto.events))
        if upto.writes > since.writes:
            out.append(self.write_chunk(since.writes, upto.writes))
        if self.arrays:
            arrays = self.arrays.chunk(since, upto)  # (after the rows they belong to)
            if arrays is not None:
                out.append(arrays)
        return out

    def node_chunk(self, first: int, end: int) -> NodeChunk:
        """Nodes `first` to `end` (not included, fresh), with their labels as made."""
        N, nodes = NODE_ROW, self.nodes
        a, b = (first - self.packed.nodes) * N, (end - self.packed.nodes) * N
        ends = nodes[a + NodeRow.KIDS_END : b : N]  # (among the fresh children)
        base = nodes[a - N + NodeRow.KIDS_END] if a else 0
        return NodeChunk(
            tuple(label_texts(nodes[a + NodeRow.LABEL : b : N])),
            strings(nodes[a + NodeRow.OP : b : N]), floats(nodes[a + NodeRow.DATA : b : N]),
            ints(nodes[a + NodeRow.LINE : b : N]),
            int32s(list(map(base.__rsub__, ends)) if base else ends),
            int32s(self.kids[base : ends[-1]]))

    def event_chunk(self, first: int, end: int) -> EventChunk:
        E, events, packed = EVENT_ROW, self.events, self.packed
        a, b = (first - packed.events) * E, (end - packed.events) * E
        starts = write_counts(events[a + EventRow.WRITES_AT : b : E])
        if packed.writes:  # (counted among the fresh writes: from the first of all)
            starts = lanes.shifted(starts, packed.writes) or array(
                "i", map(packed.writes.__add__, starts))
        kinds = small_codes(events[a + EventRow.KIND : b : E])
        lone = kinds.tobytes().translate(LONE)  # the before and after of lone writes only
        before = list(compress(events[a + EventRow.BEFORE : b : E], lone))
        return EventChunk(
            kinds, int32s(events[a + EventRow.NODE : b : E]),
            self.values(before, EVENT, compress(range(first, end), lone)),
            floats(list(compress(events[a + EventRow.AFTER : b : E], lone))),
            ints(events[a + EventRow.LINE : b : E]), int32s(events[a + EventRow.CLOSURE : b : E]),
            starts)

    def write_chunk(self, first: int, end: int) -> WriteChunk:
        W, writes = WRITE_ROW, self.writes
        a, b = (first - self.packed.writes) * W, (end - self.packed.writes) * W
        return WriteChunk(
            int32s(writes[a + WriteRow.NODE : b : W]),
            small_codes(writes[a + WriteRow.FIELD : b : W]),
            self.values(writes[a + WriteRow.BEFORE : b : W], WRITE, range(first, end)),
            floats(writes[a + WriteRow.AFTER : b : W]),
            ints(writes[a + WriteRow.LINE : b : W]))

    def values(self, befores: list, place: int, rows) -> array:
        """A column of befores as doubles: where one is still an array (a float was
        written over it: the hot path checks the value written only), it is copied now
        into `arrays` and its row holds nan. (`rows`, the befores' rows, an iterable
        read only then.)"""
        column = packed("d", befores)
        if column is not None:
            return column
        np = sys.modules.get("numpy")
        if np is not None:
            for k, row in enumerate(rows):
                if isinstance(befores[k], np.ndarray):
                    self.arrays.late_before(place, row, befores[k])
        return floats(befores)

    def relabelled(self, nodes: int) -> list[tuple[int, str]]:
        """(id, label) of the first `nodes` nodes whose label was set, to a string other
        than the one they were made with, after they were made (`e.label = 'e'`); for a
        node whose row is let go (sent), any label set late."""
        found = []
        for nid, label in self.late_labels.items():
            if isinstance(label, str) and nid < nodes:
                was = self.made_label(nid)
                if was is None or label != (was if isinstance(was, str) else ""):
                    found.append((nid, label))
        return found

    def made_label(self, nid: int) -> object:
        """The label node `nid` was made with; None once its row is let go."""
        if nid >= self.packed.nodes:
            return self.nodes[(nid - self.packed.nodes) * NODE_ROW + NodeRow.LABEL]
        for first, chunks in self.shelf:
            if isinstance(chunks[0], NodeChunk) and first.nodes <= nid < first.nodes + len(
                    chunks[0].labels):
                return chunks[0].labels[nid - first.nodes]
        return None

    def names(self, since: int = 0) -> list[tuple[int, str]]:
        """(id, name) of the names found since the first `since`, in the order found."""
        n = len(self.name_texts)
        return list(zip(self.name_ids[since:n], self.name_texts[since:n]))


_KINDS = (NodeChunk, EventChunk, WriteChunk)  # (in a `Mark`'s order)


def _ends(first: Mark, chunks: Chunks) -> Mark:
    """Where the packed `chunks`, made from `first`, end, kind by kind."""
    n, e, w = first
    for c in chunks:
        if isinstance(c, NodeChunk):
            n += len(c.ops)
        elif isinstance(c, EventChunk):
            e += len(c.kinds)
        elif isinstance(c, WriteChunk):
            w += len(c.nodes)  # (an `ArrayChunk` holds no rows of its own)
    return Mark(n, e, w)


# -- columns as the trace keeps them ----------------------------------------------------------


def small_codes(values: list) -> array:
    """A column of event kinds or write fields as signed bytes, through `bytes` (a third
    of the time of `array("b", values)`). They are the recorder's own codes, 0 to 3: never
    past 127, which would read back negative."""
    return array("b", bytes(values))


def label_texts(values: list) -> list:
    """Labels as strings: anything else (None, for a class without labels) becomes ""."""
    if values.count(None) == len(values):
        return [""] * len(values)
    try:
        "".join(values)  # fails unless every value is a str, at C speed
        return values
    except TypeError:
        return [x if isinstance(x, str) else "" for x in values]


def strings(values: list) -> tuple[str, ...]:
    """A tuple of str; anything else (an `_op` that is not a string) becomes its str()."""
    try:
        "".join(values)  # fails unless every value is a str, at C speed
        return tuple(values)
    except TypeError:
        return tuple(v if isinstance(v, str) else str(v) for v in values)


def packed(code: str, values: list) -> array | None:
    """`array(code, values)` for a list of ints ("i") or floats ("d") at a third of its
    cost, or None where a value is not such a number. (`array` reads each value as a
    call's argument, through `PyArg_Parse`: some 250 instructions a value, a tenth of
    a recorded step's; `struct.pack` reads it as a number.)"""
    out = array(code)
    try:
        out.frombytes(pack(f"{len(values)}{code}", *values))
    except (StructError, TypeError, OverflowError):
        return None
    return out


def write_counts(lengths: list) -> array:
    """The events' `writes_at` (the length of `writes`, `WRITE_ROW` a write) as counts of
    writes, int32: divided by numpy where it is loaded (a numpy engine's run: a tenth of
    the time of an int's method a value), else one by one."""
    np = sys.modules.get("numpy")
    if np is not None and len(lengths) > 64:
        return array("i", (np.frombuffer(int32s(lengths), np.int32) // WRITE_ROW).tobytes())
    return int32s(list(map(WRITE_ROW.__rfloordiv__, lengths)))  # (packed, not `array(...)`)


def int32s(values: list) -> array:
    """array('i', values), with its errors."""
    column = packed("i", values)
    return array("i", values) if column is None else column


def ints(values: list) -> array:
    """An array of ints; a missing value (None) becomes 0."""
    column = packed("i", values)
    if column is None:
        column = array("i", [v if isinstance(v, int) else 0 for v in values])
    return column


def floats(values: list) -> array:
    """An array of doubles; values that are not numbers become nan."""
    column = packed("d", values)
    if column is None:
        column = array("d", [to_float(x) for x in values])
    return column


def to_float(x: object) -> float:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return math.nan


# -- closures ---------------------------------------------------------------------------------


def closure_source(code: object, default: bool = False) -> Closure:
    """The source of a `_backward` closure's code, read from the line cache.

    The same block `inspect.getsourcelines` gives, without its scan of every loaded
    module for the code's file (most of the time of recording a small scenario): for a
    `def`, from the code's positions where they tell (`blocks.def_block`), else
    tokenized by `inspect.getblock`; where the first line is not a `def` or a `lambda`,
    `inspect` finds the block itself."""
    name = getattr(code, "co_name", "?")
    filename = getattr(code, "co_filename", "?")
    first = getattr(code, "co_firstlineno", 0)
    lines = []
    if first:
        linecache.checkcache(filename)  # the file may have been edited since (reload)
        lines = linecache.getlines(filename)
    block = def_block(code, lines) if isinstance(code, types.CodeType) else None
    if block is None:  # (not found from the code's own positions: tokenized)
        block, first = tokenized_block(code, lines, first)
    return Closure(name, filename, first, tuple(line.rstrip("\n") for line in block), default)


def tokenized_block(code: object, lines: list[str], first: int) -> tuple[list[str], int]:
    """(the block of `code`'s source as `inspect` finds it, its first line)."""
    import inspect

    if first and first <= len(lines) and _BLOCK_START.match(lines[first - 1]):
        try:
            return inspect.getblock(lines[first - 1:]), first
        except (SyntaxError, tokenize.TokenError):
            return lines[first - 1:first], first
    try:
        return inspect.getsourcelines(code)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return (lines[first - 1:first] if first else []), first


# the first line of a block, as `inspect.findsource` looks for it
_BLOCK_START = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")
