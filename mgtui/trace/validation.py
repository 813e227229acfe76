"""The checks of a trace's records before it is built: every reference and bound, so
that no query of the trace can fail or loop. A trace from a file or another process is
checked a chunk at a time, mostly at C speed (`mgtui.trace.lanes`). A part of `TraceBuilder`."""

from __future__ import annotations

import re
import sys
from array import array
from collections.abc import Sequence
from itertools import accumulate, chain, compress, islice, repeat
from operator import lt, sub

from mgtui.trace import lanes
from mgtui.trace.records import (_CREATE, _DATA, MAX_INPUTS, MAX_LINE, PASS_KINDS, TraceError,
                                 TraceFormatError)


class RecordValidation:
    """`validate` and its checks of the records added since the last one. A mixin of
    `TraceBuilder`: it reads the builder's columns, and keeps how far it has checked."""

    _checked_nodes: int
    _raw_from: int
    _checked_events: int
    _checked_writes: int
    _made: int

    def validate(self, passes: Sequence[tuple[str, int, int]] | None = None,
                 error: TraceError | None = None) -> None:
        """Check every reference and bound, so that no query of the trace can fail or
        loop: raise TraceFormatError naming the first bad field. A trace from a file or
        from another process is checked before it is built.

        Records are append-only, so only those added since the last successful check
        are checked: a trace that grows while it records costs a chunk's check per
        update, not the whole trace's. The labels and ops checked are made inert here
        too, as `build()` needs them."""
        n, e, w = self.node_count, self.event_count, len(self.wr_node)
        self._validate_nodes(self._checked_nodes)
        made = self._validate_events(self._checked_events)
        self._validate_writes(self._checked_writes, self._checked_events)
        if passes is not None:
            self._validate_passes(passes)
        if error is not None:
            if not 0 <= error.after_event <= self.event_count:
                raise TraceFormatError("error.after_event", f"{error.after_event} is not a step "
                                       f"of this trace (0…{self.event_count})")
            _check_line("error.line", error.line or 0)
        self._checked_nodes, self._checked_events, self._checked_writes = n, e, w
        self._made = made
        self._catch_up_names()  # (for build(); here, while a loader waits for more records)

    def _validate_nodes(self, n0: int) -> None:
        n, raw = self.node_count, self._raw_from  # (the raw labels: nodes `raw` on)
        for name, count in (("label", raw + len(self.labels)), ("data", len(self.node_data)),
                            ("line", len(self.node_line))):
            if count != n:
                raise TraceFormatError(f"nodes.{name}", f"{count} values for {n} nodes")
        if len(self.child_start) != n + 1 or self.child_start[-1] != len(self.child_ids):
            raise TraceFormatError("nodes.children", "the children do not add up")
        labels, ops = self.labels[max(n0 - raw, 0):], self.ops[max(n0 - raw, 0):]
        try:  # (joining fails on anything but strings, at C speed)
            "".join(labels), "".join(ops)  # noqa: B018
            strings = True
        except TypeError:
            strings = False
        if not strings:
            bad = next(k for k in range(max(n0, raw), n) if not isinstance(
                self.labels[k - raw], str) or not isinstance(self.ops[k - raw], str))
            raise TraceFormatError(f"nodes[{bad}].label", "labels and ops must be strings")
        _check_lines("nodes", self.node_line, n0)
        # Every child was made before its node (ids follow creation order), so a trace
        # has no cycles. Checked a column at a time, at C speed (`mgtui.trace.lanes`): moons
        # has 400k inputs.
        start = self.child_start
        ends = start[n0:]
        if not lanes.nondecreasing(ends):
            raise TraceFormatError("nodes.children", "a node's children end before they start")
        first = start[n0]
        if len(self.child_ids) - first > MAX_INPUTS:  # (only then can one node have more)
            _check_inputs(ends, n0)
        ids = self.child_ids[first:]
        if ids and not _made_before(ids, ends, n0):
            owners = chain.from_iterable(map(repeat, range(n0, n), map(sub, ends[1:], ends)))
            j, nid = next((first + j, o) for j, (c, o) in enumerate(zip(ids, owners))
                          if not -1 <= c < o)
            raise TraceFormatError(f"nodes[{nid}].children[{j - start[nid]}]",
                                   f"{self.child_ids[j]} is not a node made before node {nid}")

    def _validate_events(self, e0: int) -> int:
        """Check events `e0` on; the number of nodes made by all the events."""
        e, n = self.event_count, self.node_count
        for name, column in (("node", self.ev_node), ("line", self.ev_line),
                             ("closure", self.ev_closure), ("writes", self.ev_write_start)):
            if len(column) != e:
                raise TraceFormatError(f"events.{name}", f"{len(column)} values for {e} events")
        lone = len(self.lone_at)
        for name, column in (("before", self.lone_before), ("after", self.lone_after)):
            if len(column) != lone:
                raise TraceFormatError(f"events.{name}", f"{len(column)} values for "
                                       f"{lone} grad and data writes")
        if e0 >= e:
            return self._made
        kinds, nodes, closure = self.ev_kind[e0:], self.ev_node[e0:], self.ev_closure[e0:]
        kind_bytes = kinds.tobytes()
        if kind_bytes.translate(None, _KIND_BYTES):  # (bytes at C speed: 400k events)
            bad = e0 + next(i for i, k in enumerate(kinds) if not 0 <= k <= _DATA)
            raise TraceFormatError(f"events[{bad}].kind", f"{self.ev_kind[bad]} is not a kind")
        # Nodes are made in id order, and an event names a node only once it is made
        # (which also keeps every node below the count).
        made = _made_in_order(kind_bytes, nodes, self._made, n)
        if made is None:  # a bad event, or events that alternate: one at a time
            made = self._made_one_by_one(e0, kind_bytes, nodes)
        closures = len(self.closures)
        if not _closures_within(closure, closures):
            bad = e0 + next(i for i, x in enumerate(closure) if not -1 <= x < closures)
            raise TraceFormatError(f"events[{bad}].closure", f"{self.ev_closure[bad]} is not "
                                   f"one of the {closures} closures")
        _check_lines("events", self.ev_line, e0)
        return made

    def _made_one_by_one(self, e0: int, kind_bytes: bytes, nodes: array) -> int:
        """`_made_in_order`, an event at a time, naming the first bad one."""
        n, made0 = self.node_count, self._made
        creating = kind_bytes.translate(_CREATING)  # 1 for a creation, else 0
        made = array("i", compress(nodes, creating))
        existing = islice(accumulate(creating, initial=made0), 1, None)
        i = next((i for i, (nid, m) in enumerate(zip(nodes, existing)) if not 0 <= nid < min(m, n)),
                 None)
        if i is not None:
            nid, i = nodes[i], e0 + i
            if not 0 <= nid < n:
                raise TraceFormatError(f"events[{i}].node", f"{nid} is not a node (there are {n})")
            if creating[i - e0]:
                raise TraceFormatError(f"events[{i}].node", f"makes node {nid}, but the next "
                                       f"node to be made is {made0 + creating[:i - e0].count(1)}")
            raise TraceFormatError(f"events[{i}].node", f"node {nid} is used before it is made")
        if made != array("i", range(made0, made0 + len(made))):
            k = next(k for k, nid in enumerate(made) if nid != made0 + k)
            i = e0 + next(islice(compress(range(len(nodes)), creating), k, None))
            raise TraceFormatError(f"events[{i}].node", f"makes node {made[k]}, but the next "
                                   f"node to be made is {made0 + k}")
        return made0 + len(made)

    def _validate_writes(self, w0: int, e0: int) -> None:
        w, n = len(self.wr_node), self.node_count
        for name, column in (("field", self.wr_field), ("before", self.wr_before),
                             ("after", self.wr_after), ("line", self.wr_line)):
            if len(column) != w:
                raise TraceFormatError(f"writes.{name}", f"{len(column)} values for {w} writes")
        # Writes follow their events in order. (They belong to `_backward` calls; a
        # `_backward` that makes Values has its later writes after those creations.)
        starts = self.ev_write_start[max(e0 - 1, 0):]
        starts.append(w)
        if len(starts) > 1 and ((e0 <= 1 and starts[0] != 0) or not lanes.nondecreasing(starts)):
            raise TraceFormatError("events.writes", "the writes of the events are not in order")
        if not self.ev_write_start and w:
            raise TraceFormatError("writes", f"{w} writes belong to no _backward call")
        nodes, fields = self.wr_node[w0:], self.wr_field[w0:]
        if not lanes.below(nodes, n):
            bad = w0 + next(k for k, x in enumerate(nodes) if not 0 <= x < n)
            raise TraceFormatError(f"writes[{bad}].node", f"{self.wr_node[bad]} is not a node")
        if fields and fields.tobytes().translate(None, b"\0\1"):
            bad = w0 + next(k for k, x in enumerate(fields) if x not in (0, 1))
            raise TraceFormatError(f"writes[{bad}].field", "must be grad or data")
        _check_lines("writes", self.wr_line, w0)

    def _validate_passes(self, passes: Sequence[tuple[str, int, int]]) -> None:
        at = 0
        for k, (kind, start, end) in enumerate(passes):
            if kind not in PASS_KINDS:
                raise TraceFormatError(f"passes[{k}].kind", f"{kind!r} is not a pass kind")
            if start != at or not start <= end <= self.event_count:
                raise TraceFormatError(f"passes[{k}]", f"steps {start}…{end} do not follow "
                                       f"on from step {at} within {self.event_count} steps")
            at = end
        if at != self.event_count:
            raise TraceFormatError("passes", f"they cover {at} of {self.event_count} steps")


def _made_in_order(kinds: bytes, nodes: array, made0: int, n: int) -> int | None:
    """The number of nodes made once these events (`kinds`, `nodes`) are done, given
    `made0` made before them, if each creation makes the next of the `n` nodes and
    every other event names a node made before it; else None (also when the events
    alternate, which is left to the check that goes an event at a time).

    A run of creations is compared with the ids it should make, and a run of other
    events with the count made before it, each in one go (`mgtui.trace.lanes`)."""
    runs = [run.span() for run in _CREATES.finditer(kinds)]
    if len(runs) * RUN_LENGTH > len(kinds):
        return None
    made, at = made0, 0
    for start, stop in runs:
        if ((at < start and not lanes.below(nodes[at:start], made)) or made + stop - start > n
                or nodes[start:stop].tobytes() != lanes.iota(made, stop - start)):
            return None
        made, at = made + stop - start, stop
    if at < len(kinds) and not lanes.below(nodes[at:], made):
        return None
    return made


def _made_before(ids: array, ends: array, n0: int) -> bool:
    """Is every child id in `ids` -1 or a node made before its own (`ends` are where
    the children of nodes n0, n0 + 1, ... end, from where those of n0 start)?

    Each node's id is laid next to each of its children (`lanes.repeat_ids`), and the
    two columns compared in one go; one by one when a node has many children."""
    steps = lanes.steps(ends)
    owners = None if steps is None else lanes.repeat_ids(n0, steps)
    if owners is None or len(owners) != len(ids):
        owners = chain.from_iterable(map(repeat, range(n0, n0 + len(ends) - 1),
                                         map(sub, ends[1:], ends)))
        return min(ids) >= -1 and all(map(lt, ids, owners))
    return lanes.within(ids, -1, 1 << 31) and lanes.ordered(ids, owners)


def _check_inputs(ends: array, n0: int) -> None:
    """No node has more than MAX_INPUTS inputs (`ends`: where the children of nodes n0,
    n0 + 1, ... end, nondecreasing, from where those of n0 start)."""
    if lanes.steps(ends) is not None:  # (every node has fewer than 256)
        return
    widths = array("q", map(sub, islice(ends, 1, None), ends))
    if max(widths, default=0) > MAX_INPUTS:
        k = next(k for k, width in enumerate(widths) if width > MAX_INPUTS)
        raise TraceFormatError(f"nodes[{n0 + k}]", f"has {widths[k]:,} inputs, more than "
                               f"mgtui shows of a node ({MAX_INPUTS:,})")


def _closures_within(column: array, closures: int) -> bool:
    """Is every closure index of a column -1 or below `closures`? (A column of bytes:
    one `bytes.translate` deletes the allowed ones; wider ones, in 32-bit lanes.)"""
    if column.typecode == "b":
        allowed = bytes(range(min(closures, 128))) + b"\xff"
        return not column.tobytes().translate(None, allowed)
    if column.typecode != "i":
        column = array("i", column)
    return lanes.within(column, -1, closures)


def _check_line(where: str, line: int) -> None:
    if not isinstance(line, int) or not 0 <= line <= MAX_LINE:
        raise TraceFormatError(where, f"{line!r} is not a line number")


def _check_lines(what: str, lines: array, start: int = 0) -> None:
    """Lines `start` on are line numbers (or 0): 32-bit ints whose top byte is 0, which
    is checked a byte string at a time."""
    if lines.itemsize < 4:  # (unsigned 8 or 16 bits: every number is a line)
        return
    part = lines[start:]
    if part and _top_bytes(part).strip(b"\0"):
        bad = start + next(k for k, x in enumerate(part) if not 0 <= x <= MAX_LINE)
        raise TraceFormatError(f"{what}[{bad}].line", f"{lines[bad]} is not a line number")


def _top_bytes(column: array) -> bytes:
    """The most significant byte of each number of an int array: all 0 when every
    number is in [0, 2**(8 * (itemsize - 1)))."""
    size = column.itemsize
    top = size - 1 if sys.byteorder == "little" else 0
    return column.tobytes()[top::size]  # (a copy, then a slice: faster than a strided view)
_KIND_BYTES = bytes(range(_DATA + 1))
_CREATING = bytes(int(b == _CREATE) for b in range(256))  # a table for bytes.translate
_CREATES = re.compile(b"%c+" % _CREATE)  # a run of events that make nodes
RUN_LENGTH = 256  # events per run of creations, on average, below which they go one by one
