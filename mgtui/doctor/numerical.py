"""The numerical check: re-run the scenario with node values nudged, and compare how the
values move with the grads its `_backward` calls applied.

How it stays fast on large graphs (written here rather than taken from a library,
because every run is a re-run of a user's script, not a call of a function): one pair of
runs nudges every node of the checked graph at once, by ±h along a seeded random
direction `u`, and stops as soon as the checked backward pass is about to start.

- The output moves by `h * sum(u_i * grad_i)`: gradcheck's fast mode, a directional
  derivative of the root, compared with the recorded grads.
- Every node `N = op(c_1..c_k)` also moves, and its move must match the move of its
  inputs through the local derivative its `_backward` applied:
  `N.grad * dN = sum_k (contribution to c_k.grad) * dc_k`. Each `_backward` call is
  checked on its own, so the faulty op is found directly, with no bisection, and a wrong
  topological order (which feeds an op a partial grad) is not mistaken for a wrong
  derivative. At a kink (ReLU at 0) one one-sided difference must agree instead.

The finding's numbers then come from a few more runs that nudge one input of the faulty
op alone: its numerical gradient against the recorded one.
"""

from __future__ import annotations

import math
import random
from array import array
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from mgtui.doctor.context import CheckContext, collector_paused
from mgtui.doctor.findings import Finding
from mgtui.doctor.reruns import Reruns
from mgtui.timeline import Timeline
from mgtui.trace import EventKind, Field, Pass, Trace

ATOL, RTOL = 1e-5, 1e-3  # gradcheck's tolerances
H = 1e-7  # nudge of the directional runs, relative to max(1, |data|)
H_SINGLE = 1e-6  # nudge of the one-input runs that give a finding its numbers
MAX_INPUTS_NUDGED = 8  # inputs of a faulty op nudged one by one for its numbers

ProgressFn = Callable[[int, int, str], None]


def close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= ATOL + RTOL * scale


@dataclass
class Plan:
    """What the nudged runs check: one backward pass and the graph behind its root."""

    pass_: Pass
    first: int  # its first `_backward` event
    stop_after: int  # the `_backward` calls before that one, over the whole run
    root: int
    nodes: list[int]  # the root's graph, by id
    leaves: list[int]
    direction: dict[int, float]  # node -> its nudge, in units of H


@dataclass
class Moves:
    """Every node's data as the checked pass found it, and in the two nudged runs."""

    base: array
    plus: array
    minus: array
    start_grad: array  # every grad as the checked pass found it


@dataclass
class Suspect:
    """A `_backward` call whose contributions do not match how its node moves."""

    event: int
    node: int
    grad: float  # the node's grad when its `_backward` ran
    contrib: dict[int, float]  # input -> what the call added to its grad


class NumericalCheck:
    """The numerical check of one backward pass, phase by phase (see `run`)."""

    def __init__(self, trace: Trace, ctx: CheckContext, reruns: Reruns,
                 progress: ProgressFn) -> None:
        self.trace = trace
        self.ctx = ctx
        self.reruns = reruns
        self.progress = progress
        self.checked: Pass | None = None
        self.checked_nodes = 0
        self.checked_calls = 0  # `_backward` calls whose local derivative was checked
        self.kinks = 0  # of them, those that only agreed on one side (ReLU at 0)
        self.notes: list[str] = []
        self.flat: set[int] = set()  # calls of a no-op `_backward` on a flat op: right

    def run(self, sample: int | None, earlier: list[Finding]) -> list[Finding]:
        """The findings so far (`earlier`, from the trace checks), less the no-backward
        ones the numbers show to be right (a flat op), plus the numerical check's own."""
        plan = self.plan(sample)
        if plan is None:
            return earlier
        moves = self.nudged_runs(plan)
        if moves is None:
            return earlier
        with collector_paused():
            suspects = self.check_calls(plan, moves)
        if self.kinks:
            self.notes.append(f"{self.kinks} _backward call(s) sit at a kink (like ReLU at 0) "
                              f"and were checked on one side; the check of the root's "
                              f"directional derivative was left out")
        found = [f for f in earlier if not (f.kind == "no-backward" and f.step in self.flat)]
        found += self.localise(plan, suspects, moves.start_grad)
        p = plan.pass_
        if (p.index in self.ctx.explained_passes or suspects or self.kinks
                or any(f.step in p for f in found)):
            return found
        return found + self.check_direction(plan, moves)

    # -- the phases --------------------------------------------------------------------------
    def pick_pass(self) -> Pass | None:
        """The first complete backward pass with a seeded, finite root."""
        t = self.trace
        for p in self.ctx.backward_passes:
            if p.index in self.ctx.seedless:
                continue
            if t.error is not None and t.error.after_event < p.end:
                continue
            root = t.backward_root(p)
            if root is None or not math.isfinite(t.node_data[root]) or t.is_leaf(root):
                continue
            return p
        return None

    def plan(self, sample: int | None) -> Plan | None:
        """The pass to check, and a seeded random direction over its graph: every leaf,
        and `sample` of the other nodes (all of them by default)."""
        t = self.trace
        p = self.pick_pass()
        if p is None:
            return None
        self.checked = p
        first = t.first_backward(p)
        root = t.backward_root(p)
        assert first is not None and root is not None
        nodes = t.ancestors(root)
        # data set by hand after creation (`p.data = ...`) may have replaced the nudge
        tampered = {t.event_node(i) for i in t.events_of(EventKind.DATA, 0, first)}
        rng = random.Random(self.reruns.seed)
        leaves = [n for n in nodes if t.is_leaf(n)]
        inner = [n for n in nodes if not t.is_leaf(n) and n not in tampered]
        if sample is not None and sample < len(inner):
            inner = sorted(rng.sample(inner, max(sample, 0)))
        direction: dict[int, float] = {}
        for n in leaves + inner:
            x = t.node_data[n]
            if math.isfinite(x):
                direction[n] = rng.choice((-1.0, 1.0)) * max(1.0, abs(x))
        self.checked_nodes = len(nodes)
        stop_after = len(t.events_of(EventKind.BACKWARD, 0, first))
        return Plan(p, first, stop_after, root, nodes, leaves, direction)

    def nudged_runs(self, plan: Plan) -> Moves | None:
        """The two runs nudged by ±H along the direction, up to the checked pass."""
        u = plan.direction
        size = plan.root + 1  # the nodes each run makes before it stops
        phase = "numerical check"
        self.progress(0, 2 * size, phase)
        plus = self.reruns({n: H * v for n, v in u.items()}, plan.stop_after,
                           lambda nid: self.progress(nid, 2 * size, phase))
        minus = self.reruns({n: -H * v for n, v in u.items()}, plan.stop_after,
                            lambda nid: self.progress(size + nid, 2 * size, phase))
        self.progress(2 * size, 2 * size, phase)
        if len(plus) != plan.first or len(minus) != plan.first:
            self.notes.append("the nudged runs took another path than the recorded one, "
                              "so the numerical check was skipped")
            return None
        at_start = Timeline(self.trace, plan.pass_.start)
        dp, dm = plus.final_data, minus.final_data
        for n in plan.leaves:  # a leaf moves by exactly its nudge, if it was not overwritten
            if n in u:
                u[n] = (dp[n] - dm[n]) / (2 * H)
        return Moves(at_start.data, dp, dm, array("d", at_start.grad))

    def check_calls(self, plan: Plan, moves: Moves) -> list[Suspect]:
        """Each `_backward` call of the pass, checked on its own: the calls whose local
        derivative does not match the moves."""
        t, ctx = self.trace, self.ctx
        u, base, dp, dm = plan.direction, moves.base, moves.plus, moves.minus
        grad = array("d", moves.start_grad)  # the recorded grads, as the pass goes
        suspects: list[Suspect] = []
        for i, kind, writes in ctx.events_with_writes(plan.pass_):
            if kind is EventKind.GRAD:
                grad[t.event_node(i)] = t.change(i)[1]
                continue
            if kind is not EventKind.BACKWARD:
                continue
            nid = t.event_node(i)
            g = grad[nid]
            contrib: dict[int, float] = {}
            for w in writes:
                if w.field is Field.GRAD:
                    contrib[w.node] = contrib.get(w.node, 0.0) + w.delta
                    grad[w.node] = w.after
            inputs = t.children(nid)
            if not inputs or nid >= len(dp) or nid >= len(dm):
                continue
            closure = t.closure_of(i)
            if closure is not None and closure.default and not depends(nid, inputs, u, dp, dm):
                self.flat.add(i)  # a step-like op: no `_backward` is the right derivative, 0
            if i in ctx.explained or not finite_call(nid, inputs, g, contrib, base, dp, dm):
                continue
            ok, kinked = local_ok(nid, inputs, g, contrib, u, base, dp, dm)
            self.checked_calls += 1
            self.kinks += kinked
            if not ok:
                suspects.append(Suspect(i, nid, g, contrib))
        return suspects

    def localise(self, plan: Plan, suspects: list[Suspect], start_grad: array) -> list[Finding]:
        """One finding per faulty closure, at its first faulty call."""
        t = self.trace
        per_closure = Counter(t.closure_index(s.event) for s in suspects)
        found = []
        for s in suspects:
            more = per_closure.pop(t.closure_index(s.event), None)
            if more is not None:
                found.append(self.wrong_derivative(plan, s, start_grad, more - 1))
        return found

    def check_direction(self, plan: Plan, moves: Moves) -> list[Finding]:
        """gradcheck's fast mode: the directional derivative of the root against the
        recorded grads, when no single call explains a difference."""
        t, ctx = self.trace, self.ctx
        p, root, u = plan.pass_, plan.root, plan.direction
        dp, dm, base, start_grad = moves.plus, moves.minus, moves.base, moves.start_grad
        final = Timeline(t, p.end).grad
        recorded = sum(v * (final[n] - start_grad[n]) for n, v in u.items())
        central = (dp[root] - dm[root]) / (2 * H)
        forward = (dp[root] - base[root]) / H
        backward = (base[root] - dm[root]) / H
        if not math.isfinite(recorded) or not math.isfinite(central):
            return []
        if any(close(num, recorded, max(abs(num), abs(recorded)))
               for num in (central, forward, backward)):
            return []
        where = ctx.scenario_where(t.event_line(plan.first))
        ran = set(t.backward_order(p))
        skipped = [n for n in plan.nodes if not t.is_leaf(n) and n not in ran
                   and final[n] - start_grad[n] != 0]
        if skipped:  # an op node that got a grad but never passed it on
            nid = skipped[-1]
            return [ctx.finding(
                "topo-order", nid, plan.first, where,
                f"{ctx.op_text(nid)} is in the graph of {ctx.node_text(root)} and got a grad "
                f"({final[nid] - start_grad[nid]:.6g}) but its _backward never ran in this "
                f"pass: the topological order leaves it out ({len(skipped)} node(s) like it). "
                f"Nudging the graph along a random direction moves {t.label(root)} at the "
                f"rate numerical {central:.6g}, recorded {recorded:.6g}",
                numerical=central, recorded=recorded)]
        return [ctx.finding(
            "wrong-gradient", root, plan.first, where,
            f"nudging all {len(u)} nodes of the graph of {ctx.node_text(root)} along a random "
            f"direction moves it at the rate numerical {central:.6g}, recorded "
            f"{recorded:.6g}, and no single _backward call explains it",
            numerical=central, recorded=recorded)]

    # -- a faulty op's numbers -------------------------------------------------------------
    def wrong_derivative(self, plan: Plan, s: Suspect, start_grad: array,
                         more: int) -> Finding:
        """The finding for a faulty `_backward`, with the numbers of its first input
        whose contribution is off."""
        t, ctx = self.trace, self.ctx
        inputs = list(dict.fromkeys(t.children(s.node)))[:MAX_INPUTS_NUDGED]
        worst = self.first_wrong_input(plan, s, inputs, start_grad)
        also = (f" The same _backward disagrees at {more} more call{'s' if more > 1 else ''}."
                if more else "")
        c = worst.input if worst is not None else inputs[0]
        closure = t.closure_of(s.event)
        line = ctx.grad_write_line(s.event, c) or (closure.first_line if closure else None)
        where = ctx.closure_where(s.event, line)
        if worst is None:  # no single input shows it (several inputs move together)
            return ctx.finding(
                "wrong-derivative", s.node, s.event, where,
                f"the _backward of {ctx.op_text(s.node)} does not match how "
                f"{t.label(s.node)} changes with its inputs ({ctx.labels(inputs)}).{also}")
        name, out = t.label(c), t.label(s.node)
        return ctx.finding(
            "wrong-derivative", s.node, s.event, where,
            f"{name}.grad: numerical {worst.grad_num:.6g}, recorded {worst.grad_rec:.6g}. The "
            f"_backward of {ctx.op_text(s.node)} added {worst.applied:.6g} to {name}.grad, "
            f"which is {worst.local_rec:.6g} × {out}.grad ({s.grad:.6g}); d{out}/d{name} is "
            f"{worst.local_num:.6g} numerically, so it should have added "
            f"{worst.expected:.6g}.{also}", numerical=worst.grad_num, recorded=worst.grad_rec)

    def first_wrong_input(self, plan: Plan, s: Suspect, inputs: list[int],
                          start_grad: array) -> InputRate | None:
        """Nudge each input of the faulty op alone: the first whose contribution is not
        the op's grad times the local derivative measured."""
        t = self.trace
        final = Timeline(t, plan.pass_.end).grad
        phase = "working out the numbers"
        for n, c in enumerate(inputs):
            step = H_SINGLE * max(1.0, abs(t.node_data[c]))
            self.progress(2 * n, 2 * len(inputs), phase)
            plus = self.reruns({c: step}, plan.stop_after)
            minus = self.reruns({c: -step}, plan.stop_after)
            self.progress(2 * n + 2, 2 * len(inputs), phase)
            if len(plus) != plan.first or len(minus) != plan.first:
                continue
            dc = plus.final_data[c] - minus.final_data[c]
            if dc == 0:
                continue
            local_num = (plus.final_data[s.node] - minus.final_data[s.node]) / dc
            applied = s.contrib.get(c, 0.0)
            expected = s.grad * local_num
            if not close(applied, expected, max(abs(applied), abs(expected))):
                return InputRate(
                    c, local_num, applied / s.grad if s.grad else math.nan,
                    (plus.final_data[plan.root] - minus.final_data[plan.root]) / dc,
                    final[c] - start_grad[c], applied, expected)
        return None


@dataclass
class InputRate:
    """How one input of a faulty op should have been credited, and how it was."""

    input: int
    local_num: float  # d op / d input, numerically
    local_rec: float  # what the `_backward` applied, per unit of the op's grad
    grad_num: float  # the input's grad, numerically
    grad_rec: float  # the input's grad, recorded (over the pass)
    applied: float  # what the call added to the input's grad
    expected: float  # what it should have added


def finite_call(nid: int, inputs: tuple[int, ...], g: float, contrib: dict[int, float],
                base: array, dp: array, dm: array) -> bool:
    """Are all the numbers a call's check needs finite?"""
    isfinite = math.isfinite
    return (isfinite(g)
            and all(isfinite(base[n]) and isfinite(dp[n]) and isfinite(dm[n])
                    for n in (nid, *inputs))
            and all(isfinite(contrib.get(c, 0.0)) for c in inputs))


def depends(nid: int, inputs: tuple[int, ...], u: dict[int, float], dp: array,
            dm: array) -> bool:
    """Does the op's value move at all when its inputs move?"""
    rate = (dp[nid] - dm[nid]) / (2 * H) - u.get(nid, 0.0)
    moves = [abs(dp[c] - dm[c]) / (2 * H) for c in inputs]
    return not all(math.isfinite(x) for x in moves) or abs(rate) > ATOL + RTOL * max(moves)


def local_ok(nid: int, inputs: tuple[int, ...], g: float, contrib: dict[int, float],
             u: dict[int, float], base: array, dp: array, dm: array) -> tuple[bool, bool]:
    """Does `g * dN == sum_k contrib_k * dc_k` hold, centrally or (at a kink) on one side?
    Returns (ok, only one-sided)."""
    own = u.get(nid, 0.0)
    sides = (
        (dp, dm, 2 * H),  # central
        (dp, base, H),    # forward
        (base, dm, H),    # backward
    )
    for k, (hi, lo, step) in enumerate(sides):
        shift = own * (2 * H if k == 0 else H)
        lhs = g * (hi[nid] - lo[nid] - shift) / step
        terms = [contrib.get(c, 0.0) * (hi[c] - lo[c]) / step for c in inputs]
        rhs = sum(terms)
        scale = max(abs(lhs), sum(abs(x) for x in terms))
        if close(lhs, rhs, scale):
            return True, k > 0
    return False, False
