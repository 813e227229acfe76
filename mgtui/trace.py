"""The immutable trace of one scenario run: nodes, events and passes, stored compactly.

A trace holds only ids, floats, strings and line numbers, in flat arrays, never the live
`Value` objects. Events and nodes are materialised as small frozen records on access.
"""

from __future__ import annotations

import math
import re
from array import array
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator, Literal

CREATE, BACKWARD, GRAD, DATA = 0, 1, 2, 3
EVENT_KINDS = ("create", "backward", "grad", "data")
FIELDS = ("grad", "data")

PassKind = Literal["forward", "backward", "zero_grad", "update", "other"]


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
    field: str
    before: float
    after: float
    line: int | None

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass(frozen=True, slots=True)
class Event:
    """One step: a node created, a `_backward` call with its writes, or a lone write."""

    index: int
    kind: str
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


@dataclass(frozen=True, slots=True)
class Closure:
    """The source of one `_backward` closure (engine, micrograd or the scenario's own)."""

    name: str
    filename: str
    first_line: int
    lines: tuple[str, ...]
    default: bool = False  # the no-op an `__init__` sets: the node never got a real one


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
    """A recorded run. Build it with `mgtui.recorder.record` or `mgtui.jsonio.load`."""

    scenario: str
    title: str
    notes: str
    source: str
    # nodes, columnar
    node_label: tuple[str, ...]
    node_op: tuple[str, ...]
    node_data: array  # 'd'
    node_line: array  # 'i', 0 = unknown
    child_start: array  # 'q', len = nodes + 1
    child_ids: array  # 'q'
    final_data: array  # 'd'
    final_grad: array  # 'd'
    # events, columnar
    ev_kind: array  # 'b'
    ev_node: array  # 'q'
    ev_before: array  # 'd'
    ev_after: array  # 'd'
    ev_line: array  # 'i'
    ev_closure: array  # 'i', -1 = none
    ev_write_start: array  # 'q', len = events + 1
    # writes made inside `_backward` calls, columnar
    wr_node: array  # 'q'
    wr_field: array  # 'b'
    wr_before: array  # 'd'
    wr_after: array  # 'd'
    wr_line: array  # 'i'
    closures: tuple[Closure, ...] = ()
    error: TraceError | None = None
    output: str = ""
    passes: tuple[Pass, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.passes:
            object.__setattr__(self, "passes", tuple(split_passes(self)))

    # -- sizes -------------------------------------------------------------------------
    @property
    def node_count(self) -> int:
        return len(self.node_op)

    def __len__(self) -> int:
        """The number of events (steps)."""
        return len(self.ev_kind)

    # -- nodes -------------------------------------------------------------------------
    def label(self, nid: int) -> str:
        return self.node_label[nid] or f"#{nid}"

    def children(self, nid: int) -> tuple[int, ...]:
        return tuple(self.child_ids[self.child_start[nid] : self.child_start[nid + 1]])

    def node(self, nid: int) -> Node:
        line = self.node_line[nid]
        return Node(
            id=nid,
            label=self.label(nid),
            op=self.node_op[nid],
            children=self.children(nid),
            data=self.node_data[nid],
            line=line or None,
            final_data=self.final_data[nid],
            final_grad=self.final_grad[nid],
        )

    def nodes(self) -> Iterator[Node]:
        return (self.node(i) for i in range(self.node_count))

    def find(self, label: str) -> list[int]:
        """Node ids whose label is exactly `label`, in creation order."""
        return [i for i in range(self.node_count) if self.label(i) == label]

    # -- events ------------------------------------------------------------------------
    def writes(self, index: int) -> tuple[Write, ...]:
        lo, hi = self.ev_write_start[index], self.ev_write_start[index + 1]
        return tuple(
            Write(
                self.wr_node[w],
                FIELDS[self.wr_field[w]],
                self.wr_before[w],
                self.wr_after[w],
                self.wr_line[w] or None,
            )
            for w in range(lo, hi)
        )

    def event(self, index: int) -> Event:
        kind = self.ev_kind[index]
        closure = self.ev_closure[index]
        return Event(
            index=index,
            kind=EVENT_KINDS[kind],
            node=self.ev_node[index],
            before=self.ev_before[index],
            after=self.ev_after[index],
            line=self.ev_line[index] or None,
            writes=self.writes(index) if kind == BACKWARD else (),
            closure=closure if closure >= 0 else None,
        )

    def events(self) -> Iterator[Event]:
        return (self.event(i) for i in range(len(self)))

    def line_of(self, index: int) -> int | None:
        """The scenario line of event `index`: where the node was made or the write done."""
        if self.ev_kind[index] == CREATE:
            return self.node_line[self.ev_node[index]] or None
        return self.ev_line[index] or None

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
        made = [self.ev_node[i] for i in range(forward.start, forward.end)]
        inside = set(made)
        used = {c for n in made for c in self.children(n) if c not in inside}
        return sorted(used) + made

    def backward_root(self, backward: Pass) -> int | None:
        """The node a backward pass starts from: the seeded node, else the first caller."""
        for i in range(backward.start, backward.end):
            if self.ev_kind[i] in (GRAD, BACKWARD):
                return self.ev_node[i]
        return None

    def losses(self) -> list[tuple[int, float]]:
        """(pass index, root data) for every backward pass: the loss curve of training."""
        out = []
        for p in self.passes:
            if p.kind == "backward":
                root = self.backward_root(p)
                if root is not None:
                    out.append((p.index, self.data_at_creation(root)))
        return out

    def data_at_creation(self, nid: int) -> float:
        return self.node_data[nid]

    # -- derived indexes, built once on first use ------------------------------------------
    @cached_property
    def uses(self) -> array:
        """Per node, how many nodes take it as an input (its fan-out)."""
        uses = array("q", bytes(8 * self.node_count))
        for nid in range(self.node_count):
            for c in set(self.children(nid)):
                uses[c] += 1
        return uses

    @cached_property
    def earlier_write(self) -> array:
        """Per write inside a `_backward`, the index of the previous write to the same
        node's same field within the same backward pass, or -1 for its first one."""
        out = array("q", [-1]) * len(self.wr_node)
        for p in self.passes:
            if p.kind != "backward":
                continue
            last: dict[tuple[int, int], int] = {}
            for w in range(self.ev_write_start[p.start], self.ev_write_start[p.end]):
                key = (self.wr_node[w], self.wr_field[w])
                out[w] = last.get(key, -1)
                last[key] = w
        return out

    def contribution(self, w: int) -> int:
        """1 for the first write to a node in its backward pass, 2 for the second, ..."""
        n = 1
        w = self.earlier_write[w]
        while w >= 0:
            n += 1
            w = self.earlier_write[w]
        return n

    def backward_order(self, backward: Pass) -> list[int]:
        """The nodes whose `_backward` ran in a backward pass, in the order they ran:
        the reverse of the topological order the pass walked."""
        return [self.ev_node[i] for i in range(backward.start, backward.end)
                if self.ev_kind[i] == BACKWARD]


def split_passes(trace: Trace) -> list[Pass]:
    """Group the events into runs of one kind: forward, backward, zero_grad, update, other.

    A grad write that is followed directly by a `_backward` call is that backward pass's
    seed. Other grad writes outside `_backward` set to zero form `zero_grad` passes; any
    other lone grad write is `other`. Runs of one event kind are found with a regular
    expression over the kind bytes, so only grad writes are looked at one by one.
    """
    kinds = trace.ev_kind
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
        if kind != GRAD:
            add(RUN_KINDS[kind], start, end)
            continue
        for i in range(start, end):
            j = i + 1
            while j < n and kinds[j] == GRAD and trace.ev_node[j] == trace.ev_node[i]:
                j += 1
            if j < n and kinds[j] == BACKWARD:
                add("backward", i, i + 1)
            elif trace.ev_after[i] == 0:
                add("zero_grad", i, i + 1)
            else:
                add("other", i, i + 1)
    return [Pass(index, kind, start, end)  # type: ignore[arg-type]
            for index, (kind, start, end) in enumerate(spans)]


RUN_KINDS = {CREATE: "forward", BACKWARD: "backward", DATA: "update"}
