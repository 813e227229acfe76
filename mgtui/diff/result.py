"""The first difference between two runs, and the comparison that found it.

Backward passes are paired in order (the first of A with the first of B, …). In each
pair, after the graphs are aligned (`mgtui.diff.align`), a value that differs comes
first (the forward pass ran first), the node made earliest; then a gradient, in the order
A's backward pass completed them: the first node whose gradient is wrong is the one the
wrong `_backward` wrote, not one downstream that inherited the error. Its `_backward` is
found by comparing each call's contribution to it with the other side's."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import Literal

from mgtui.diff.align import Alignment, align
from mgtui.diff.passes import BackwardPass, Contribution
from mgtui.diff.sides import Side, open_sides
from mgtui.diff.array_values import Value, combine, numbers, pick, unrecorded_against_array
from mgtui.diff.values import Tolerance
from mgtui.errors import ScenarioLoadError
from mgtui.trace import EventKind, Pass
from mgtui.trace.export import num as json_num

# `unpinned`: a gradient differs but no `_backward` can be named, the calls that wrote
# it having no partner on the other side (the alignment stopped before them)
Kind = Literal["value", "grad", "passes", "shape", "unpinned"]
Calls = list[Contribution]  # one `_backward` call's writes to one node
# how the gradient that differs is told: by one call (`call`), by no call, the difference
# there before them (`outside`), or not (`unpaired`: the calls have no partner)
How = Literal["call", "outside", "unpaired"]
UNALIGNED_LISTED = 1000  # unaligned nodes the JSON lists on each side (all are counted)


def num(v: float) -> str:
    """A number as the report shows it: 0.2929, -1.5, 0.5."""
    return f"{v:.4g}"


@dataclass(frozen=True)
class Point:
    """One side of a difference: the node, its value there, and where it came from —
    the `_backward` call (`writer`, at event `step`) and the line that wrote it, or, for
    a value, the line that made or last set the node."""

    node: int
    label: str
    op: str
    value: float
    step: int | None  # the event to open the app at
    writer: int | None = None
    writer_label: str = ""
    writer_op: str = ""
    place: str = ""  # `mine.py:37`, "" if no line was recorded
    code: str = ""  # that line's text, stripped
    by: str = ""  # the `_backward` (or autograd node, `TanhBackward0`) that wrote it
    element: tuple[int, ...] | None = None  # where the value is an array: the element
    shape: tuple[int, ...] | None = None  # that differs first (`value`), of this shape
    field: Literal["grad", "data"] = "grad"  # what differs: its gradient, or its value

    @property
    def name(self) -> str:
        """What differs: `n.grad`, `n`; `W.grad[2, 1]`, `W[2, 1]` in an array."""
        at = "" if self.element is None else f"[{', '.join(map(str, self.element))}]"
        return f"{self.label}{'.grad' if self.field == 'grad' else ''}{at}"

    def to_json(self) -> dict:
        return {"node": self.node, "label": self.label, "op": self.op, "field": self.field,
                "value": json_num(self.value), "step": self.step, "writer": self.writer,
                "writer_label": self.writer_label or None, "writer_op": self.writer_op or None,
                "place": self.place or None, "code": self.code or None,
                "by": self.by or None,
                "element": list(self.element) if self.element is not None else None,
                "shape": list(self.shape) if self.shape is not None else None}


@dataclass(frozen=True)
class Culprit:
    """Your one `_backward` call (at event `step`) whose addition to `node`'s grad
    differs: what it added (`mine`), and what the other side added (`theirs`)."""

    step: int
    node: int
    mine: Value
    theirs: Value


@dataclass(frozen=True)
class Difference:
    kind: Kind
    backward_pass: int  # numbered from 1; 0 for none
    message: str
    a: Point | None = None
    b: Point | None = None
    hint: str = ""  # what the numbers suggest (`=` for `+=`)
    # for a `grad` difference one call of yours made (a `_backward` of one call): that
    # call's event, the node whose grad it wrote, and the whole of what the other side
    # added there (the right value, for a replay of the call to find where its own
    # went wrong: `mgtui.diff_origin`); not in the JSON
    call: Culprit | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict:
        return {"kind": self.kind, "backward_pass": self.backward_pass or None,
                "message": self.message, "hint": self.hint or None,
                "a": self.a.to_json() if self.a else None,
                "b": self.b.to_json() if self.b else None}


@dataclass
class Comparison:
    a: Side
    b: Side
    tolerance: Tolerance
    passes_a: int
    passes_b: int
    compared: int = 0  # backward passes compared
    difference: Difference | None = None
    aligned: int = 0  # node pairs in the last pass compared
    leaves: int = 0  # leaf pairs there, their gradients compared
    unaligned_a: list[tuple[int, str, str]] = field(default_factory=list)
    unaligned_b: list[tuple[int, str, str]] = field(default_factory=list)
    # leaves of one side only, compared through the ops made from them (`align`)
    constants_a: list[tuple[int, str, str]] = field(default_factory=list)
    constants_b: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        """What keeps the comparison from being of two whole runs."""
        return [f"{s.name}: {s.problem}" for s in (self.a, self.b) if s.problem]

    @property
    def partial(self) -> bool:
        """Whether more of the two graphs went unaligned (never compared) than was
        aligned: too little seen to call them in agreement."""
        return len(self.unaligned_a) + len(self.unaligned_b) > self.aligned

    @property
    def agree(self) -> bool:
        return self.difference is None and not self.problems and not self.partial

    def to_json(self) -> dict:
        def nodes(listed) -> list[dict]:
            return [{"node": n, "label": lab, "op": op}
                    for n, lab, op in listed[:UNALIGNED_LISTED]]

        def side(s: Side, passes: int, unaligned, constants) -> dict:
            return {"name": s.name, "saved_trace": s.saved, "backward_passes": passes,
                    "problem": s.problem or None, "unaligned_count": len(unaligned),
                    "unaligned": nodes(unaligned), "constants": nodes(constants)}

        return {"format": "mgtui-diff", "version": 1, "agree": self.agree,
                "partial": self.partial,
                "tolerance": {"rtol": self.tolerance.rtol, "atol": self.tolerance.atol},
                "backward_passes_compared": self.compared, "aligned": self.aligned,
                "leaves_compared": self.leaves,
                "difference": self.difference.to_json() if self.difference else None,
                "a": side(self.a, self.passes_a, self.unaligned_a, self.constants_a),
                "b": side(self.b, self.passes_b, self.unaligned_b, self.constants_b)}


def compare(a: str, b: str, *, tolerance: Tolerance = Tolerance(), **run_options) -> Comparison:
    """Record (or read) both sides and compare them. Raises ScenarioLoadError if either
    cannot be shown at all."""
    side_a, side_b = open_sides(a, b, **run_options)
    return compare_traces(side_a, side_b, tolerance)


def compare_traces(a: Side, b: Side, tolerance: Tolerance = Tolerance()) -> Comparison:
    """Raises ScenarioLoadError if a side ran no backward pass: there is nothing to
    compare it by (the gradients, and the values they were computed from)."""
    passes_a, passes_b = backward_passes(a.trace), backward_passes(b.trace)
    for side, passes in ((a, passes_a), (b, passes_b)):
        if not passes:
            why = f" ({side.problem})" if side.problem else ""
            raise ScenarioLoadError(f"{side.name}: no backward pass was recorded{why}, and "
                                    "diff compares backward passes: the gradients and the "
                                    "values they were computed from")
    out = Comparison(a, b, tolerance, len(passes_a), len(passes_b))
    states = _States(a.trace), _States(b.trace)
    for (pa, na), (pb, nb) in zip(passes_a, passes_b):
        al = align(BackwardPass(a.trace, pa, na, states[0].at(pa.start)),
                   BackwardPass(b.trace, pb, nb, states[1].at(pb.start)), tolerance)
        out.compared += 1
        _keep_alignment(out, al)
        out.difference = first_difference(al, a, b, tolerance)
        if out.difference is not None:
            return out
    if len(passes_a) != len(passes_b):
        more, fewer = (a, b) if len(passes_a) > len(passes_b) else (b, a)
        out.difference = Difference(
            "passes", 0, f"{more.name} ran {max(len(passes_a), len(passes_b))} backward "
            f"passes and {fewer.name} {min(len(passes_a), len(passes_b))}: the first "
            f"{out.compared} agree")
    return out


class _States:
    """A trace's state at steps that only go forward, each replayed from the one before
    (not from the start, as `Trace.replay.state_at` does): a copy for each."""

    def __init__(self, trace) -> None:
        self.trace = trace
        self.step = 0
        self.data, self.grad = trace.replay.state_at(0)

    def at(self, step: int):
        self.trace.replay.between(self.step, step, self.data, self.grad)
        self.step = step
        return array("d", self.data), array("d", self.grad)


def backward_passes(trace) -> list[tuple[Pass, int]]:
    """The trace's backward passes that walked a graph, each with its number from 1."""
    out = []
    for p in trace.passes:
        if p.kind == "backward" and trace.backward_root(p) is not None:
            out.append((p, len(out) + 1))
    return out


def _keep_alignment(out: Comparison, al: Alignment) -> None:
    ua, ub = al.unaligned()
    ca, cb = al.constants()
    ta, tb = al.a.trace, al.b.trace
    out.unaligned_a = [(n, ta.label(n), ta.op(n)) for n in ua]
    out.unaligned_b = [(n, tb.label(n), tb.op(n)) for n in ub]
    out.constants_a = [(n, ta.label(n), ta.op(n)) for n in ca]
    out.constants_b = [(n, tb.label(n), tb.op(n)) for n in cb]
    out.aligned = len(al.to_b)
    out.leaves = sum(1 for n in al.a.leaves if n in al.to_b and al.a.name(n))


def first_difference(al: Alignment, a: Side, b: Side, tol: Tolerance) -> Difference | None:
    pa, pb = al.a, al.b
    if not any(n in al.to_b for n in pa.leaves):
        return Difference("shape", pa.number, f"backward pass {pa.number}: no input of "
                          f"{a.name}'s graph matches one of {b.name}'s, by name or by value: "
                          "the two graphs could not be aligned")
    for na in pa.classes:  # the order they were made
        nb = al.to_b.get(na)
        if nb is not None and _differ(pa.value(na), pb.value(nb), tol):
            return _value_difference(al, a, b, na, nb, tol)
    ra, rb = pa.rep[pa.root], pb.rep[pb.root]
    if al.to_b.get(ra) != rb and not tol.agree(pa.value(ra), pb.value(rb)):
        return _value_difference(al, a, b, ra, rb, tol)  # the outputs, whatever aligned
    for na in pa.in_done_order():
        nb = al.to_b.get(na)
        if nb is not None and not tol.agree(pa.grad(na), pb.grad(nb)):
            return _grad_difference(al, a, b, na, nb, tol)
    return None


def _differ(va: Value, vb: Value, tol: Tolerance) -> bool:
    """Do two values differ? Not where one was not recorded: a bare nan against an array
    (the value of a node torch made inside an op, `(h @ W).T`, is not known)."""
    if unrecorded_against_array(va, vb):
        return False
    return not tol.agree(va, vb)


def _pick(va: Value, vb: Value, tol: Tolerance) -> dict:
    """What a Point shows of a value that differs (`array_values.pick`)."""
    return pick(va, vb, tol)


def _value_difference(al: Alignment, a: Side, b: Side, na: int, nb: int,
                      tol: Tolerance) -> Difference:
    pa, pb = al.a, al.b
    va, vb = pa.value(na), pb.value(nb)
    pt_a = _value_point(pa, a, na, _pick(va, vb, tol))
    pt_b = _value_point(pb, b, nb, _pick(vb, va, tol))
    what = f"`{pt_a.name}`" + (f" ({pt_a.op})" if pt_a.op else "")
    message = (f"backward pass {pa.number}: {what} is {shown(pt_a)} in yours"
               f"{_paren(pt_a)} and {shown(pt_b)} in {b.called_beside(a)}{_paren(pt_b)}")
    return Difference("value", pa.number, message, pt_a, pt_b)


def _value_point(p: BackwardPass, side: Side, nid: int, shown: dict) -> Point:
    """Where node `nid`'s value as pass `p` began came from: its last `data` write before
    the pass, else the line that made it."""
    t = side.trace
    step, line = t.index.created_at(nid), t.line(nid)
    for i in reversed(t.events_of(EventKind.DATA, 0, p.pass_.start)):
        if t.event_node(i) == nid:
            step, line = i, t.event_line(i)
            break
    place = side.place(t.scenario, line) if line else ""
    return Point(nid, t.label(nid), t.op(nid), step=step, place=place,
                 code=_code(t.source, line), field="data", **shown)


def _grad_difference(al: Alignment, a: Side, b: Side, na: int, nb: int,
                     tol: Tolerance) -> Difference:
    pa, pb = al.a, al.b
    ca, cb, how = _culprit(al, na, nb, tol)
    if how == "unpaired":
        return _unpinned(al, a, b, na, nb, tol)
    va, vb = (_added(ca), _added(cb)) if how == "call" else (pa.grad(na), pb.grad(nb))
    pt_a = _grad_point(pa, a, na, ca, how, _pick(va, vb, tol))
    pt_b = _grad_point(pb, b, nb, cb, how, _pick(vb, va, tol))
    message = f"backward pass {pa.number}: " + _grad_message(a, b, pt_a, pt_b, how)
    one = how == "call" and ca and all((c.step, c.node) == (ca[0].step, ca[0].node) for c in ca)
    call = Culprit(ca[0].step, ca[0].node, va, vb) if one else None
    return Difference("grad", pa.number, message, pt_a, pt_b,
                      _overwrite_hint(ca, cb, tol) if how == "call" else "", call)


def _unpinned(al: Alignment, a: Side, b: Side, na: int, nb: int,
              tol: Tolerance) -> Difference:
    """A gradient that differs where the calls that wrote it have no partner on the other
    side: no `_backward` is named (the last writer would be a guess), only the gradient
    and where the alignment of the two graphs stopped."""
    pa, pb = al.a, al.b
    va, vb = pa.grad(na), pb.grad(nb)
    pt_a = Point(na, a.trace.label(na), a.trace.op(na), step=pa.done(na), **_pick(va, vb, tol))
    pt_b = Point(nb, b.trace.label(nb), b.trace.op(nb), step=pb.done(nb), **_pick(vb, va, tol))
    message = (f"backward pass {pa.number}: {pt_a.name} is {shown(pt_a)} in yours and "
               f"{shown(pt_b)} in {b.called_beside(a)}, but no node could be pinned: the calls that "
               f"wrote it have no partner in the other graph ({stopped(al, a, b)})")
    return Difference("unpinned", pa.number, message, pt_a, pt_b)


def stopped(al: Alignment, a: Side, b: Side) -> str:
    """Where the alignment stopped: the first op made on one side that has no partner on
    the other, with its line, and how many more there are."""
    ua, ub = al.unaligned()
    for side, p, nodes, whose in ((a, al.a, ua, "yours"), (b, al.b, ub, b.called_beside(a))):
        ops = [n for n in nodes if not p.trace.is_leaf(n)]
        if ops:
            t = side.trace
            line = t.line(ops[0])
            at = f", made at {side.place(t.scenario, line)}" if line else ""
            more = f", the first of {len(ops)} ops of {whose} with none" if len(ops) > 1 else ""
            return (f"the alignment stopped at `{t.label(ops[0])}` ({t.op(ops[0])}{at}), "
                    f"which has no partner{more}")
    return "every op has a partner, but not the calls' writers"


def _culprit(al: Alignment, na: int, nb: int, tol: Tolerance) -> tuple[Calls, Calls, How]:
    """The `_backward` call on each side whose contribution to the node differs (its
    writes to it, and the other side's from the matching call); else every call. A
    writer with no partner inside an op fused on one side (torch's LogSoftmax inside
    `cross_entropy`) counts as the op it goes into (`_owner`)."""
    ca = _owned(al.a, al.a.contributions(na), al.to_b)
    cb = _owned(al.b, al.b.contributions(nb), al.to_a)
    if all(al.to_b.get(w) in cb for w in ca) and all(al.to_a.get(w) in ca for w in cb):
        for w, mine in ca.items():
            theirs = cb[al.to_b[w]]
            if not tol.agree(_sum(mine), _sum(theirs)):
                return mine, theirs, "call"
        return _every(ca), _every(cb), "outside"
    return _every(ca), _every(cb), "unpaired"


OWNER_STEPS = 16  # users followed from a writer with no partner to one with a partner


def _owned(p: BackwardPass, calls: dict[int, Calls], partner: dict[int, int]) -> dict[int, Calls]:
    out: dict[int, Calls] = {}
    for w, cs in calls.items():
        out.setdefault(_owner(p, w, partner), []).extend(cs)
    for cs in out.values():
        cs.sort(key=lambda c: c.step)
    return out


def _owner(p: BackwardPass, w: int, partner: dict[int, int]) -> int:
    """Writer class `w` if it has a partner; else the one op it goes into, followed while
    that has none, if it comes to one that has (else `w`)."""
    n = w
    for _ in range(OWNER_STEPS):
        if n in partner:
            return n
        users = p.users(n)
        if len(users) != 1:
            return w
        n = users[0]
    return n if n in partner else w


def _every(calls: dict[int, Calls]) -> Calls:
    return sorted((c for cs in calls.values() for c in cs), key=lambda c: c.step)


def _added(calls: Calls) -> Value:
    """What the calls added to a grad, or, where that cannot be worked out (an array
    whose shape the call changed), what they left in it."""
    total = _sum(calls)
    if calls and numbers(total) and math.isnan(total) and not numbers(calls[-1].after):
        return calls[-1].after
    return total


def _sum(calls: Calls) -> Value:
    total: Value = 0.0
    for c in calls:
        total = combine(total, c.delta, 1.0)
    return total


def _overwrite_hint(mine: Calls, theirs: Calls, tol: Tolerance) -> str:
    """`=` where `+=` belongs: a write that found a grad already there and left what the
    other side added, not that plus it."""
    for c, d in zip(mine, theirs):
        if not numbers(c.before, c.after):
            continue
        if c.before != 0 and tol.close(c.after, d.delta) and not tol.close(c.delta, d.delta):
            return (f"it set the grad to its own share instead of adding it: `=` where `+=` "
                    f"belongs (the {num(c.before)} already there was lost)")
    return ""


def _grad_point(p: BackwardPass, side: Side, nid: int, calls: Calls, how: How,
                shown: dict) -> Point:
    """One side of a gradient that differs (`shown`: its number, or its element that
    differs): for `call`, what the culprit call added to it, and its line; else the
    whole grad, and the last call that wrote to it."""
    t = side.trace
    if how == "outside":
        return _set_outside(p, side, nid, shown)
    if not calls:
        return Point(nid, t.label(nid), t.op(nid), step=p.done(nid), **shown)
    c = calls[0] if how == "call" else calls[-1]
    closure = t.closure_of(c.step)
    filename = closure.filename if closure is not None else t.scenario
    place = side.place(filename, c.line) if c.line else ""
    code = _closure_code(closure, c.line) if closure is not None else _code(t.source, c.line)
    return Point(nid, t.label(nid), t.op(nid), step=c.step, writer=c.writer,
                 writer_label=t.label(c.writer), writer_op=t.op(c.writer), place=place,
                 code=code, by=closure.name if closure is not None else "", **shown)


def _set_outside(p: BackwardPass, side: Side, nid: int, shown: dict) -> Point:
    """A gradient whose difference no `_backward` call made: the last write to it
    outside them (the seed `o.grad = 1`, a `zero_grad`), in this pass or before it."""
    t = side.trace
    members = set(p.members[nid])
    done = p.done(nid)
    for i in reversed(t.events_of(EventKind.GRAD, 0, done)):
        if t.event_node(i) in members:
            line = t.event_line(i)
            return Point(nid, t.label(nid), t.op(nid), step=i,
                         place=side.place(t.scenario, line) if line else "",
                         code=_code(t.source, line), **shown)
    return Point(nid, t.label(nid), t.op(nid), step=done, **shown)


def shown(pt: Point) -> str:
    """The point's number, or `a (5, 3) array` for an array whose shape differs."""
    if pt.shape is not None and pt.element is None and math.isnan(pt.value):
        return f"a ({', '.join(map(str, pt.shape))}{',' if len(pt.shape) == 1 else ''}) array"
    return num(pt.value)


def _grad_message(a: Side, b: Side, pa: Point, pb: Point, how: How) -> str:
    """`o`'s tanh: your `_backward` at mine.py:37 gives n.grad 0.2929, torch gives 0.5"""
    grad, other = pa.name, b.called_beside(a)
    if how == "outside":
        return (f"{grad} is {shown(pa)} in yours and {shown(pb)} in {other}, though "
                "every `_backward` call added the same to it: the difference was there "
                "before them (set outside any `_backward`: the seed, or a grad left from "
                "before the pass, a missing zero_grad?)")
    who = pa if pa.writer is not None else pb
    head = f"`{who.writer_label}`'s {who.writer_op or 'op'}: "
    yours = "`backward`" if a.is_torch else "`_backward`"  # (a custom Function's)
    mine = (f"your {yours}{_at(pa)} gives {grad} {shown(pa)}" if pa.writer is not None
            else f"yours adds nothing to {grad}")
    theirs = (f"{other} gives {shown(pb)}{_at(pb) or _paren_by(pb)}" if pb.writer is not None
              else f"{other} adds nothing")
    return f"{head}{mine}, {theirs}"


def _at(pt: Point) -> str:
    return f" at {pt.place}" if pt.place else ""


def _paren_by(pt: Point) -> str:
    """` (TanhBackward0)`: the autograd node, where no source line was recorded."""
    return f" ({pt.by})" if pt.by and not pt.place else ""


def _paren(pt: Point) -> str:
    return f" ({pt.place})" if pt.place else ""


def _closure_code(closure, line: int | None) -> str:
    if not line:
        return ""
    k = line - closure.first_line
    return closure.lines[k].strip() if 0 <= k < len(closure.lines) else ""


def _code(source: str, line: int | None) -> str:
    if not line or not source:
        return ""
    lines = source.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""
