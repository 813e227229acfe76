"""The indexes derived from a trace, each built once on first use (or ahead of it, off
the UI thread, by `build_indexes`): every node's uses and users, the event that made
each node, and each write's earlier writes to the same field. A part of `Trace`."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from functools import cached_property
from itertools import repeat
from typing import Self

from mgtui.trace.records import EventKind, Pass, Write


class TraceIndexes:
    """A trace's derived indexes. A mixin of `Trace`: it reads the trace's node, event
    and write columns and its passes (and, for `build_indexes`, its final state)."""

    passes: tuple[Pass, ...]
    _child_start: array
    _child_ids: array
    _ev_node: array
    _ev_write_start: array
    _wr_node: array
    _wr_field: array

    @cached_property
    def _created_at(self) -> array:
        at = array("i", [-1]) * self.node_count  # (int32: indexes are kept small)
        for i in self.events_of(EventKind.CREATE):
            at[self._ev_node[i]] = i
        return at

    def created_at(self, nid: int) -> int | None:
        """The index of the event that made node `nid`."""
        i = self._created_at[nid]
        return i if i >= 0 else None

    @cached_property
    def uses(self) -> array:
        """Per node, how many nodes take it as an input (its fan-out), over the whole
        trace: every training step's graph (`uses_within` counts one graph's)."""
        uses = array("i", bytes(4 * self.node_count))
        for nid in range(self.node_count):
            for c in set(self.children(nid)):
                if c >= 0:
                    uses[c] += 1
        return uses

    def build_indexes(self, older: Self | None = None, users: bool = True,
                      final: bool = False) -> None:
        """Build the derived indexes now (off the UI thread), not on first use.

        `older` is this run as it was recorded so far, earlier (a prefix of this trace):
        its indexes are extended by what was added since, not built again. `users`
        (the Graph pane's) cannot be extended: False leaves it to its first use.
        `final` replays the final state now too; left to its first use (`G`), it
        costs no memory until then (a replay of every event: moons 0.05 s)."""
        if older is not None and older.node_count <= self.node_count \
                and len(older) <= len(self) and "uses" in older.__dict__:
            self._extend_indexes(older)
        self.uses, self._created_at, self._earlier_write  # noqa: B018
        if users:
            self._users  # noqa: B018
        if final:
            self._final  # noqa: B018

    def _extend_indexes(self, older: Self) -> None:
        d = self.__dict__
        n0, n = older.node_count, self.node_count
        uses = array("i", older.uses)
        uses.frombytes(bytes(4 * (n - n0)))
        for nid in range(n0, n):
            for c in set(self.children(nid)):
                if c >= 0:
                    uses[c] += 1
        d["uses"] = uses
        if "_created_at" in older.__dict__:
            at = array("i", older._created_at)
            at.extend(repeat(-1, n - n0))
            for i in self.events_of(EventKind.CREATE, len(older), len(self)):
                at[self._ev_node[i]] = i
            d["_created_at"] = at
        if "_earlier_write" in older.__dict__:
            # passes that ended before the older trace did are the same in both
            kept = next((p for p in older.passes if p.end == len(older)), None)
            if kept is not None and kept.kind == "backward":
                upto = self._ev_write_start[kept.start]
            else:
                upto = older.write_count
            d["_earlier_write"] = self._earlier_writes(older._earlier_write[:upto], upto)

    @cached_property
    def _users(self) -> tuple[array, array]:
        """The inverse of `children`: each node's users (each once, in creation order),
        as offsets into one array of ids."""
        count = self.node_count
        start = array("i", bytes(4 * (count + 1)))  # (int32: kept small)
        total = 0
        uses = self.uses
        for nid in range(count):
            start[nid] = total
            total += uses[nid]
        start[count] = total
        ids = array("i", bytes(4 * total))
        fill = start[:-1]
        first, kids = self._child_start, self._child_ids
        for nid in range(count):
            lo, hi = first[nid], first[nid + 1]
            for c in (kids[lo:hi] if hi - lo < 2 else dict.fromkeys(kids[lo:hi])):
                if c >= 0:
                    ids[fill[c]] = nid
                    fill[c] += 1
        return start, ids

    def users(self, nid: int) -> tuple[int, ...]:
        """The nodes that take node `nid` as an input, each once, in creation order."""
        start, ids = self._users
        return tuple(ids[start[nid]:start[nid + 1]])

    def uses_within(self, nid: int, made: range) -> int:
        """How many of the nodes `made` (a forward pass's: one graph) take node `nid` as
        an input: its uses in that graph, where `uses` counts every pass's."""
        if not made:
            return 0
        start, ids = self._users
        lo, hi = start[nid], start[nid + 1]
        return bisect_left(ids, made.stop, lo, hi) - bisect_left(ids, made.start, lo, hi)

    @cached_property
    def _earlier_write(self) -> array:
        """Per write inside a `_backward`, the index of the previous write to the same
        node's same field within the same backward pass, or -1 for its first one."""
        return self._earlier_writes(array("i"), 0)

    def _earlier_writes(self, known: array, upto: int) -> array:
        """`_earlier_write`, knowing it for the writes before `upto` (which starts a pass
        or ends the writes)."""
        out = known
        out.extend(repeat(-1, len(self._wr_node) - upto))
        for p in self.passes:
            if p.kind != "backward" or self._ev_write_start[p.end] <= upto:
                continue
            last: dict[tuple[int, int], int] = {}
            for w in range(max(self._ev_write_start[p.start], upto),
                           self._ev_write_start[p.end]):
                key = (self._wr_node[w], self._wr_field[w])
                out[w] = last.get(key, -1)
                last[key] = w
        return out

    def contribution(self, write: Write) -> int:
        """1 for the first write to a node's field in its backward pass, 2 for the second…"""
        n = 1
        w = self._earlier_write[write.index]
        while w >= 0:
            n += 1
            w = self._earlier_write[w]
        return n
