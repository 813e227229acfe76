"""The immutable trace of one scenario run, in flat arrays, and the questions asked of
it about its nodes, events and passes. The questions of other kinds are asked of the
objects it hands out: `trace.places` (lines as the user knows them, `Places`),
`trace.replay` (a state moved through the events, `Replay`), `trace.index` (what is
derived once, on first use, `TraceIndex`) and `trace.values` (values that may be
arrays, `TraceValues`)."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from operator import add, mul, sub
from typing import Iterator

from mgtui.trace.arrays import ArrayTable, scalar_of
from mgtui.trace.index import TraceIndex, pass_holding
from mgtui.trace.places import Places
from mgtui.trace.records import (
    _BACKWARD,
    _CREATE,
    _FIELDS,
    _GRAD,
    _KINDS,
    Closure,
    Event,
    EventKind,
    Node,
    Pass,
    TraceError,
    Write,
)
from mgtui.trace.replay import Replay
from mgtui.trace.values import TraceValues


@dataclass(frozen=True)
class Trace:
    """A recorded run. Make one with a `TraceBuilder` (the recorder and the loaders do).

    `node_data` is a per-node array indexed by id: the value at creation; the data and
    grad at the end are `replay.final_data` and `replay.final_grad` (replayed on first
    use). Everything else is asked for. Where values were arrays (a tensor engine),
    those columns hold nan and `arrays` the arrays: read values through `values`
    (`created_value`, `value_at`, `write_value`, `event_value`), which know them.

    Honestly frozen: no field changes once it is made, and nothing is written into it
    later. What is worked out on first use (the final state, the indexes, the
    histories of array values) is kept by the four objects it hands out, `places`,
    `replay`, `index` and `values`, made with it (`__post_init__`) and not frozen: each
    holds the columns it reads, not the trace (no cycle: a trace dropped is freed at
    once, with the collector paused too).
    """

    scenario: str
    title: str
    notes: str
    source: str
    # nodes, columnar
    _label: Texts
    _op_code: array  # 'B', 'H' or 'i': an index into `_ops`
    _ops: tuple[str, ...]  # each op once
    node_data: array  # 'd'
    _line: array  # 'i', 0 = unknown
    _child_start: array  # 'i', len = nodes + 1
    _child_ids: array  # 'i'; -1 for a child made before the recording started
    # events, columnar
    _ev_kind: array  # 'b', EventKind.code
    _ev_node: array  # 'i'
    _ev_line: array  # 'i'
    _ev_closure: array  # 'i', -1 = none
    _ev_write_start: array  # 'i', len = events + 1
    # the grad and data writes outside `_backward` calls ("lone" writes, the few events
    # with a before and an after), columnar: their event indices, in order, and values
    _lone_at: array  # 'i'
    _lone_before: array  # 'd'
    _lone_after: array  # 'd'
    # writes made inside `_backward` calls, columnar
    _wr_node: array  # 'i'
    _wr_field: array  # 'b', Field.code
    _wr_before: array  # 'd'
    _wr_after: array  # 'd'
    _wr_line: array  # 'i'
    closures: tuple[Closure, ...] = ()
    error: TraceError | None = None
    output: str = ""
    passes: tuple[Pass, ...] = field(default=())
    # the name a node without a label goes by (`mgtui.recording.naming`), "" if none; len = nodes
    _name: Texts = field(default_factory=lambda: Texts(()))
    # what some `_backward` calls read as they began (`s`, `out.grad`): event -> pairs
    _values: dict[int, tuple[tuple[str, float], ...]] = field(default_factory=dict)
    # the array values, beside the columns (`mgtui.trace.arrays`): empty for floats
    arrays: ArrayTable = field(default_factory=ArrayTable)
    # the engine that recorded it (`mgtui.trace.engine_kind`): "scalar", "array", "torch"
    engine: str = "scalar"
    # what it hands out (made by `__post_init__`; they keep the caches)
    places: Places = field(init=False, repr=False, compare=False)
    replay: Replay = field(init=False, repr=False, compare=False)
    index: TraceIndex = field(init=False, repr=False, compare=False)
    values: TraceValues = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        events = self._ev_kind, self._ev_node, self._ev_write_start
        lone = self._lone_at, self._lone_before, self._lone_after
        writes = self._wr_node, self._wr_field, self._wr_before, self._wr_after
        replay = Replay(self.node_data, *events, lone, writes)
        index = TraceIndex(self.passes, (self._child_start, self._child_ids), events,
                           writes[:2], replay)
        values = TraceValues(self.arrays, self.node_data, events, lone, writes, replay, index)
        for name, part in (("places", Places(self.scenario, self.source, self.error)),
                           ("replay", replay), ("index", index), ("values", values)):
            object.__setattr__(self, name, part)  # (a frozen dataclass's own fields)

    # -- sizes -------------------------------------------------------------------------
    @property
    def has_arrays(self) -> bool:
        return bool(self.arrays)

    @property
    def node_count(self) -> int:
        return len(self._op_code)

    def __len__(self) -> int:
        """The number of events (steps)."""
        return len(self._ev_kind)

    @property
    def write_count(self) -> int:
        """The number of writes made inside `_backward` calls, over the whole run."""
        return len(self._wr_node)

    # -- nodes -------------------------------------------------------------------------
    def label(self, nid: int) -> str:
        """What a node is called: its `.label`, else the variable or path it was named
        by (`mgtui.recording.naming`), else `#id`."""
        return self._label.get(nid) or self._name.get(nid) or f"#{nid}"

    def derived_name(self, nid: int) -> str:
        """The name the node goes by when it has no `.label` of its own ("" if it has one,
        or has no name either)."""
        return "" if self._label.get(nid) else self._name.get(nid) or ""

    def op(self, nid: int) -> str:
        return self._ops[self._op_code[nid]]

    def line(self, nid: int) -> int | None:
        """The scenario line that made node `nid`."""
        return self._line[nid] or None

    def children(self, nid: int) -> tuple[int, ...]:
        start = self._child_start
        flat = self.index.children_flat
        if flat is None:
            return tuple(self._child_ids[start[nid] : start[nid + 1]])
        return flat[start[nid] : start[nid + 1]]

    def is_leaf(self, nid: int) -> bool:
        return self._child_start[nid] == self._child_start[nid + 1]

    def node(self, nid: int) -> Node:
        return Node(
            id=nid,
            label=self.label(nid),
            op=self.op(nid),
            children=self.children(nid),
            data=self.node_data[nid],
            line=self.line(nid),
            final_data=self.replay.final_data[nid],
            final_grad=self.replay.final_grad[nid],
        )

    def nodes(self) -> Iterator[Node]:
        return (self.node(i) for i in range(self.node_count))

    def find(self, label: str) -> list[int]:
        """Node ids whose label is exactly `label`, in creation order."""
        return [i for i in range(self.node_count) if self.label(i) == label]

    def ancestors(self, root: int) -> list[int]:
        """The nodes `root` was computed from, itself included, by id."""
        seen = {root}
        stack = [root]
        start, ids = self._child_start, self._child_ids
        while stack:
            n = stack.pop()
            for j in range(start[n], start[n + 1]):
                c = ids[j]
                if c >= 0 and c not in seen:
                    seen.add(c)
                    stack.append(c)
        return sorted(seen)

    # -- events ------------------------------------------------------------------------
    def kind(self, index: int) -> EventKind:
        return _KINDS[self._ev_kind[index]]

    def event_node(self, index: int) -> int:
        """The node of event `index`: the one made, whose `_backward` ran, or written."""
        return self._ev_node[index]

    def change(self, index: int) -> tuple[float, float]:
        """(before, after) of a lone grad or data write; (0.0, 0.0) for other events."""
        at = self._lone_at
        k = bisect_left(at, index)
        if k < len(at) and at[k] == index:
            return self._lone_before[k], self._lone_after[k]
        return 0.0, 0.0

    def closure_index(self, index: int) -> int | None:
        """Which of `closures` a `_backward` event ran, or None."""
        k = self._ev_closure[index]
        return k if k >= 0 else None

    def closure_of(self, index: int) -> Closure | None:
        k = self._ev_closure[index]
        return self.closures[k] if k >= 0 else None

    def write_count_of(self, index: int) -> int:
        return self._ev_write_start[index + 1] - self._ev_write_start[index]

    def writes(self, index: int) -> tuple[Write, ...]:
        """The writes the `_backward` call of event `index` made, in order."""
        return self._writes(self._ev_write_start[index], self._ev_write_start[index + 1])

    def writes_in(self, p: Pass) -> tuple[Write, ...]:
        """Every write made by the `_backward` calls of pass `p`, in order."""
        return self._writes(self._ev_write_start[p.start], self._ev_write_start[p.end])

    def _writes(self, lo: int, hi: int) -> tuple[Write, ...]:
        node, fld, before, after, line = (self._wr_node, self._wr_field, self._wr_before,
                                          self._wr_after, self._wr_line)
        return tuple(Write(node[w], _FIELDS[fld[w]], before[w], after[w], line[w] or None, w)
                     for w in range(lo, hi))

    def grad_targets(self, index: int) -> list[int]:
        """The nodes whose grad event `index` changes: the written node of a lone grad
        write, the targets of a `_backward` call's grad writes."""
        kind = self._ev_kind[index]
        if kind == _GRAD:
            return [self._ev_node[index]]
        if kind != _BACKWARD:
            return []
        lo, hi = self._ev_write_start[index], self._ev_write_start[index + 1]
        if self.replay.grad_writes_only:
            return self._wr_node[lo:hi].tolist()
        node, fld = self._wr_node, self._wr_field
        return [node[w] for w in range(lo, hi) if fld[w] == 0]

    def foreign_writes(self) -> list[tuple[int, Write]]:
        """(event, write) for each `_backward` call's first write to a node that is not
        one of its node's inputs. Every write is looked up at once, as a number
        `owner * nodes + target`, in the set of the graph's edges."""
        n = self.node_count
        start, ids, ws = self._child_start, self._child_ids, self._ev_write_start
        parents = chain.from_iterable(map(repeat, range(n), map(sub, start[1:], start[:-1])))
        edges = set(map(add, map(mul, parents, repeat(n)), ids))
        counts = list(map(sub, ws[1:], ws[:-1]))
        owners = chain.from_iterable(map(repeat, self._ev_node, counts))
        keys = list(map(add, map(mul, owners, repeat(n)), self._wr_node))
        if edges.issuperset(keys):
            return []
        bad = [w for w, key in enumerate(keys) if key not in edges]
        out: list[tuple[int, Write]] = []
        for w in bad:
            i = bisect_right(ws, w) - 1  # the event whose writes hold write w
            if not out or out[-1][0] != i:
                out.append((i, self._writes(w, w + 1)[0]))
        return out

    def values_at(self, index: int) -> tuple[tuple[str, float], ...]:
        """(name, value) of what the `_backward` call of event `index` read from its
        closure as it began (`s`, `out.grad`): recorded for ops the engine does not
        define (see `mgtui.recording.call_values`); () for the others, and in older traces."""
        return self._values.get(index, ())

    def values_recorded(self) -> Iterator[tuple[int, tuple[tuple[str, float], ...]]]:
        """(event, values) for every call that has them, in order (for the file formats)."""
        return iter(sorted(self._values.items()))

    def event(self, index: int) -> Event:
        kind = self._ev_kind[index]
        before, after = self.change(index) if kind >= _GRAD else (0.0, 0.0)
        return Event(
            index=index,
            kind=_KINDS[kind],
            node=self._ev_node[index],
            before=before,
            after=after,
            line=self._ev_line[index] or None,
            writes=self.writes(index) if kind == _BACKWARD else (),
            closure=self.closure_index(index),
        )

    def events(self) -> Iterator[Event]:
        return (self.event(i) for i in range(len(self)))

    def event_line(self, index: int) -> int | None:
        """The scenario line of the call or write of event `index` (None for a creation:
        see `line_of`)."""
        return self._ev_line[index] or None

    def line_of(self, index: int) -> int | None:
        """The scenario line of event `index`: where the node was made or the write done."""
        if self._ev_kind[index] == _CREATE:
            return self._line[self._ev_node[index]] or None
        return self._ev_line[index] or None

    def events_of(self, kind: EventKind, start: int = 0, stop: int | None = None) -> list[int]:
        """The indices of the events of one kind in [start, stop)."""
        code = kind.code
        kinds = self._ev_kind
        stop = len(kinds) if stop is None else stop
        if stop - start > 256:  # a scan of the kind bytes at C speed
            kind_bytes, byte = self.index.kind_bytes, bytes((code,))
            if kind_bytes.count(byte, start, stop) * 8 > stop - start:  # many: sift them all
                return list(compress(range(start, stop), self._is_kind(code, start, stop)))
            out = []  # few: jump from one to the next
            i = kind_bytes.find(byte, start, stop)
            while i >= 0:
                out.append(i)
                i = kind_bytes.find(byte, i + 1, stop)
            return out
        return [i for i in range(start, stop) if kinds[i] == code]

    def _is_kind(self, code: int, start: int, stop: int) -> Iterator[bool]:
        return map(code.__eq__, self._ev_kind[start:stop])

    def backward_calls(self, p: Pass) -> list[int]:
        """The `_backward` events of pass `p`, in the order they ran."""
        return self.events_of(EventKind.BACKWARD, p.start, p.end)

    def first_backward(self, p: Pass) -> int | None:
        """The first `_backward` event of pass `p`."""
        code = _BACKWARD
        return next((i for i in range(p.start, p.end) if self._ev_kind[i] == code), None)

    def made_in(self, p: Pass) -> list[int]:
        """The nodes a (forward) pass made, in creation order."""
        return list(self.made_ids(p))

    def made_ids(self, p: Pass) -> range:
        """The nodes pass `p` made: consecutive ids, as creations make the next id."""
        kinds = self.index.kind_bytes
        first = kinds.find(bytes((_CREATE,)), p.start, p.end)
        if first < 0:
            return range(0)
        lo = self._ev_node[first]
        return range(lo, lo + kinds.count(bytes((_CREATE,)), first, p.end))

    def made_between(self, start: int, end: int) -> int:
        """How many nodes events [start, end) made (counted at C speed)."""
        return self.index.kind_bytes.count(bytes((_CREATE,)), start, end)

    def inputs_before(self, p: Pass) -> list[int]:
        """The nodes made before pass `p` that its nodes take as inputs, by id."""
        made = self.made_ids(p)
        if not made:
            return []
        start = self._child_start
        lo = made.start
        return sorted(c for c in set(self._child_ids[start[lo]:start[made.stop]]) if 0 <= c < lo)

    # -- passes ------------------------------------------------------------------------
    def pass_at(self, index: int) -> Pass | None:
        """The pass holding event `index` (binary search)."""
        return pass_holding(self.passes, index)

    def graph(self, forward: Pass) -> list[int]:
        """The nodes of a forward pass plus the earlier nodes (leaves) they use, by id."""
        return self.inputs_before(forward) + self.made_in(forward)

    def backward_root(self, backward: Pass) -> int | None:
        """The node a backward pass starts from: the seeded node, else the first caller."""
        for i in range(backward.start, backward.end):
            if self._ev_kind[i] in (_GRAD, _BACKWARD):
                return self._ev_node[i]
        return None

    def losses(self) -> list[tuple[int, float]]:
        """(pass index, root data) for every backward pass: the loss curve of training."""
        out = []
        for p in self.passes:
            if p.kind == "backward":
                root = self.backward_root(p)
                if root is not None:
                    out.append((p.index, scalar_of(self.values.created_value(root))))
        return out

    def backward_order(self, backward: Pass) -> list[int]:
        """The nodes whose `_backward` ran in a backward pass, in the order they ran:
        the reverse of the topological order the pass walked."""
        return list(compress(self._ev_node[backward.start:backward.end],
                             self._is_kind(_BACKWARD, backward.start, backward.end)))


class Texts(Sequence[str]):
    """Per-node strings (labels, names), most of them empty in a big graph: when the
    others are few they are kept by id, else all of them in a tuple. `get(nid)` is the
    quick way to read one (a built-in's method: the node table asks for thousands); it
    gives None for an empty one kept by id."""

    __slots__ = ("_all", "_some", "_len", "get")

    def __init__(self, values: Sequence[str]) -> None:
        n = len(values)
        if n > 64 and (n - values.count("")) * 4 < n:  # (labels and names: strings)
            self._all, self._some = None, dict(zip(compress(range(n), values),
                                                   compress(values, values)))
        else:
            self._all, self._some = tuple(values), None
        self._len = n
        self.get = self._all.__getitem__ if self._all is not None else self._some.get

    @classmethod
    def of(cls, some: dict[int, str], n: int) -> Texts:
        """The strings of `n` nodes, of which those in `some` are not empty."""
        if len(some) * 4 >= n:
            values = [""] * n
            for nid, text in some.items():
                values[nid] = text
            return cls(values)
        texts = cls(())
        texts._all, texts._some, texts._len, texts.get = None, some, n, some.get
        return texts

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, nid):  # type: ignore[override]
        if self._all is not None:
            return self._all[nid]
        if isinstance(nid, slice):
            return self.slice(*nid.indices(self._len)[:2])
        if not -self._len <= nid < self._len:
            raise IndexError(nid)
        return self._some.get(nid % self._len, "")

    def slice(self, lo: int, hi: int) -> tuple[str, ...]:
        if self._all is not None:
            return self._all[lo:hi]
        return tuple(map(self._some.get, range(lo, hi), repeat("")))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Texts) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]


class CodedTexts(Texts):
    """Per-node strings of which few are distinct (the names a training loop's nodes go
    by: `x`, `loss`...): each node holds the number of its string among `strings` (0,
    the first, is ""), in an array of the narrowest width that holds them, a byte a
    node where a tuple of them would cost eight."""

    __slots__ = ("_codes", "_strings")

    def __init__(self, codes: array, strings: tuple[str, ...]) -> None:  # noqa: D107
        self._codes, self._strings, self._len = codes, strings, len(codes)
        self._all = self._some = None
        self.get = self._get

    def _get(self, nid: int) -> str:
        return self._strings[self._codes[nid]]

    def __getitem__(self, nid):  # type: ignore[override]
        if isinstance(nid, slice):
            return self.slice(*nid.indices(self._len)[:2])
        return self._strings[self._codes[nid]]

    def slice(self, lo: int, hi: int) -> tuple[str, ...]:
        return tuple(map(self._strings.__getitem__, self._codes[lo:hi]))
