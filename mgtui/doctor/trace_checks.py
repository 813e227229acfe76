"""The checks that need only the trace (and the probe's hits): one function per check,
each `check_x(trace, ctx) -> list[Finding]`, run in the order of `TRACE_CHECKS`."""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from typing import Callable

from mgtui.doctor.context import CheckContext
from mgtui.doctor.findings import Finding
from mgtui.trace.explain import misread_nodes, misread_sentences
from mgtui.doctor.arrays import bad_element, element_index, is_zero, shown
from mgtui.trace import EventKind, Pass, Trace
from mgtui.trace.arrays import is_finite

Check = Callable[[Trace, CheckContext], list[Finding]]


def check_non_finite(trace: Trace, ctx: CheckContext) -> list[Finding]:
    """The first nan or inf in any data or grad, and the step that produced it (in an
    array, its first such element, named)."""
    t = trace
    i = t.values.first_non_finite()
    if i is None:
        return []
    kind = t.kind(i)
    if kind is EventKind.CREATE:
        nid = t.event_node(i)
        value, at, element = bad_element(t.values.created_value(nid))
        inputs = ctx.inputs(nid)
        if inputs:
            given = ", ".join(f"{t.label(c)} = {shown(t.values.created_value(c))}" for c in inputs)
            finite = all(is_finite(t.values.created_value(c)) for c in inputs)
            how = "overflowed to" if finite and math.isinf(value) else "made"
            origin = f"its op {t.op(nid) or '?'} {how} {value} from {given}"
        else:
            origin = f"it was created as {value}"
        return [ctx.finding("non-finite", nid, i, ctx.scenario_where(t.line(nid)),
                            f"{ctx.node_text(nid)}.data{at} is {value}: {origin}",
                            recorded=value, element=element)]
    if kind is EventKind.BACKWARD:
        owner = t.event_node(i)
        w, before, after = next((w, b, a) for w in t.writes(i)
                                for b, a in [t.values.write_value(w.index, w.before, w.after)]
                                if not is_finite(a))
        value, at, element = bad_element(after)
        values = [f"{t.label(n)}.data = {shown(t.values.created_value(n))}"
                  for n in (owner, *ctx.inputs(owner))]
        return [ctx.finding("non-finite", owner, i, ctx.closure_where(i, w.line),
                            f"the _backward of {ctx.op_text(owner)} "
                            f"wrote {ctx.node_text(w.node)}.{w.field}{at} = {value} "
                            f"(it was {shown(before)}); values at creation: " + ", ".join(values),
                            recorded=value, element=element)]
    nid = t.event_node(i)
    before, after = t.values.event_value(i, *t.change(i))
    value, at, element = bad_element(after)
    return [ctx.finding("non-finite", nid, i, ctx.scenario_where(t.event_line(i)),
                        f"{ctx.node_text(nid)}.{kind}{at} was set to {value} "
                        f"(it was {shown(before)})", recorded=value, element=element)]


def check_grad_shape(trace: Trace, ctx: CheckContext) -> list[Finding]:
    """A `_backward` that gave an input a grad of another shape than the input's data
    (an array broadcast and never summed back), as the probe's replays saw it."""
    t = trace
    calls = t.events_of(EventKind.BACKWARD)
    found = []
    for hit in ctx.arrays.shape_hits:
        if hit.call >= len(calls) or t.event_node(calls[hit.call]) != hit.node:
            continue
        event = calls[hit.call]
        ctx.explained.add(event)
        name = t.label(hit.target)
        found.append(ctx.finding(
            "grad-shape", hit.node, event,
            ctx.closure_where(event, ctx.assigning_write_line(event, hit.target)),
            f"the _backward of {ctx.op_text(hit.node)} gave {ctx.node_text(hit.target)} a "
            f"grad of shape {tuple(hit.grad_shape)}, where {name}.data has shape "
            f"{tuple(hit.data_shape)}: a gradient has its value's shape (sum it over the "
            f"axes {name} was broadcast along)"))
    return found


def check_overwrite(trace: Trace, ctx: CheckContext) -> list[Finding]:
    """`=` instead of `+=`: the probe's replays, tied to their recorded call."""
    t = trace
    if not ctx.overwrites:
        return []
    calls = t.events_of(EventKind.BACKWARD)
    found = []
    for hit in ctx.overwrites:
        nid, target = hit.node, hit.target
        event = calls[hit.call] if hit.call < len(calls) and t.event_node(calls[hit.call]) == nid \
            else next((i for i in calls if t.event_node(i) == nid), None)
        if event is None or target < 0:
            continue
        ctx.explained.add(event)
        start, g0, gs = hit.start, hit.from_zero, hit.from_start
        element, at = None, ""
        if hit.element >= 0:
            from mgtui.doctor.arrays import element_text

            shape = ctx.arrays.shapes.get(target, ())
            element, at = element_index(shape, hit.element), element_text(shape, hit.element)
        found.append(ctx.finding(
            "overwrite", nid, event,
            ctx.closure_where(event, ctx.assigning_write_line(event, target)),
            f"the _backward of {ctx.op_text(nid)} assigns "
            f"{ctx.node_text(target)}.grad instead of adding to it: replayed with "
            f"{t.label(target)}.grad{at} = {start:.6g} beforehand it left {gs:.6g}, "
            f"not {start + g0:.6g} (= {start:.6g} + {g0:.6g}); a second "
            f"contribution to {t.label(target)}.grad would be lost", element=element))
    return found


def check_no_backward(trace: Trace, ctx: CheckContext) -> list[Finding]:
    """An op node whose `_backward` is still the no-op its `__init__` set."""
    t = trace
    found = []
    for i in t.events_of(EventKind.BACKWARD):
        closure = t.closure_of(i)
        if closure is None or not closure.default:
            continue
        nid = t.event_node(i)
        inputs = ctx.inputs(nid)
        if not inputs:
            continue
        ctx.explained.add(i)
        names = ctx.labels(inputs)
        found.append(ctx.finding(
            "no-backward", nid, i, ctx.scenario_where(t.line(nid)),
            f"{ctx.op_text(nid)} has inputs ({names}) but its _backward is still the no-op "
            f"that Value.__init__ sets: no gradient reaches {names}"))
    return found


def check_foreign_write(trace: Trace, ctx: CheckContext) -> list[Finding]:
    """A `_backward` that wrote to a node other than its op's inputs (its first such write)."""
    t = trace
    found = []
    for i, w in t.foreign_writes():
        closure = t.closure_of(i)
        if closure is not None and closure.default:
            continue
        nid = t.event_node(i)
        inputs = ctx.inputs(nid)
        ctx.explained.add(i)
        found.append(ctx.finding(
            "foreign-write", nid, i, ctx.closure_where(i, w.line),
            f"the _backward of {ctx.op_text(nid)} wrote {ctx.node_text(w.node)}.{w.field} "
            f"({w.before:.6g} → {w.after:.6g}), which is not one of its inputs "
            f"({ctx.labels(inputs) or 'none'}){held_elsewhere(t, i) or '.'}{ctx.late_text(i)}"))
    return found


def held_elsewhere(t: Trace, event: int) -> str:
    """` `x` here is b (#1), not ...`: why, where the call's closure held nodes other
    than its own (`mgtui.trace.explain.misread_nodes`); "" if it did not, or is not known."""
    if not t.values_at(event):
        return ""
    data, grad = t.replay.state_at(event)
    misread = misread_nodes(t, event, data.__getitem__, grad.__getitem__)
    return "." + "".join(" " + s for s in misread_sentences(t, misread)) if misread else ""


def check_missing_seed(trace: Trace, ctx: CheckContext) -> list[Finding]:
    """A backward pass whose root grad is 0 when its first `_backward` runs."""
    t = trace
    found = []
    for p in ctx.backward_passes:
        first = t.first_backward(p)
        assert first is not None
        root = t.event_node(first)
        if t.is_leaf(root) or ctx.grad_before(root, first) != 0:
            continue
        if any(t.change(i)[1] != 0 for i in t.events_of(EventKind.GRAD, p.start, first)):
            continue  # another node was seeded: the order starts at the wrong node
            #           (the topological-order check says so)
        ctx.seedless.add(p.index)
        ctx.explained_passes.add(p.index)
        seed = next((i for i in t.events_of(EventKind.GRAD, p.start, first)
                     if t.event_node(i) == root), None)
        line = t.event_line(seed if seed is not None else first)
        what = "was set to 0" if seed is not None else "was never set to 1"
        found.append(ctx.finding(
            "missing-seed", root, first, ctx.scenario_where(line),
            f"the backward pass starts at {ctx.node_text(root)}, whose grad {what}: every "
            f"contribution is multiplied by {t.label(root)}.grad = 0, so all grads stay 0 "
            f"(set {t.label(root)}.grad = 1.0 first)", recorded=0.0))
    return found


def check_repeated_backward(trace: Trace, ctx: CheckContext) -> list[Finding]:
    """An op node whose `_backward` ran more than once in one backward pass: the
    topological order holds it twice, and it hands its grad on twice. (A grad written
    between the calls, like a second `loss.backward()` seeding its root, starts anew.)"""
    t = trace
    found = []
    for p in ctx.backward_passes:
        calls = t.backward_calls(p)
        nodes = list(map(t.event_node, calls))
        if len(set(nodes)) == len(nodes):
            continue  # the common case: each node's `_backward` ran once
        seeds = t.events_of(EventKind.GRAD, p.start, p.end)
        runs: dict[tuple[int, int], list[int]] = {}  # (seed, op node) -> its calls
        for i, nid in zip(calls, nodes):
            if not t.is_leaf(nid):
                runs.setdefault((bisect_right(seeds, i), nid), []).append(i)
        again = sorted((c[1], nid) for (_, nid), c in runs.items() if len(c) > 1)
        if not again:
            continue
        ctx.explained_passes.add(p.index)
        ctx.repeated.add(p.index)
        second, nid = again[0]  # the node whose second call comes first
        twice = next(c for c in runs.values() if second in c)
        found.append(ctx.finding(
            "repeated-backward", nid, second, ctx.order_where(twice[0]),
            repeated_message(t, ctx, p, nid, twice, len(again) - 1)))
    return found


def repeated_message(t: Trace, ctx: CheckContext, p: Pass, nid: int, calls: list[int],
                     more: int) -> str:
    times = "twice" if len(calls) == 2 else f"{len(calls)} times"
    steps = ", ".join(str(i + 1) for i in calls[:-1]) + f" and {calls[-1] + 1}"
    name = t.label(nid)
    others = f" ({more} more node{'s' if more > 1 else ''} too)" if more else ""
    return (f"the _backward of {ctx.op_text(nid)} ran {times} in backward pass "
            f"{ctx.backward_number(p)} (steps {steps}), so its inputs "
            f"({ctx.labels(ctx.inputs(nid))}) got {name}'s grad passed on {times}: the "
            f"topological order holds {name} {times}{others}, where each node belongs once")


def check_topo_order(trace: Trace, ctx: CheckContext) -> list[Finding]:
    """A node's `_backward` that ran before the `_backward` of a node that uses it (in a
    pass where no `_backward` ran twice: that finding says why the order is off)."""
    t = trace
    found = []
    for p in ctx.backward_passes:
        if p.index in ctx.repeated:
            continue
        first_run: dict[int, int] = {}  # node -> its first `_backward` call in the pass
        for i in t.backward_calls(p):
            first_run.setdefault(t.event_node(i), i)
        last_user: dict[int, tuple[int, int]] = {}  # node -> (latest first call of a user, user)
        for user, i in first_run.items():
            for c in ctx.inputs(user):
                if c in first_run and (c not in last_user or last_user[c][0] < i):
                    last_user[c] = (i, user)
        early = next(((nid, i) for nid, i in sorted(first_run.items(), key=lambda item: item[1])
                      if nid in last_user and not t.is_leaf(nid) and last_user[nid][0] > i), None)
        if early is None:
            continue
        nid, i = early
        j, user = last_user[nid]
        ctx.explained_passes.add(p.index)
        where = ctx.order_where(i)
        built = ctx.built_text(where, t.event_line(i))
        found.append(ctx.finding(
            "topo-order", nid, i, where,
            f"the _backward of {ctx.node_text(nid)} ran at step {i + 1}, before the "
            f"_backward of {ctx.node_text(user)} (step {j + 1}), which uses it: "
            f"{t.label(nid)} passed on a grad that was not complete yet (the "
            f"topological sort must add a node after all of its inputs{built})"))
    return found


def check_missing_zero_grad(trace: Trace, ctx: CheckContext) -> list[Finding]:
    """A backward pass that starts while grads still hold values from an earlier backward
    pass: one of the same graph, or one before the last update of the parameters."""
    t = trace
    data = array("d", t.node_data)  # `apply` replays both fields; only grads are read
    grad = array("d", bytes(8 * t.node_count))
    held: dict[int, int] = {}  # node -> the backward pass its grad still comes from
    ends: dict[int, int] = {}  # backward pass -> its end
    roots: dict[int, int | None] = {}  # backward pass -> its root
    last_update = -1  # the last data write outside `_backward`
    backward = {p.index for p in ctx.backward_passes}
    updated = updated_nodes(t)
    found = []
    for p in t.passes:
        if p.kind == "forward":
            continue  # creations change no grad
        calls = {i: t.grad_targets(i) for i in t.backward_calls(p)}  # call -> grads it wrote
        if p.index in backward:
            stale = [(nid, q) for nid, q in
                     stale_grads(t, p, calls, grad, held, ends, roots, last_update)
                     if not (updated and t.is_leaf(nid) and nid not in updated)]
            if stale:
                ctx.explained_passes.add(p.index)
                found.append(zero_grad_finding(t, ctx, p, calls, stale, grad, ends, last_update))
            ends[p.index] = p.end
            roots[p.index] = t.backward_root(p)
        if p.kind == "backward":
            t.replay.between(p.start, p.end, data, grad)  # in bulk: a backward pass is long
        for i in p.steps:
            if p.kind != "backward":
                t.replay.apply(i, data, grad)
            written = calls.get(i)
            if written is not None:
                held.update(dict.fromkeys(written, p.index))
            elif t.kind(i) is EventKind.GRAD:
                held.pop(t.event_node(i), None)
            elif t.kind(i) is EventKind.DATA:
                last_update = i
    return found


def updated_nodes(t: Trace) -> set[int]:
    """The nodes whose data the scenario changed outside a backward pass: the parameters,
    where it updates any. A leaf it never changes (an input, a target) may keep a grad
    from pass to pass harmlessly, when the parameters are zeroed (most engines' zero_grad
    zeroes only those)."""
    return {t.event_node(i) for p in t.passes if p.kind != "backward" for i in p.steps
            if t.kind(i) is EventKind.DATA}


def stale_grads(t: Trace, p: Pass, calls: dict[int, list[int]], grad: array,
                held: dict[int, int], ends: dict[int, int], roots: dict[int, int | None],
                last_update: int) -> list[tuple[int, int]]:
    """(node, earlier backward pass) for each node that pass `p` adds to while its grad
    is still nonzero from that earlier pass, and should have been zeroed since."""
    root = t.backward_root(p)
    stale: list[tuple[int, int]] = []
    seen: set[int] = set()
    for written in calls.values():
        for nid in written:
            if nid in seen:
                continue
            seen.add(nid)
            q = held.get(nid)
            if q is None or grad_is_zero(t, nid, p.start, grad[nid]):
                continue
            if last_update >= ends[q] or roots.get(q) == root:
                stale.append((nid, q))
    return stale


def grad_is_zero(t: Trace, nid: int, position: int, scalar: float) -> bool:
    """Is node `nid`'s grad 0 after the first `position` events (every element of an
    array grad, whose column holds nan: `scalar`)?"""
    if scalar == scalar:
        return scalar == 0
    return is_zero(t.values.value_at(nid, True, position, scalar))


def zero_grad_finding(t: Trace, ctx: CheckContext, p: Pass, calls: dict[int, list[int]],
                      stale: list[tuple[int, int]], grad: array, ends: dict[int, int],
                      last_update: int) -> Finding:
    """The finding at the first `_backward` call that adds onto a left-over grad (of a
    leaf, if any is stale: a parameter)."""
    nid, q = min([s for s in stale if t.is_leaf(s[0])] or stale)
    first = t.first_backward(p)
    assert first is not None
    step = next((i for i, written in calls.items() if i >= first and nid in written), first)
    why = ("the parameters were updated in between" if last_update >= ends[q]
           else "it is the same graph again")
    more = f", and {len(stale) - 1} more node(s) like it" if len(stale) > 1 else ""
    value = t.values.value_at(nid, True, p.start, grad[nid])  # (an array grad's, as a summary)
    return ctx.finding(
        "missing-zero-grad", nid, step, ctx.scenario_where(t.event_line(first)),
        f"this backward pass began with {ctx.node_text(nid)}.grad = {shown(value)} "
        f"left over from backward pass {ctx.backward_number(t.passes[q])} ({why}){more}: "
        f"the new gradients are added on top; zero the grads before backward()",
        recorded=value if isinstance(value, float) else None)


TRACE_CHECKS: tuple[Check, ...] = (
    check_missing_seed,  # first: the numerical check leaves out the passes it explains
    check_non_finite,
    check_overwrite,
    check_grad_shape,
    check_no_backward,
    check_foreign_write,
    check_repeated_backward,
    check_topo_order,
    check_missing_zero_grad,
)
