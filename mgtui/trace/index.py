"""The indexes derived from a trace, each built once on first use (or ahead of it, off
the UI thread, by `build_indexes`), at C speed where a screen needs them: every node's
uses, the event that made each node; and the users of each node, for the Graph pane
alone. One graph's uses of a node and a write's place among the writes to the same
field are found when asked, in the packed columns themselves, with no index (issue 24:
at 1M nodes `uses`, `_users` and `_earlier_writes` were per-node Python loops of 1.3 s,
0.8 s and 0.8 s, built on every load). What `Trace.index` hands out."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections import Counter
from functools import cached_property
from itertools import compress, repeat
from operator import eq, sub

from mgtui.trace import lanes
from mgtui.trace.records import EventKind, Pass, Write
from mgtui.trace.replay import Replay

_CREATES = re.compile(b"%c+" % EventKind.CREATE.code)  # a run of events that make nodes


class Creations:
    """The event that made each node, by id, where the nodes were made in id order in
    runs of consecutive creations: for each run, the event it starts at and the first
    node it makes (a training loop's forward passes: a few thousand runs for millions
    of nodes)."""

    __slots__ = ("_events", "_nodes", "_n")

    def __init__(self, events: array, nodes: array, n: int) -> None:
        self._events, self._nodes, self._n = events, nodes, n

    @classmethod
    def of(cls, kinds: bytes, nodes: array, n: int) -> Creations | None:
        """The runs of the creations among events of `kinds` making `nodes`, if they
        make nodes 0 to `n` - 1 in order, in fewer runs than a sixteenth of the nodes."""
        starts, firsts, made = array("i"), array("i"), 0
        for run in _CREATES.finditer(kinds):
            s, e = run.span()
            if len(starts) * 16 > n or made + e - s > n \
                    or nodes[s:e].tobytes() != lanes.iota(made, e - s):
                return None
            starts.append(s)
            firsts.append(made)
            made += e - s
        return cls(starts, firsts, n) if made == n else None

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, nid: int) -> int:
        if not 0 <= nid < self._n:
            raise IndexError(nid)
        k = bisect_right(self._nodes, nid) - 1
        return self._events[k] + nid - self._nodes[k]


class TraceIndex:
    """A trace's derived indexes (`trace.index`). It holds the trace's node, event and
    write columns and its passes (not the trace), and the indexes once built; and the
    trace's `Replay`, for `build_indexes` to replay the final state ahead of use."""

    def __init__(self, passes: tuple[Pass, ...], children: tuple[array, array],
                 events: tuple[array, array, array], writes: tuple[array, array],
                 replay: Replay) -> None:
        self._passes = passes
        self._child_start, self._child_ids = children
        self._ev_kind, self._ev_node, self._ev_write_start = events
        self._wr_node, self._wr_field = writes
        self._replay = replay
        self._node_count = len(self._child_start) - 1
        self._graph_uses: tuple[tuple[int, int], Counter] | None = None
        self._pass_nths: tuple[int, array] | None = None
        self.children_flat: tuple[int, ...] | None = None  # (`index_children`)

    @cached_property
    def kind_bytes(self) -> bytes:
        """The events' kinds as bytes, for scans at C speed (`bytes.find`, `count`)."""
        return self._ev_kind.tobytes()

    def index_children(self) -> None:
        """Keep every node's children, one after another, as one tuple: a slice of it is
        the tuple `Trace.children` gives, three times faster than a tuple made from an
        array slice. For the doctor, which asks for the children of every `_backward`
        call; it costs moons 13 MB of ints, so the app does without."""
        if self.children_flat is None:
            self.children_flat = tuple(self._child_ids)

    @cached_property
    def creations(self) -> Creations | array:
        """The event that made each node, by id (-1 for a node no event made)."""
        code, events = EventKind.CREATE.code, len(self._ev_kind)
        n, nodes = self._node_count, self._ev_node
        # Most often the creations make the ids in order, 0 to n - 1, in runs of events
        # that make one node after another (a forward pass): then the index is where
        # each run starts, checked at C speed (`Creations`), not an int a node.
        runs = Creations.of(self.kind_bytes, nodes, n)
        if runs is not None:
            return runs
        made = array("i", compress(range(events), map(code.__eq__, self._ev_kind)))
        if len(made) == n and all(map(eq, map(nodes.__getitem__, made), range(n))):
            return made  # (int32: indexes are kept small)
        at = array("i", [-1]) * n
        for i in made:
            at[nodes[i]] = i
        return at

    def created_at(self, nid: int) -> int | None:
        """The index of the event that made node `nid`."""
        i = self.creations[nid]
        return i if i >= 0 else None

    @cached_property
    def uses(self) -> array:
        """Per node, how many nodes take it as an input (its fan-out), over the whole
        trace: every training step's graph (`uses_within` counts one graph's). Counted
        at C speed, each user once (a child given twice to one node is one use)."""
        return self._uses_of(0, self._node_count, array("i", bytes(4 * self._node_count)))

    def _uses_of(self, first: int, end: int, uses: array) -> array:
        """`uses` (of every node), with the uses by nodes `first` to `end` added."""
        for c, k in self._use_counts(first, end).items():
            uses[c] += k
        return uses

    def _use_counts(self, first: int, end: int) -> Counter:
        """{node: how many of the nodes `first` to `end` take it as an input}."""
        ids, start = self._child_ids, self._child_start
        counts = Counter(ids[start[first]:start[end]])
        # the nodes with two children or more, where one may be given twice
        many = compress(range(first, end), map((1).__lt__, map(
            sub, start[first + 1:end + 1], start[first:end])))
        for nid in many:
            kids = ids[start[nid]:start[nid + 1]]
            if len(set(kids)) < len(kids):
                for c, k in Counter(kids).items():
                    counts[c] -= k - 1
        counts.pop(-1, None)  # (a child that was not recorded)
        return counts

    def build_indexes(self, older: TraceIndex | None = None, users: bool = False,
                      final: bool = False) -> None:
        """Build the derived indexes a step's screen needs now (off the UI thread), not
        on first use.

        `older` is the index of this run as it was recorded so far, earlier (a prefix of
        this trace): its indexes are extended by what was added since, not built again.
        `users` (the Graph pane's, not extended) is left to its first use unless asked
        for. `final` replays the final state now too (what `G` shows); left to its first
        use, it costs no memory until then (a replay of every event: moons 0.05 s, a
        3M-node chain 1 s)."""
        if older is not None and older._node_count <= self._node_count \
                and len(older._ev_kind) <= len(self._ev_kind):
            self._extend_indexes(older)
        self.creations  # noqa: B018  (`uses`, for a lesson page and the users, on first use)
        if users:
            self._users  # noqa: B018
        if final:
            self._replay.final_data  # noqa: B018

    def _extend_indexes(self, older: TraceIndex) -> None:
        kept = older.__dict__  # (what `cached_property` has built of the older index)
        n0, n = older._node_count, self._node_count
        if "uses" in kept:
            uses = array("i", older.uses)
            uses.frombytes(bytes(4 * (n - n0)))
            self.__dict__["uses"] = self._uses_of(n0, n, uses)
        if "creations" in kept and isinstance(older.creations, array):
            at = array("i", older.creations)
            at.extend(repeat(-1, n - n0))
            kinds, create = self.kind_bytes, bytes((EventKind.CREATE.code,))
            stop = len(kinds)
            i = kinds.find(create, len(older._ev_kind), stop)
            while i >= 0:
                at[self._ev_node[i]] = i
                i = kinds.find(create, i + 1, stop)
            self.__dict__["creations"] = at

    @cached_property
    def _users(self) -> tuple[array, array]:
        """The inverse of `children`: each node's users (each once, in creation order),
        as offsets into one array of ids."""
        count = self._node_count
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
        an input: its uses in that graph, where `uses` counts every pass's. Counted for
        the whole graph at its first step (`_use_counts`, at C speed) and kept for the
        next, one graph at a time (a backward pass's steps all ask about its graph)."""
        end = min(made.stop, self._node_count)
        kept = self._graph_uses
        if kept is None or kept[0] != (made.start, end):
            kept = self._graph_uses = (made.start, end), self._use_counts(
                made.start, end) if made.start < end else Counter()
        return kept[1].get(nid, 0) if nid >= 0 else 0

    def contribution(self, write: Write) -> int:
        """1 for the first write to a node's field in its backward pass, 2 for the
        second…: counted for all the pass's writes at its first step asked about, and
        kept for the next, one pass at a time (`_nths`)."""
        w = write.index
        p = pass_holding(self._passes, bisect_right(self._ev_write_start, w) - 1)
        if p is None or p.kind != "backward":
            return 1
        first = self._ev_write_start[p.start]
        return self._nths(first, self._ev_write_start[p.end])[w - first]

    def _nths(self, first: int, end: int) -> array:
        """For each of the writes `first` to `end` (a backward pass's), its place among
        the writes to its node's field since `first`. (Kept whole once made: sessions
        on other threads may read the same trace.)"""
        kept = self._pass_nths
        if kept is not None and kept[0] == first:
            return kept[1]
        nths, seen = array("i"), {}
        get, add = seen.get, nths.append
        for node, field in zip(self._wr_node[first:end], self._wr_field[first:end]):
            key = node << 8 | field & 0xFF
            n = seen[key] = get(key, 0) + 1
            add(n)
        self._pass_nths = first, nths
        return nths


def pass_holding(passes: tuple[Pass, ...], index: int) -> Pass | None:
    """The pass of `passes` (in order, each ending where the next starts) holding event
    `index` (binary search)."""
    lo, hi = 0, len(passes)
    while lo < hi:
        mid = (lo + hi) // 2
        p = passes[mid]
        if index < p.start:
            hi = mid
        elif index >= p.end:
            lo = mid + 1
        else:
            return p
    return None
