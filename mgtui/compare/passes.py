"""One backward pass of a trace as the comparison reads it: the graph it walked (the
root's ancestors), every node's value as the pass began, the gradient each node had
when it was complete (when its own `_backward` ran, else at the end of the pass), and
the contributions each `_backward` call made to each gradient."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from mgtui.trace import EventKind, Field, Pass, Trace


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one `_backward` call (of `writer`, at event `step`) added to `node`'s grad."""

    writer: int
    node: int
    before: float
    after: float
    line: int | None
    step: int

    @property
    def delta(self) -> float:
        return self.after - self.before


class BackwardPass:
    """Backward pass `number` (from 1) of `trace`, read once for the comparison."""

    def __init__(self, trace: Trace, p: Pass, number: int) -> None:
        self.trace = trace
        self.pass_ = p
        self.number = number
        self.root = trace.backward_root(p)
        self.nodes: list[int] = trace.ancestors(self.root) if self.root is not None else []
        self.data, grad = trace.state_at(p.start)
        self.grad_done: dict[int, float] = {}
        self.done_at: dict[int, int] = {}  # node -> the event its grad was complete at
        self.call_at: dict[int, int] = {}  # node -> its (first) `_backward` call
        self.into: dict[int, list[Contribution]] = {}
        self._walk(grad)

    def _walk(self, grad) -> None:
        t, p = self.trace, self.pass_
        for i in p.steps:
            kind, node = t.kind(i), t.event_node(i)
            if kind is EventKind.GRAD:
                grad[node] = t.change(i)[1]
                continue
            if kind is EventKind.DATA:
                self.data[node] = t.change(i)[1]
                continue
            if kind is not EventKind.BACKWARD:
                continue
            if node not in self.call_at:
                self.call_at[node] = i
                self.done_at[node] = i
                self.grad_done[node] = grad[node]
            for w in t.writes(i):
                if w.field is not Field.GRAD:
                    continue
                grad[w.node] = w.after
                self.into.setdefault(w.node, []).append(
                    Contribution(node, w.node, w.before, w.after, w.line, i))
        for nid in self.nodes:
            if nid not in self.done_at:
                self.done_at[nid] = p.end
                self.grad_done[nid] = grad[nid]

    @cached_property
    def leaves(self) -> list[int]:
        return [n for n in self.nodes if self.trace.is_leaf(n)]

    @cached_property
    def ops(self) -> list[int]:
        """The nodes computed from others, in the order they were made."""
        return [n for n in self.nodes if not self.trace.is_leaf(n)]

    @cached_property
    def members(self) -> frozenset[int]:
        return frozenset(self.nodes)

    def in_done_order(self) -> list[int]:
        """The graph's nodes in the order their gradients were complete."""
        return sorted(self.nodes, key=lambda n: (self.done_at[n], -n))

    def name(self, nid: int) -> str:
        """A node's name, or "" for one known only by its id (a constant, say)."""
        label = self.trace.label(nid)
        return "" if label.startswith("#") else label


def backward_passes(trace: Trace) -> list[BackwardPass]:
    """Every backward pass of the trace that walked a graph, in order."""
    out = []
    for p in trace.passes:
        if p.kind == "backward":
            bp = BackwardPass(trace, p, len(out) + 1)
            if bp.root is not None:
                out.append(bp)
    return out
