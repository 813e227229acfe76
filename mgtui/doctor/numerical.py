"""The numerical check: re-run the scenario with node values nudged, and compare how the
values move with the grads its `_backward` calls applied.

How it stays fast on large graphs (written here rather than taken from a library,
because every run is a re-run of a user's script, not a call of a function): one run
nudges every node of the checked graphs at once, by +h along a seeded random direction
`u`, and stops as soon as the last checked backward pass is about to start. It records
while the trace checks run. Every checked pass reads its nodes' moves from that run, at
the step its backward pass starts, so a later pass costs only its own checking. The
one-sided difference from the recording clears a right pass; only for a pass that
seems wrong is a second run made, nudged by -h, for central differences (and the
one-sided ones on either side of a kink). An op node's own nudge is taken back as its
pass's backward begins, so that later passes move smoothly (a ReLU output nudged off 0
would switch its `_backward` on).

- The output moves by `h * sum(u_i * grad_i)`: gradcheck's fast mode, a directional
  derivative of the root, compared with the recorded grads.
- Every node `N = op(c_1..c_k)` also moves, and its move must match the move of its
  inputs through the local derivative its `_backward` applied:
  `N.grad * dN = sum_k (contribution to c_k.grad) * dc_k`, over its distinct inputs
  (`x * x` has one, whichever way `_prev` keeps it). Each `_backward` call is
  checked on its own, so the faulty op is found directly, with no bisection, and a wrong
  topological order (which feeds an op a partial grad) is not mistaken for a wrong
  derivative. At a kink (ReLU at 0) one one-sided difference must agree instead.

The finding's numbers then come from a few more runs that nudge one input of the faulty
op alone: its numerical gradient against the recorded one (`faulty_op.FaultyOp`, an
object the check holds).

Which passes: by default every checkable backward pass, in order, those between the
first and the last while the time budget lasts (the last is always checked);
`passes="all"` or a list of backward pass numbers (counted from 1) checks those asked for.
Going in pass order, a finding is made at the first wrong pass, and names the other
checked passes it is wrong in (`also wrong in backward passes 3, 5`; `tally`);
those cost no runs of their own. What a check plans and measures (`Plan`, `Moves`,
`Suspect`) is in `nudged`.
"""

from __future__ import annotations

import math
import random
import time
from array import array
from collections import Counter
from typing import Callable

from mgtui.doctor.context import CheckContext
from mgtui.doctor.faulty_op import FaultyOp
from mgtui.doctor.findings import Finding
from mgtui.doctor.nudged import ATOL, RTOL, H, Moves, Plan, Suspect, close
from mgtui.doctor.reruns import Reruns
from mgtui.doctor.tally import Tally, WrongPasses
from mgtui.memory import collector_paused
from mgtui.trace import EventKind, Field, Pass, Trace

BUDGET = 10.0  # seconds: by default, passes between the first and the last are checked
#                while the numerical check has taken less than this

PassChoice = str | list[int] | None  # None: sampled; "all"; or backward pass numbers from 1

ProgressFn = Callable[[int, int, str], None]


class NumericalCheck:
    """The numerical check of the chosen backward passes, phase by phase (see `run`)."""

    def __init__(self, trace: Trace, ctx: CheckContext, reruns: Reruns,
                 progress: ProgressFn, budget: float = BUDGET, by_element: bool = False) -> None:
        self.trace = trace
        self.by_element = by_element  # the array engine's: element by element (`array_check`)
        self.ctx = ctx
        self.reruns = reruns
        self.progress = progress
        self.budget = budget
        self.checkable: list[Pass] = []  # the passes that could be checked
        self.tally = Tally(WrongPasses(trace, ctx))  # what was checked, for the report
        self.seconds = 0.0
        self.faulty = FaultyOp(trace, ctx, reruns, progress)  # a faulty op's numbers
        self.flat: set[int] = set()  # calls of a no-op `_backward` on a flat op: right
        self.sampled = True
        self.plans: list[Plan] = []
        self.pending: list = []  # the run nudged up, started by `begin`
        self.started = 0.0
        self.quiet = True  # its progress is not shown until `run` waits for it
        self.arrays = None  # the array check (`array_check.ArrayCheck`) on a tensor engine

    def begin(self, passes: PassChoice, sample: int | None) -> None:
        """Choose the passes and start the run nudged up: it records while the trace
        checks go on (the missing-seed check must have run: a seedless pass is left out)."""
        self.started = time.perf_counter()
        self.sampled = passes is None
        wanted = self.choose(passes)
        if wanted and self.ctx.arrays.dtypes:  # float32: a nudge of 1e-7 is lost in it
            self.tally.notes.append(f"the arrays are {', '.join(self.ctx.arrays.dtypes)}, not "
                                    f"float64: finite differences need float64, so no gradient "
                                    f"was checked numerically")
        elif wanted and self.by_element:  # the array engine: checked element by element
            from mgtui.doctor.array_check import ArrayCheck

            self.arrays = ArrayCheck(self.trace, self.ctx, self.reruns, self.tally,
                                     self.progress, self.budget, self.sampled)
            self.arrays.begin(wanted)
            self.pending = self.arrays.pending
        elif wanted:
            rng = random.Random(self.reruns.seed)
            self.plans = [self.plan(p, sample, rng) for p in wanted]
            self.pending = self.start_nudged(self.plans, (1,))
        self.seconds = time.perf_counter() - self.started

    def run(self, earlier: list[Finding]) -> list[Finding]:
        """The findings so far (`earlier`, from the trace checks), less the no-backward
        ones the numbers show to be right (a flat op), plus the numerical check's own."""
        resumed = time.perf_counter()
        self.quiet = False
        try:
            return self._run(earlier)
        finally:
            self.seconds += time.perf_counter() - resumed

    def _run(self, earlier: list[Finding]) -> list[Finding]:
        if self.arrays is not None:
            return self.arrays.run(earlier)
        plans = self.plans
        if not plans:
            return earlier
        runs = self.finish_nudged(plans, self.pending)
        if runs is None:
            return earlier
        (plus,) = runs
        minus: Trace | None = None
        started = time.perf_counter() - self.seconds  # as if the check had run alone
        found = list(earlier)
        tally = self.tally
        last = len(plans) - 1
        for k, plan in enumerate(plans):  # in pass order: the first wrong pass comes first
            if (self.sampled and 0 < k < last
                    and time.perf_counter() - started > self.budget):
                continue  # a pass between the first and the last, over the budget
            # One run nudged up tells a right pass from a wrong one; the run nudged down
            # is made only for a pass that seems wrong (a kink, or a fault to localise).
            if minus is None:
                counts = tally.checked_calls, tally.kinks
                checked = self.check_pass(plan, self.moves_at(plan, plus, None), found, False)
                if checked is not None:
                    found = checked
                    continue
                tally.checked_calls, tally.kinks = counts
                tally.checked.pop()
                tally.checked_nodes -= len(plan.nodes)
                more = self.finish_nudged(plans, self.start_nudged(plans, (-1,)))
                if more is None:
                    break
                (minus,) = more
            found = self.check_pass(plan, self.moves_at(plan, plus, minus), found, True) or found
        found = tally.wrong_in.named(found)
        left = len(plans) - len(tally.checked)
        if left:
            tally.notes.append(f"{left} backward pass(es) between the first and the last "
                               f"were left out to keep within the time budget of "
                               f"{self.budget:g} s (--passes all checks every one)")
        if tally.kinks:
            tally.notes.append(f"{tally.kinks} _backward call(s) sit at a kink (like ReLU at 0) "
                               f"and were checked on one side; the check of the root's "
                               f"directional derivative was left out where they were")
        return [f for f in found if not (f.kind == "no-backward" and f.step in self.flat)]

    def check_pass(self, plan: Plan, moves: Moves, found: list[Finding],
                   final: bool) -> list[Finding] | None:
        """One backward pass: each `_backward` call, then (if none is at fault) the root's
        directional derivative. Not `final` (one-sided moves): None if anything seems
        off, for the caller to check again on both sides."""
        self.tally.checked.append(plan.pass_)
        self.tally.checked_nodes += len(plan.nodes)
        kinks = self.tally.kinks
        with collector_paused():
            suspects = self.check_calls(plan, moves)
        if suspects and not final:
            return None
        found = found + self.localise(plan, suspects, moves.start_grad)
        p = plan.pass_
        if (p.index in self.ctx.explained_passes or suspects or self.tally.kinks > kinks
                or any(f.step in p for f in found)):
            return found
        direction = self.check_direction(plan, moves)
        if direction and not final:
            return None
        return found + self.tally.wrong_in.first_of(direction, p)

    # -- the phases --------------------------------------------------------------------------
    def choose(self, passes: PassChoice) -> list[Pass]:
        """The passes to check, in order: all, those asked for (by backward pass number,
        from 1), or by default all of them (`run` leaves out middle ones over budget)."""
        self.checkable = checkable_passes(self.trace, self.ctx)
        if passes is None or passes == "all":
            return list(self.checkable)
        backward = [p for p in self.trace.passes if p.kind == "backward"]
        numbers = {p.index: n for n, p in enumerate(backward, 1)}
        asked = set(passes)
        chosen = [p for p in self.checkable if numbers[p.index] in asked]
        missing = sorted(asked - {numbers[p.index] for p in chosen})
        if missing:
            self.tally.notes.append(f"backward pass(es) {', '.join(map(str, missing))} cannot be "
                                    f"checked numerically (there are "
                                    f"{len(backward)}; a pass must be complete, call _backward and "
                                    f"start from a seeded, finite root)")
            self.tally.uncovered.append(f"backward pass(es) {', '.join(map(str, missing))} could "
                                        f"not be checked numerically")
        return chosen

    def plan(self, p: Pass, sample: int | None, rng: random.Random) -> Plan:
        """One pass to check, and a seeded random direction over its graph: every leaf,
        and `sample` of the other nodes (all of them by default), each nudged by a random
        sign times a random size between 0.5 and 1.5 (times its own size, if over 1)."""
        t = self.trace
        first = t.first_backward(p)
        root = t.backward_root(p)
        assert first is not None and root is not None
        nodes = t.ancestors(root)
        # data set by hand after creation (`p.data = ...`) may have replaced the nudge
        tampered = {t.event_node(i) for i in t.events_of(EventKind.DATA, 0, first)
                    if not t.is_leaf(t.event_node(i))}
        leaves = [n for n in nodes if t.is_leaf(n)]
        inner = [n for n in nodes if not t.is_leaf(n) and n not in tampered]
        if sample is not None and sample < len(inner):
            inner = sorted(rng.sample(inner, max(sample, 0)))
        direction: dict[int, float] = {}
        for n in leaves + inner:
            x = t.node_data[n]
            if math.isfinite(x):
                # a random sign and size: with signs alone, two nudges that undo each
                # other (y +1, z -1 into `y + z`) would hide a node left out of the order
                direction[n] = rng.choice((-1.0, 1.0)) * rng.uniform(0.5, 1.5) * max(1.0, abs(x))
        stop_after = len(t.events_of(EventKind.BACKWARD, 0, first))
        return Plan(p, first, stop_after, root, nodes, leaves, direction)

    def start_nudged(self, plans: list[Plan], signs: tuple[int, ...]) -> list:
        """The runs nudged by `sign` × H along the direction, up to the last checked
        pass, side by side, started. A node in the graphs of several passes (a
        parameter) gets one nudge."""
        u: dict[int, float] = {}
        for plan in plans:
            for n, v in plan.direction.items():
                u.setdefault(n, v)
        for plan in plans:
            plan.direction = {n: u[n] for n in plan.direction}
        last = plans[-1]
        size = max(plan.root for plan in plans) + 1  # the nodes each run makes at least
        phase = "numerical check"
        total = len(signs) * size
        done = [0] * len(signs)

        def progress(side: int):
            def report(nid: int) -> None:
                done[side] = min(nid, size)
                if not self.quiet:
                    self.progress(sum(done), total, phase)
            return report

        # the op nodes' own nudges are taken back as their pass's backward starts
        restore = {plan.stop_after: [n for n in plan.direction if not self.trace.is_leaf(n)]
                   for plan in plans[:-1]}
        return self.reruns.start(
            tuple({n: sign * H * v for n, v in u.items()} for sign in signs),
            last.stop_after, tuple(map(progress, range(len(signs)))), restore)

    def finish_nudged(self, plans: list[Plan], started: list) -> list[Trace] | None:
        """The traces of the nudged runs, if they took the recorded path."""
        self.progress(0, 0, "numerical check")
        runs = self.reruns.wait(started)
        last = plans[-1]
        if any(len(run) != last.first for run in runs):
            self.tally.notes.append("the nudged runs took another path than the recorded one, "
                                    "so the numerical check was skipped")
            return None
        return runs

    def moves_at(self, plan: Plan, plus: Trace, minus: Trace | None) -> Moves:
        """Every node's data when pass `plan` starts: as recorded, and in the nudged runs.
        A leaf's nudge becomes how far it really moved (an update since its creation,
        itself moved by the nudges of earlier passes, counts too)."""
        start = plan.pass_.start
        base, start_grad = self.trace.replay.state_at(start)
        dp = plus.replay.final_data if len(plus) == start else plus.replay.state_at(start)[0]
        if minus is None:
            dm, span = base, H
        else:
            dm = minus.replay.final_data if len(minus) == start else minus.replay.state_at(start)[0]
            span = 2 * H
        u = plan.direction
        for n in plan.leaves:
            if n in u:
                u[n] = (dp[n] - dm[n]) / span
        return Moves(base, dp, dm, start_grad, span)

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
            inputs = ctx.inputs(nid)  # each once: `x * x` may list x twice
            if not inputs or nid >= len(dp) or nid >= len(dm):
                continue
            closure = t.closure_of(i)
            if (closure is not None and closure.default
                    and not depends(nid, inputs, u, dp, dm, moves.span)):
                self.flat.add(i)  # a step-like op: no `_backward` is the right derivative, 0
            if i in ctx.explained or not finite_call(nid, inputs, g, contrib, base, dp, dm):
                continue
            ok, kinked = local_ok(nid, inputs, g, contrib, u, base, dp, dm, moves.span)
            self.tally.checked_calls += 1
            self.tally.kinks += kinked
            if not ok:
                suspects.append(Suspect(i, nid, g, contrib))
        return suspects

    def localise(self, plan: Plan, suspects: list[Suspect], start_grad: array) -> list[Finding]:
        """One finding per faulty closure, at its first faulty call, in the first pass it
        is wrong in (a later pass only adds its number to that finding: no more runs)."""
        t = self.trace
        per_closure = Counter(t.closure_index(s.event) for s in suspects)
        found = []
        for s in suspects:
            more = per_closure.pop(t.closure_index(s.event), None)
            if more is not None and self.tally.wrong_in.first_time(
                    "wrong-derivative", t.closure_index(s.event), plan.pass_):
                found.append(self.faulty.finding(plan, s, start_grad, more - 1))
        return self.tally.wrong_in.own(found)

    def check_direction(self, plan: Plan, moves: Moves) -> list[Finding]:
        """gradcheck's fast mode: the directional derivative of the root against the
        recorded grads, when no single call explains a difference."""
        t, ctx = self.trace, self.ctx
        p, root, u = plan.pass_, plan.root, plan.direction
        dp, dm, base, start_grad = moves.plus, moves.minus, moves.base, moves.start_grad
        ran = set(t.backward_order(p))
        if not ran.issubset(plan.nodes):
            return []  # the pass goes on into another root's graph (`l1.backward(); l2.backward()`)
        final = t.replay.state_at(p.end)[1]
        recorded = sum(v * (final[n] - start_grad[n]) for n, v in u.items())
        central = (dp[root] - dm[root]) / moves.span
        forward = (dp[root] - base[root]) / H
        backward = (base[root] - dm[root]) / H if moves.two_sided else central
        if not math.isfinite(recorded) or not math.isfinite(central):
            return []
        if any(close(num, recorded, max(abs(num), abs(recorded)))
               for num in (central, forward, backward)):
            return []
        skipped = [n for n in plan.nodes if not t.is_leaf(n) and n not in ran
                   and final[n] - start_grad[n] != 0]
        if skipped:  # an op node that got a grad but never passed it on
            nid = skipped[-1]
            more = f" ({len(skipped) - 1} more node(s) like it)" if len(skipped) > 1 else ""
            return [ctx.finding(
                "topo-order", nid, plan.first, ctx.order_where(plan.first),
                f"{ctx.op_text(nid)} is in the graph of {ctx.node_text(root)} and got a grad "
                f"({final[nid] - start_grad[nid]:.6g}) but its _backward never ran in this "
                f"pass: the topological order leaves it out{more}. Nudging the graph along a "
                f"random direction moves {t.label(root)} at the rate numerical "
                f"{central:.6g}, recorded {recorded:.6g}.",
                numerical=central, recorded=recorded)]
        return [ctx.finding(
            "wrong-gradient", root, plan.first, ctx.scenario_where(t.event_line(plan.first)),
            f"nudging all {len(u)} nodes of the graph of {ctx.node_text(root)} along a random "
            f"direction moves it at the rate numerical {central:.6g}, recorded "
            f"{recorded:.6g}, and no single _backward call explains it",
            numerical=central, recorded=recorded)]

    # -- a faulty op's numbers -------------------------------------------------------------

def checkable_passes(t: Trace, ctx: CheckContext) -> list[Pass]:
    """The complete backward passes with a seeded root, finite or an array."""
    out = []
    for p in ctx.backward_passes:
        if p.index in ctx.seedless:
            continue
        if t.error is not None and t.error.after_event < p.end:
            continue
        root = t.backward_root(p)
        if root is None or t.is_leaf(root) or not (
                root in ctx.array_nodes or math.isfinite(t.node_data[root])):
            continue
        out.append(p)
    return out



def finite_call(nid: int, inputs: tuple[int, ...], g: float, contrib: dict[int, float],
                base: array, dp: array, dm: array) -> bool:
    """Are all the numbers a call's check needs finite?"""
    isfinite = math.isfinite
    return (isfinite(g)
            and all(isfinite(base[n]) and isfinite(dp[n]) and isfinite(dm[n])
                    for n in (nid, *inputs))
            and all(isfinite(contrib.get(c, 0.0)) for c in inputs))


def depends(nid: int, inputs: tuple[int, ...], u: dict[int, float], dp: array,
            dm: array, span: float = 2 * H) -> bool:
    """Does the op's value move at all when its inputs move?"""
    rate = (dp[nid] - dm[nid]) / span - u.get(nid, 0.0)
    moves = [abs(dp[c] - dm[c]) / span for c in inputs]
    return not all(math.isfinite(x) for x in moves) or abs(rate) > ATOL + RTOL * max(moves)


def local_ok(nid: int, inputs: tuple[int, ...], g: float, contrib: dict[int, float],
             u: dict[int, float], base: array, dp: array, dm: array,
             span: float = 2 * H) -> tuple[bool, bool]:
    """Does `g * dN == sum_k contrib_k * dc_k` hold, centrally or (at a kink) on one side?
    Returns (ok, only one-sided)."""
    own = u.get(nid, 0.0)
    sides = (
        (dp, dm, span),  # central (or, with no run nudged down, forward)
        (dp, base, H),   # forward
        (base, dm, H),   # backward
    ) if dm is not base else ((dp, base, H),)
    for k, (hi, lo, step) in enumerate(sides):
        shift = own * step
        lhs = g * (hi[nid] - lo[nid] - shift) / step
        terms = [contrib.get(c, 0.0) * (hi[c] - lo[c]) / step for c in inputs]
        rhs = sum(terms)
        scale = max(abs(lhs), sum(abs(x) for x in terms))
        if close(lhs, rhs, scale):
            return True, k > 0
    return False, False
