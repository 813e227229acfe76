"""The immutable trace of one scenario run: nodes, events and passes, and the questions
that can be asked of it.

A trace holds only ids, floats, strings and line numbers, in flat arrays, never the live
`Value` objects. Its strings come from code and files mgtui did not write, so they are
made inert (`mgtui.safe`) as the trace is built: no control character gets into one. This is the only module that knows that layout: everything else asks
named questions (`writes(i)`, `backward_calls(p)`, `created_at(nid)`) and gets small
frozen records back. A `TraceBuilder` is the one way to make a trace, for the recorder
and the file loaders alike; it only ever appends.
"""

from __future__ import annotations

import math
import re
import sys
from array import array
from bisect import bisect_left, bisect_right
from copy import copy
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from itertools import accumulate, chain, compress, islice, repeat
from operator import add, lt, mul, sub
from collections.abc import Sequence
from typing import Iterable, Iterator, Literal

from mgtui import lanes, notebook
from mgtui.safe import UNSAFE_LINE, inert, inert_line

PassKind = Literal["forward", "backward", "zero_grad", "update", "other"]
PASS_KINDS: tuple[PassKind, ...] = ("forward", "backward", "zero_grad", "update", "other")


class EventKind(StrEnum):
    """What one step is. The value is the name used in JSON; `code` is how it is stored."""

    CREATE = "create"  # a node was made
    BACKWARD = "backward"  # a node's `_backward` ran, with the writes it made
    GRAD = "grad"  # a write to a node's grad outside any `_backward`
    DATA = "data"  # a write to a node's data outside any `_backward`

    @property
    def code(self) -> int:
        return _KIND_CODES[self]


class Field(StrEnum):
    """The field a write changed."""

    GRAD = "grad"
    DATA = "data"

    @property
    def code(self) -> int:
        return _FIELD_CODES[self]


_KINDS = tuple(EventKind)
_KIND_CODES = {kind: code for code, kind in enumerate(_KINDS)}
_FIELDS = tuple(Field)
_FIELD_CODES = {f: code for code, f in enumerate(_FIELDS)}
_CREATE, _BACKWARD, _GRAD, _DATA = (k.code for k in _KINDS)


class TraceFormatError(ValueError):
    """A trace (from a file or a stream) refers to something that is not there. The
    message names the first bad field, e.g. `events[12].node`."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


MAX_LINE = 2**24 - 1  # no source file has more lines; a larger one is a corrupt trace


@dataclass(frozen=True, slots=True)
class Node:
    id: int
    label: str
    op: str
    children: tuple[int, ...]
    data: float
    line: int | None
    final_data: float
    final_grad: float


@dataclass(frozen=True, slots=True)
class Write:
    """One write to a node's `grad` (or `data`) made inside a `_backward` call."""

    node: int
    field: Field
    before: float
    after: float
    line: int | None
    index: int = -1  # its place among all the trace's writes (see `Trace.contribution`)

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass(frozen=True, slots=True)
class Event:
    """One step: a node created, a `_backward` call with its writes, or a lone write."""

    index: int
    kind: EventKind
    node: int
    before: float = math.nan
    after: float = math.nan
    line: int | None = None
    writes: tuple[Write, ...] = ()
    closure: int | None = None

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass(frozen=True, slots=True)
class Pass:
    index: int
    kind: PassKind
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start

    def __contains__(self, step: int) -> bool:
        return self.start <= step < self.end

    @property
    def steps(self) -> range:
        """The event indices of the pass."""
        return range(self.start, self.end)


@dataclass(frozen=True, slots=True)
class Closure:
    """The source of one `_backward` closure (engine, micrograd or the scenario's own)."""

    name: str
    filename: str
    first_line: int
    lines: tuple[str, ...]
    default: bool = False  # the no-op an `__init__` sets: the node never got a real one

    def covers(self, filename: str, line: int) -> bool:
        return filename == self.filename and self.first_line <= line < self.first_line + len(self.lines)


@dataclass(frozen=True, slots=True)
class TraceError:
    type: str
    message: str
    line: int | None
    after_event: int = 0

    def __str__(self) -> str:
        where = f" at line {self.line}" if self.line else ""
        return f"{self.type}{where}: {self.message}" if self.message else f"{self.type}{where}"


@dataclass(frozen=True)
class Trace:
    """A recorded run. Make one with a `TraceBuilder` (the recorder and the loaders do).

    `node_data`, `final_data` and `final_grad` are per-node arrays indexed by id: the
    value at creation, and the data and grad at the end (replayed on first use).
    Everything else is asked for.
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
    # the name a node without a label goes by (`mgtui.naming`), "" if none; len = nodes
    _name: Texts = field(default_factory=lambda: Texts(()))
    # what some `_backward` calls read as they began (`s`, `out.grad`): event -> pairs
    _values: dict[int, tuple[tuple[str, float], ...]] = field(default_factory=dict)

    # -- sizes -------------------------------------------------------------------------
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
        by (`mgtui.naming`), else `#id`."""
        return self._label.get(nid) or self._name.get(nid) or f"#{nid}"

    def derived_name(self, nid: int) -> str:
        """The name the node goes by when it has no `.label` of its own ("" if it has one,
        or has no name either)."""
        return "" if self._label.get(nid) else self._name.get(nid) or ""

    def op(self, nid: int) -> str:
        return self._ops[self._op_code[nid]]

    @property
    def final_data(self) -> array:
        """Every node's data at the end of the run ('d', by id)."""
        return self._final[0]

    @property
    def final_grad(self) -> array:
        """Every node's grad at the end of the run ('d', by id)."""
        return self._final[1]

    @cached_property
    def _final(self) -> tuple[array, array]:
        return self.state_at(len(self))

    def line(self, nid: int) -> int | None:
        """The scenario line that made node `nid`."""
        return self._line[nid] or None

    def children(self, nid: int) -> tuple[int, ...]:
        start = self._child_start
        flat = self.__dict__.get("_children_flat")
        if flat is None:
            return tuple(self._child_ids[start[nid] : start[nid + 1]])
        return flat[start[nid] : start[nid + 1]]

    def index_children(self) -> None:
        """Keep every node's children, one after another, as one tuple: a slice of it is
        the tuple `children()` gives, three times faster than a tuple made from an array
        slice. For the doctor, which asks for the children of every `_backward` call; it
        costs moons 13 MB of ints, so the app does without."""
        self.__dict__["_children_flat"] = tuple(self._child_ids)

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
            final_data=self.final_data[nid],
            final_grad=self.final_grad[nid],
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
        if self._grad_writes_only:
            return self._wr_node[lo:hi].tolist()
        node, fld = self._wr_node, self._wr_field
        return [node[w] for w in range(lo, hi) if fld[w] == 0]

    @cached_property
    def _grad_writes_only(self) -> bool:
        """No `_backward` wrote a `data` (the usual case: its writes are all grads)."""
        return self._wr_field.tobytes().find(b"\x01") < 0

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
        define (see `mgtui.call_values`); () for the others, and in older traces."""
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

    def where(self, line: int | None) -> str:
        """A scenario line as the user knows it: `line 12`, or `cell 3, line 2` in a
        notebook (`mgtui.notebook`); "" for no line."""
        return notebook.where(self.source, line)

    def place(self, filename: str, line: int | None, shown: str | None = None) -> str:
        """A line of `filename` as the user knows it, `neuron.py:12` or
        `lecture.ipynb, cell 3, line 2`, with the file `shown` as given."""
        shown = filename if shown is None else shown
        if not line:
            return shown
        return f"{shown}, {self.where(line)}" if self.in_cells(filename) else f"{shown}:{line}"

    def error_text(self) -> str:
        """The error as `str(error)` says it, its line as the user knows it (a notebook's
        `cell 3, line 2`); "" if the run did not raise."""
        e = self.error
        if e is None:
            return ""
        if not (e.line and self.in_cells(self.scenario)):
            return str(e)
        where = f" at {self.where(e.line)}"
        return f"{e.type}{where}: {e.message}" if e.message else f"{e.type}{where}"

    def in_cells(self, filename: str) -> bool:
        """Are the lines of `filename` in cells? (It is this trace's notebook.)"""
        return bool(notebook.cells_of(self.source)) and _same_file(filename, self.scenario)

    def line_in(self, filename: str, line: int) -> str:
        """A line of `filename`: `line 9`, or `cell 3, line 5` for the notebook's own."""
        return self.where(line) if self.in_cells(filename) else f"line {line}"

    def line_number(self, line: int) -> str:
        """A scenario line's number for a gutter: `12`, or `3:2` in a notebook."""
        return notebook.number(self.source, line)

    def events_of(self, kind: EventKind, start: int = 0, stop: int | None = None) -> list[int]:
        """The indices of the events of one kind in [start, stop)."""
        code = kind.code
        kinds = self._ev_kind
        stop = len(kinds) if stop is None else stop
        if stop - start > 256:  # a scan of the kind bytes at C speed
            kind_bytes, byte = self._kind_bytes, bytes((code,))
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
        first = self._kind_bytes.find(bytes((_CREATE,)), p.start, p.end)
        if first < 0:
            return range(0)
        lo = self._ev_node[first]
        return range(lo, lo + self._kind_bytes.count(bytes((_CREATE,)), first, p.end))

    def inputs_before(self, p: Pass) -> list[int]:
        """The nodes made before pass `p` that its nodes take as inputs, by id."""
        made = self.made_ids(p)
        if not made:
            return []
        start = self._child_start
        lo = made.start
        return sorted(c for c in set(self._child_ids[start[lo]:start[made.stop]]) if 0 <= c < lo)

    @cached_property
    def _kind_bytes(self) -> bytes:
        return self._ev_kind.tobytes()

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

    # -- moving a state through time -----------------------------------------------------
    def apply(self, index: int, data: array, grad: array) -> int:
        """Write event `index`'s effects into `data` and `grad` (per-node arrays).
        Returns how many nodes it made (0 or 1)."""
        kind = self._ev_kind[index]
        if kind == _GRAD:
            grad[self._ev_node[index]] = self.change(index)[1]
        elif kind == _DATA:
            data[self._ev_node[index]] = self.change(index)[1]
        node, fld, after = self._wr_node, self._wr_field, self._wr_after
        for w in range(self._ev_write_start[index], self._ev_write_start[index + 1]):
            (grad if fld[w] == 0 else data)[node[w]] = after[w]
        return 1 if kind == _CREATE else 0

    def undo(self, index: int, data: array, grad: array) -> int:
        """Take event `index`'s effects back out of `data` and `grad`.
        Returns how many nodes it had made (0 or 1)."""
        kind = self._ev_kind[index]
        node, fld, before = self._wr_node, self._wr_field, self._wr_before
        for w in range(self._ev_write_start[index + 1] - 1, self._ev_write_start[index] - 1, -1):
            (grad if fld[w] == 0 else data)[node[w]] = before[w]
        if kind == _GRAD:
            grad[self._ev_node[index]] = self.change(index)[0]
        elif kind == _DATA:
            data[self._ev_node[index]] = self.change(index)[0]
        return 1 if kind == _CREATE else 0

    # -- passes ------------------------------------------------------------------------
    def pass_at(self, index: int) -> Pass | None:
        """The pass holding event `index` (binary search)."""
        lo, hi = 0, len(self.passes)
        while lo < hi:
            mid = (lo + hi) // 2
            p = self.passes[mid]
            if index < p.start:
                hi = mid
            elif index >= p.end:
                lo = mid + 1
            else:
                return p
        return None

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
                    out.append((p.index, self.node_data[root]))
        return out

    def backward_order(self, backward: Pass) -> list[int]:
        """The nodes whose `_backward` ran in a backward pass, in the order they ran:
        the reverse of the topological order the pass walked."""
        return list(compress(self._ev_node[backward.start:backward.end],
                             self._is_kind(_BACKWARD, backward.start, backward.end)))

    # -- derived indexes, built once on first use ------------------------------------------
    @cached_property
    def uses(self) -> array:
        """Per node, how many nodes take it as an input (its fan-out)."""
        uses = array("i", bytes(4 * self.node_count))
        for nid in range(self.node_count):
            for c in set(self.children(nid)):
                if c >= 0:
                    uses[c] += 1
        return uses

    def build_indexes(self, older: Trace | None = None, users: bool = True,
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

    def _extend_indexes(self, older: Trace) -> None:
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

    # -- queries the doctor asks -----------------------------------------------------------
    def state_at(self, position: int) -> tuple[array, array]:
        """Every node's data and grad after the first `position` events (a `Timeline`
        at `position`), replayed in bulk: much faster than stepping there."""
        data = array("d", self.node_data)
        grad = array("d", bytes(8 * self.node_count))
        self.replay(0, position, data, grad)
        return data, grad

    def replay(self, start: int, end: int, data: array, grad: array) -> None:
        """Write the effects of events [start, end) into `data` and `grad`, as `apply`
        would one by one, in bulk."""
        n = len(self)
        start, end = max(0, min(start, n)), max(0, min(end, n))
        if start < end:
            replay_into(self._ev_kind, self._ev_node, self._lone_after,
                        bisect_left(self._lone_at, start), self._ev_write_start,
                        self._wr_node, self._wr_field, self._wr_after, self._grad_writes_only,
                        start, end, data, grad)

    def first_non_finite(self) -> int | None:
        """The first event that stores a nan or an inf: a node created with one, or a
        write (inside a `_backward` or not) of one."""
        found = []
        nid = self._first_non_finite(self.node_data)
        if nid is not None:
            found.append(self._created_at[nid])
        w = self._first_non_finite(self._wr_after)
        if w is not None:  # the last event whose writes start at or before it made it
            found.append(bisect_right(self._ev_write_start, w) - 1)
        lone = self._first_non_finite(self._lone_after)
        if lone is not None:
            found.append(self._lone_at[lone])
        found = [i for i in found if i >= 0]
        return min(found) if found else None

    @staticmethod
    def _first_non_finite(values: array, start: int = 0) -> int | None:
        """The index of the first nan or inf in `values[start:]`. A finite sum (summed
        at C speed) rules them all out; only a sum that is not finite needs a scan."""
        if start == 0 and math.isfinite(sum(values)):
            return None
        isfinite = math.isfinite
        return next((k for k in range(start, len(values)) if not isfinite(values[k])), None)


@dataclass(frozen=True)
class NodeChunk:
    """Nodes in creation order, as they travel between processes and files.
    `child_ends[k]` is where node k's children end in `child_ids`, counted from the
    start of this chunk's `child_ids`."""

    labels: tuple[str, ...]
    ops: tuple[str, ...]
    data: array  # 'd'
    lines: array  # 'i'
    child_ends: array  # 'i'
    child_ids: array  # 'i'
    names: tuple[str, ...] = ()  # as `Trace._name`; () if none has one


@dataclass(frozen=True)
class EventChunk:
    """Events in order. Kinds are `EventKind.code`; `write_starts[k]` is the number of
    writes made before event k over the whole run. `before` and `after` are those of
    the lone writes among them (grad and data events), in order; one per event is
    taken too, and only those kept."""

    kinds: array  # 'b'
    nodes: array  # 'i'
    before: array  # 'd'
    after: array  # 'd'
    lines: array  # 'i'
    closures: array  # 'i'
    write_starts: array  # 'i'


@dataclass(frozen=True)
class WriteChunk:
    """Writes made inside `_backward` calls, in order. Fields are `Field.code`."""

    nodes: array  # 'i'
    fields: array  # 'b'
    before: array  # 'd'
    after: array  # 'd'
    lines: array  # 'i'


Chunk = NodeChunk | EventChunk | WriteChunk
# (A chunk read from a file may hold memoryviews of the same types instead of arrays:
# its columns in place, copied once, into the builder's own.)


def chunks_of(trace: Trace, size: int = 65536) -> Iterator[Chunk]:
    """The trace's records as chunks of at most `size` records, nodes first, then
    events and writes in step, so a reader can build (and show) the trace as they come."""
    t = trace
    for lo in range(0, t.node_count, size):
        hi = min(lo + size, t.node_count)
        base = t._child_start[lo]
        names = t._name.slice(lo, hi)
        yield NodeChunk(t._label.slice(lo, hi), tuple(map(t._ops.__getitem__, t._op_code[lo:hi])),
                        t.node_data[lo:hi], t._line[lo:hi],
                        array("i", (e - base for e in t._child_start[lo + 1 : hi + 1])),
                        t._child_ids[base : t._child_start[hi]], names if any(names) else ())
    w = 0
    for lo in range(0, len(t), size):
        hi = min(lo + size, len(t))
        a, b = bisect_left(t._lone_at, lo), bisect_left(t._lone_at, hi)
        yield EventChunk(t._ev_kind[lo:hi], t._ev_node[lo:hi], t._lone_before[a:b],
                         t._lone_after[a:b], t._ev_line[lo:hi], t._ev_closure[lo:hi],
                         t._ev_write_start[lo:hi])
        end = t._ev_write_start[hi]
        if end > w:
            yield WriteChunk(t._wr_node[w:end], t._wr_field[w:end], t._wr_before[w:end],
                             t._wr_after[w:end], t._wr_line[w:end])
            w = end


class TraceBuilder:
    """Makes a `Trace`, chunk by chunk. It only appends, so a trace can be built while
    the scenario still runs; `build()` gives the trace of everything added so far.

    Records come in bulk, as parallel sequences (what the recorder keeps), or one at a
    time (what a file loader reads). In both, kinds and fields are `EventKind.code` and
    `Field.code`, lines are 0 when unknown, and the closure is -1 when there is none.
    """

    def __init__(self, scenario: str, title: str = "", notes: str = "", source: str = "") -> None:
        self.scenario, self.title, self.notes, self.source = scenario, title, notes, source
        self.labels: list[str] = []
        self.names: dict[int, str] = {}  # the nodes `mgtui.naming` named, by id
        self.ops: list[str] = []
        self.node_data = array("d")
        self.node_line = array("i")
        self.child_start = array("i", [0])
        self.child_ids = array("i")
        self.ev_kind = array("b")
        self.ev_node = array("i")
        self.ev_line = array("i")
        self.ev_closure = array("i")
        self.ev_write_start = array("i")
        self.lone_at = array("i")  # the grad and data events outside `_backward`
        self.lone_before = array("d")
        self.lone_after = array("d")
        self.wr_node = array("i")
        self.wr_field = array("b")
        self.wr_before = array("d")
        self.wr_after = array("d")
        self.wr_line = array("i")
        self.closures: list[Closure] = []
        # What validate() has checked and build() has derived so far: a trace that grows
        # while its scenario records is checked and built a chunk at a time, not in full
        # on every update.
        self._checked_nodes = self._checked_events = self._checked_writes = 0
        self._made = 0  # nodes made by the checked events
        self._inert_labels: list[str] = []
        self._op_code = array("B")  # the ops made inert, each once in `_ops`
        self._ops: list[str] = []
        self._op_codes: dict[str, int] = {}
        self.values: dict[int, tuple[tuple[str, float], ...]] = {}

    @property
    def node_count(self) -> int:
        return len(self.ops)

    @property
    def event_count(self) -> int:
        return len(self.ev_kind)

    # -- one record at a time --------------------------------------------------------------
    def add_node(self, label: str, op: str, children: Iterable[int], data: float,
                 line: int = 0) -> int:
        nid = len(self.ops)
        self.labels.append(label)
        self.ops.append(op)
        self.node_data.append(data)
        self.node_line.append(line)
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
            self.ev_closure.append(closure)
        except OverflowError:
            raise TraceFormatError(f"events[{index}]", "an id is out of range") from None
        self.ev_line.append(line)
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
        self.wr_line.append(line)

    def relabel(self, nid: int, label: str) -> None:
        """A label given after the node was made (`e.label = 'e'`, or the variable that
        holds it at the end). Labels are names, not structure: the one thing that may
        change after it was added."""
        if not (isinstance(label, str) and 0 <= nid < len(self.labels)):
            raise TraceFormatError("labels", f"no node {nid!r} to name {label!r}")
        self.labels[nid] = label
        if nid < len(self._inert_labels):
            self._inert_labels[nid] = inert_line(label)

    def add_name(self, nid: int, name: str) -> None:
        """The name a node goes by when it has no label: the variable it was bound to,
        or its path from a global object (`mgtui.naming`)."""
        if not (isinstance(name, str) and isinstance(nid, int) and 0 <= nid < len(self.labels)):
            raise TraceFormatError("names", f"no node {nid!r} to name {name!r}")
        self.names[nid] = name

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
            checked.append((name, float(value)))
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
        _append(self.node_line, lines)
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
        _append(self.ev_line, lines)
        _extend(self.ev_closure, closures, "events.closure")
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
        _append(self.wr_line, lines)

    def add(self, chunk: Chunk) -> None:
        if isinstance(chunk, NodeChunk):
            base = len(self.labels)
            self.add_nodes(chunk.labels, chunk.ops, chunk.data, chunk.lines, chunk.child_ends,
                           chunk.child_ids)
            names = chunk.names
            for k in compress(range(len(names)), names):  # (most nodes have none)
                self.add_name(base + k, names[k])
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

    # -- checking what was added -----------------------------------------------------------
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
        n = self.node_count
        for name, column in (("label", self.labels), ("data", self.node_data),
                             ("line", self.node_line)):
            if len(column) != n:
                raise TraceFormatError(f"nodes.{name}", f"{len(column)} values for {n} nodes")
        if len(self.child_start) != n + 1 or self.child_start[-1] != len(self.child_ids):
            raise TraceFormatError("nodes.children", "the children do not add up")
        labels, ops = self.labels[n0:], self.ops[n0:]
        try:  # (joining fails on anything but strings, at C speed)
            "".join(labels), "".join(ops)  # noqa: B018
            strings = True
        except TypeError:
            strings = False
        if not strings:
            bad = next(k for k in range(n0, n)
                       if not isinstance(self.labels[k], str) or not isinstance(self.ops[k], str))
            raise TraceFormatError(f"nodes[{bad}].label", "labels and ops must be strings")
        _check_lines("nodes", self.node_line, n0)
        # Every child was made before its node (ids follow creation order), so a trace
        # has no cycles. Checked a column at a time, at C speed (`mgtui.lanes`): moons
        # has 400k inputs.
        start = self.child_start
        ends = start[n0:]
        if not lanes.nondecreasing(ends):
            raise TraceFormatError("nodes.children", "a node's children end before they start")
        first = start[n0]
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
        if not lanes.within(closure, -1, closures):
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
        trace = Trace(
            scenario=inert_line(self.scenario),
            title=inert_line(self.title),
            notes=inert(self.notes),
            source=inert(self.source),
            _label=Texts(self._inert_labels),
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
            _name=Texts.of({nid: inert_line(name) for nid, name in self.names.items() if nid < n},
                           n),
        )
        n, kinds = self.event_count, self.ev_kind
        object.__setattr__(trace, "_values", {
            i: tuple((inert_line(name), value) for name, value in pairs)
            for i, pairs in self.values.items() if i < n and kinds[i] == _BACKWARD})
        if passes is None:
            found = split_passes(trace)
        else:
            found = [Pass(i, kind, start, end)  # type: ignore[arg-type]
                     for i, (kind, start, end) in enumerate(passes)]
        object.__setattr__(trace, "passes", tuple(found))
        if last:
            self.__init__(self.scenario, self.title, self.notes, self.source)  # type: ignore[misc]
        return trace

    def _catch_up_names(self) -> None:
        """Labels and ops made inert, for the nodes added since the last build (later
        labels are made inert by `relabel`). Equal labels share one string; each op is
        kept once, and a node holds its number."""
        k = len(self._inert_labels)
        one = {}.setdefault  # equal labels, one string
        labels, ops = _inert_names(self.labels[k:]), _inert_names(self.ops[k:])
        if labels.count("") == len(labels):  # (a big graph's nodes mostly have none)
            self._inert_labels.extend(labels)
        else:
            self._inert_labels.extend(map(one, labels, labels))
        codes = self._op_codes
        for op in set(ops) - codes.keys():
            codes[op] = len(self._ops)
            self._ops.append(op)
        if len(self._ops) > _CODE_LIMIT[self._op_code.typecode]:  # more ops than it holds
            self._op_code = array("H" if len(self._ops) <= _CODE_LIMIT["H"] else "i",
                                  self._op_code)
        if self._op_code.typecode == "B":  # (bytes() of a map is faster than extend)
            self._op_code.frombytes(bytes(map(codes.__getitem__, ops)))
        else:
            self._op_code.extend(map(codes.__getitem__, ops))


def replay_into(ev_kind: array, ev_node: array, lone_after: array, lone: int,
                write_start: array, wr_node: array, wr_field: array, wr_after: array,
                only_grads: bool, start: int, end: int, data: array, grad: array) -> None:
    """Write the effects of events [start, end) into `data` and `grad` (per-node arrays),
    each write replayed once, in order. Writes inside `_backward` calls are merged a run
    at a time with `dict.update`, and only the few writes outside them (the lone writes,
    whose values are `lone_after` from `lone` on) are visited one by one."""
    grads: dict[int, float] = {}
    datas: dict[int, float] = {}
    w = write_start[start]

    def apply(stop: int) -> None:
        if only_grads:
            grads.update(zip(wr_node[w:stop], wr_after[w:stop]))
        else:
            for k in range(w, stop):
                (grads if wr_field[k] == 0 else datas)[wr_node[k]] = wr_after[k]

    kinds = ev_kind.tobytes()[start:end]
    for match in re.finditer(bytes((ord("["), _GRAD, _DATA, ord("]"))), kinds):
        i = start + match.start()
        stop = write_start[i]
        apply(stop)
        w = stop
        (grads if ev_kind[i] == _GRAD else datas)[ev_node[i]] = lone_after[lone]
        lone += 1
    apply(write_start[end])
    for nid, value in grads.items():
        grad[nid] = value
    for nid, value in datas.items():
        data[nid] = value


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


def _made_in_order(kinds: bytes, nodes: array, made0: int, n: int) -> int | None:
    """The number of nodes made once these events (`kinds`, `nodes`) are done, given
    `made0` made before them, if each creation makes the next of the `n` nodes and
    every other event names a node made before it; else None (also when the events
    alternate, which is left to the check that goes an event at a time).

    A run of creations is compared with the ids it should make, and a run of other
    events with the count made before it, each in one go (`mgtui.lanes`)."""
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


_CODE_LIMIT = {"B": 256, "H": 65536, "i": 2**31}  # how many ops an op-code column can tell apart


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


def _check_line(where: str, line: int) -> None:
    if not isinstance(line, int) or not 0 <= line <= MAX_LINE:
        raise TraceFormatError(where, f"{line!r} is not a line number")


def _check_lines(what: str, lines: array, start: int = 0) -> None:
    """Lines `start` on are line numbers (or 0): 32-bit ints whose top byte is 0, which
    is checked a byte string at a time."""
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
            elif after[lone + i] == 0:
                add("zero_grad", i, i + 1)
            else:
                add("other", i, i + 1)
    return [Pass(index, kind, start, end)  # type: ignore[arg-type]
            for index, (kind, start, end) in enumerate(spans)]


_KIND_BYTES = bytes(range(_DATA + 1))
_CREATING = bytes(int(b == _CREATE) for b in range(256))  # a table for bytes.translate
_LONE = bytes(int(b in (_GRAD, _DATA)) for b in range(256))
_CREATES = re.compile(b"%c+" % _CREATE)  # a run of events that make nodes
RUN_LENGTH = 256  # events per run of creations, on average, below which they go one by one

RUN_KINDS = {_CREATE: "forward", _BACKWARD: "backward", _DATA: "update"}


def _same_file(a: str, b: str) -> bool:
    import os

    return a == b or os.path.realpath(a) == os.path.realpath(b)
