"""One backward pass of a trace as the comparison reads it: the graph it walked (the
root's ancestors), every node's value as the pass began, the gradient each node had
when it was complete (when its own `_backward` ran, else at the end of the pass), and
the contributions each `_backward` call made to each gradient.

The same computation made twice (`(y - t)*(y - t)` builds `y - t` twice, each with a
constant of its own) is one quantity: its copies form a class, whose gradient is the sum
of theirs. Two engines that share a subexpression differently then still agree: one
engine's `d**2` gives `d` what the other's `d1*d2` gives `d1` and `d2` together. A class
goes by its first node (`rep`), and the comparison speaks of classes."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from array import array
from functools import cached_property

from mgtui.diff.aliases import kind_of
from mgtui.diff.array_values import Value, combine
from mgtui.trace import EventKind, Field, Pass, Trace

COMMUTATIVE = frozenset({"+", "*"})
op_kind = kind_of  # an op by what it computes (`mgtui.diff.aliases`: the one table)


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one `_backward` call (of `writer`, at event `step`) added to `node`'s grad."""

    writer: int
    node: int
    before: Value
    after: Value
    line: int | None
    step: int

    @property
    def delta(self) -> Value:
        return combine(self.after, self.before, -1.0)


class BackwardPass:
    """Backward pass `number` (from 1) of `trace`, read once for the comparison. `state`
    is every node's data and grad as it began (`trace.replay.state_at(p.start)`: given, when
    the passes are read one after another, by replaying from the one before); this
    pass writes into them."""

    def __init__(self, trace: Trace, p: Pass, number: int,
                 state: tuple[array, array] | None = None) -> None:
        self.trace = trace
        self.pass_ = p
        self.number = number
        self.root = trace.backward_root(p)
        self.nodes: list[int] = trace.ancestors(self.root) if self.root is not None else []
        self.data, grad = state if state is not None else trace.replay.state_at(p.start)
        # a tensor engine's (or torch's) arrays, read through the trace where they were
        # arrays: its scalar columns hold a stand-in there (`mgtui.trace.arrays`)
        self.arrays = bool(getattr(trace, "has_arrays", False))
        self.grad_done: dict[int, Value] = {}
        self.done_at: dict[int, int] = {}  # node -> the event its grad was complete at
        self.into: dict[int, list[Contribution]] = {}
        self._walk(grad)
        self.rep: dict[int, int] = {}  # node -> the first node of its class
        self.members: dict[int, list[int]] = {}  # rep -> the nodes of its class
        self._classes()

    def _walk(self, grad) -> None:
        """Through the pass in order: its `_backward` calls, and the few grad and data
        writes outside them (the seed)."""
        t, p = self.trace, self.pass_
        lone = sorted(t.events_of(EventKind.GRAD, p.start, p.end)
                      + t.events_of(EventKind.DATA, p.start, p.end))
        done_at, into = self.done_at, self.into
        for i in heapq.merge(t.backward_calls(p), lone):
            node = t.event_node(i)
            kind = t.kind(i)
            if kind is not EventKind.BACKWARD:
                (grad if kind is EventKind.GRAD else self.data)[node] = t.change(i)[1]
                continue
            if node not in done_at:
                done_at[node] = i
                self.grad_done[node] = self._grad(node, i, grad)
            if not t.write_count_of(i):
                continue
            for w in t.writes(i):
                if w.field is Field.GRAD:
                    grad[w.node] = w.after
                    before, after = (t.values.write_value(w.index, w.before, w.after)
                                     if self.arrays else (w.before, w.after))
                    into.setdefault(w.node, []).append(
                        Contribution(node, w.node, before, after, w.line, i))
        for nid in self.nodes:
            if nid not in done_at:
                done_at[nid] = p.end
                self.grad_done[nid] = self._grad(nid, p.end, grad)

    def _grad(self, nid: int, position: int, grad) -> Value:
        """Node `nid`'s grad after the first `position` events (`grad`: the scalars)."""
        if self.arrays:
            return self.trace.values.value_at(nid, True, position, grad[nid])
        return grad[nid]

    def value(self, nid: int) -> Value:
        """Node `nid`'s data as the pass began: a float, or an array."""
        if self.arrays:
            return self.trace.values.value_at(nid, False, self.pass_.start, self.data[nid])
        return self.data[nid]

    def _classes(self) -> None:
        """Nodes that compute the same thing from the same inputs are one class: a
        named leaf is a class of its own, an unnamed one (a constant) one with every
        constant of its value, an op one with the ops of its kind over the same classes
        that got the same value."""
        t, rep, first, data = self.trace, self.rep, {}, self.data
        self._children: dict[int, list[int]] = {}
        self._users: dict[int, list[int]] = {}
        for n in self.nodes:  # by id: every input before the nodes made from it
            kids = t.children(n)
            if not kids:
                key: tuple = ("leaf", n) if self.name(n) else ("const", data[n])
            else:
                reps = [rep.get(c, c) for c in kids]
                op = t.op(n)
                key = (op, tuple(sorted(reps) if op_kind(op) in COMMUTATIVE else reps), data[n])
            r = rep[n] = first.setdefault(key, n)
            if r == n:
                self.members[n] = [n]
                if kids:
                    self._children[n] = reps
                    for c in dict.fromkeys(reps):
                        self._users.setdefault(c, []).append(n)
            else:
                self.members[r].append(n)

    # -- classes ---------------------------------------------------------------------------
    @cached_property
    def classes(self) -> list[int]:
        """Each class by its first node, in the order they were made."""
        return list(self.members)

    @cached_property
    def leaves(self) -> list[int]:
        return [r for r in self.classes if self.trace.is_leaf(r)]

    @cached_property
    def ops(self) -> list[int]:
        """The classes computed from others, in the order they were made."""
        return [r for r in self.classes if not self.trace.is_leaf(r)]

    def children(self, r: int) -> list[int]:
        """The classes class `r` is computed from (in the order its first node has them)."""
        return self._children.get(r, [])

    def users(self, r: int) -> list[int]:
        """The classes computed from class `r`, in the order they were made."""
        return self._users.get(r, [])

    def grad(self, r: int) -> Value:
        """The class's gradient once complete: the sum of its nodes'."""
        members = self.members[r]
        total = self.grad_done[members[0]]
        for m in members[1:]:
            total = combine(total, self.grad_done[m], 1.0)
        return total

    def done(self, r: int) -> int:
        """The event by which every node of the class had its gradient complete."""
        return max(self.done_at[m] for m in self.members[r])

    def in_done_order(self) -> list[int]:
        """The classes in the order their gradients were complete."""
        return sorted(self.classes, key=lambda r: (self.done(r), -r))

    def contributions(self, r: int) -> dict[int, list[Contribution]]:
        """What each `_backward` call added to the class's nodes before they were
        complete, by the class of the node that made the call, in the order they ran."""
        out: dict[int, list[Contribution]] = {}
        for m in self.members[r]:
            for c in self.into.get(m, ()):
                if c.step < self.done_at[m]:
                    out.setdefault(self.rep.get(c.writer, c.writer), []).append(c)
        for calls in out.values():
            calls.sort(key=lambda c: c.step)
        return out

    def name(self, nid: int) -> str:
        """A node's name, or "" for one known only by its id (a constant, say)."""
        label = self.trace.label(nid)
        return "" if label.startswith("#") else label

