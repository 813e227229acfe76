"""The numerical check on arrays (a tensor engine): `numerical.NumericalCheck` hands its
passes over to `ArrayCheck` when the probe saw array values. The re-runs read their
arrays live, through hooks of their own (`mgtui.doctor.array_runs`).

- The run as recorded: for each `_backward` call of the checked passes, the node's grad
  and what the call added to each input's grad, and the checked graph's data and grads
  as its pass starts. The trace holds all of it (`array_calls.trace_values`) where it keeps the
  arrays whole; else (a big array), or if the recording drew other random numbers than
  the re-runs, a re-run reads it, replaying each call from zeroed input grads.
- One run with every leaf of the checked graphs nudged by +h along a seeded random
  direction, element by element (`arrays.pattern`), copying the data of each checked
  graph as its backward pass starts (a leaf that moved by more than its nudge: the runs
  differ, and the check says so rather than guess).
- Each call `N = op(c_1..c_k)` must agree with how its node moved:
  `sum(N.grad * dN) == sum_k sum(contribution_k * dc_k)`, summed over the elements,
  one-sided. A call that does not is a suspect.
- For a suspect's first call: each input nudged alone along its direction (a pair of
  runs each, all side by side) tells, centrally or at a kink on one side, which input's
  contribution is off (none: it sat at a kink, and is right); then that input's first
  element off, in C order: element 0 alone, then halves of the rest nudged along the
  pattern, down to one element (`first_wrong_element`). Its numerical contribution is
  `(sum(N.grad * dN) - the other elements' terms) / dc_j`. This part is
  `array_elements.FaultyCall`, an object the check holds.
- The run of element 0 also replays the call under a line tracer to find the line
  that made the wrong value, and, once an element is found off, a second traced run
  may try the values that line read against what was measured (`array_runs.origin_line`,
  `mgtui.doctor.origins`): `unbroadcast`'s `mean`, not the line calling it; a
  `Function.backward`'s `return`, not the closure adding what it returned; and, from
  what was measured of the right value (the element, the elements found right, the sum
  along the input's nudge), an earlier number it was computed from that, changed
  alone, makes it right (`Mean`'s count `n`, not the `return` dividing by it).

numpy is imported here (and in `array_calls`, `array_elements`), and only this module
is imported once arrays have shown up.
"""

from __future__ import annotations

import random
import time
from typing import Callable

import numpy as np

from mgtui.doctor.array_calls import (ArrayPlan, Call, balanced, calls_of, snaps_of,
                                      trace_values)
from mgtui.doctor.array_elements import FaultyCall
from mgtui.doctor.array_runs import array_args
from mgtui.doctor.arrays import FEW, SMALL
from mgtui.doctor.context import CheckContext
from mgtui.doctor.findings import Finding
from mgtui.doctor.reruns import Reruns
from mgtui.doctor.tally import Tally
from mgtui.trace import EventKind, Pass, Trace

H = 1e-7  # the directional runs' nudge, relative to an array's largest element
SAMPLED_PASSES = 4  # by default, the first, the last and evenly spaced ones between


class ArrayCheck:
    """The array half of a `NumericalCheck`: its counts and notes go in the check's
    `tally`; `budget` seconds (`sampled`: the passes were not asked for). A suspect
    call's finding is worked out by `faulty` (`FaultyCall`), made once the run as
    recorded is read."""

    def __init__(self, trace: Trace, ctx: CheckContext, reruns: Reruns, tally: Tally,
                 progress: Callable[[int, int, str], None], budget: float,
                 sampled: bool) -> None:
        self.trace, self.ctx, self.reruns, self.tally = trace, ctx, reruns, tally
        self.progress, self.budget, self.sampled = progress, budget, sampled
        self.plans: list[ArrayPlan] = []
        self.direction: dict[int, float] = {}
        self.pending: list = []
        self.started = time.perf_counter()
        self.wrong_closures: set[int] = set()  # closures with a finding

    # -- the runs --------------------------------------------------------------------------
    def begin(self, passes: list[Pass]) -> None:
        """Plan the passes and start the run as recorded and the run nudged up."""
        t = self.trace
        rng = random.Random(self.reruns.seed)
        if self.sampled and len(passes) > SAMPLED_PASSES:
            keep = {round(k * (len(passes) - 1) / (SAMPLED_PASSES - 1))
                    for k in range(SAMPLED_PASSES)}
            self.tally.notes.append(
                f"{len(passes) - len(keep)} backward pass(es) between the first and the last "
                f"were left out: on arrays {SAMPLED_PASSES} passes are sampled, evenly "
                f"(--passes all checks every one)")
            passes = [p for k, p in enumerate(passes) if k in keep]
        for p in passes:
            first, root = t.first_backward(p), t.backward_root(p)
            assert first is not None and root is not None
            nodes = t.ancestors(root)
            leaves = [n for n in nodes  # (a constant, integer or not requiring grad, stays)
                      if t.is_leaf(n) and n not in self.ctx.arrays.constants]
            stop_after = len(t.events_of(EventKind.BACKWARD, 0, first))
            self.plans.append(ArrayPlan(p, first, stop_after, root, nodes, leaves,
                                        t.backward_calls(p)))
            for n in leaves:
                self.direction.setdefault(n, rng.choice((-1.0, 1.0)) * rng.uniform(0.5, 1.5))
        if not self.plans:
            return
        snaps = {plan.stop_after: plan.nodes for plan in self.plans}
        self.from_trace = trace_values(self.trace, self.ctx, self.plans)
        runs = [self.nudged_args(1, snaps)]
        if self.from_trace is None:  # a value the trace did not keep whole: read it live
            runs.insert(0, self.base_args())
        self.pending = self.reruns.start_jobs(runs)

    def base_args(self) -> dict:
        """The run as recorded, which reads every call of the checked passes."""
        last = self.plans[-1]
        return array_args({}, {}, last.stop_after + len(last.calls),
                          {plan.stop_after: plan.nodes for plan in self.plans},
                          [(p.stop_after, p.stop_after + len(p.calls)) for p in self.plans],
                          grads=True, seed=self.reruns.seed)

    def nudged_args(self, sign: int, snaps: dict) -> dict:
        return array_args({n: sign * H * v for n, v in self.direction.items()}, {},
                          self.plans[-1].stop_after, snaps, seed=self.reruns.seed)

    def run(self, earlier: list[Finding]) -> list[Finding]:
        if not self.plans:
            return earlier
        *base, plus = self.reruns.wait_jobs(self.pending)
        self.pending = []
        if not isinstance(plus, dict) or not self.read_base(base[0] if base else None):
            self.tally.notes.append("the re-runs of the array check did not report: no "
                                    "gradient was checked numerically")
            return earlier
        self.plus = snaps_of(plus)
        if self.unsteady() and self.from_trace is not None:
            # the recording drew other random numbers than the re-runs (numpy's global
            # state is seeded in a re-run only): the run as recorded, re-run
            (again,) = self.reruns.wait_jobs(self.reruns.start_jobs([self.base_args()]))
            self.from_trace = None
            if not self.read_base(again):
                return earlier
        if self.unsteady():
            self.tally.notes.append(
                "the arrays differ from one run of the scenario to the next by more than "
                "the doctor's nudges (numbers drawn at random with no seed?), so no "
                "gradient was checked numerically")
            return earlier
        self.faulty = FaultyCall(self.trace, self.ctx, self.reruns, self.calls, self.base,
                                 self.progress, self.started, self.budget)
        found = list(earlier)
        unread = 0
        for plan in self.plans:
            self.tally.checked.append(plan.pass_)
            self.tally.checked_nodes += len(plan.nodes)
            suspects, skipped = self.suspects(plan)
            unread += skipped
            found += self.localise(plan, suspects)
            if not suspects and plan.pass_.index not in self.ctx.explained_passes:
                found += self.tally.wrong_in.first_of(self.left_out(plan), plan.pass_)
        found = self.tally.wrong_in.named(found)
        self.tally.notes.append(
            f"on arrays each _backward call was checked along a random direction over all "
            f"the elements; of an input found off, the first element off in order was "
            f"found by halving (element 0, then halves of the rest), else among {FEW} "
            f"elements checked one by one (all of an input of up to {SMALL})")
        if unread:
            self.tally.notes.append(f"{unread} _backward call(s) on arrays could not be "
                                    f"checked numerically (their values were not read)")
            self.tally.uncovered.append(f"{unread} _backward call(s) on arrays could not be "
                                        f"checked numerically")
        return found

    def read_base(self, run: object) -> bool:
        """The calls and copies as recorded: from the trace, else from `run` (the run as
        recorded, re-run); False if that did not report."""
        if self.from_trace is not None and run is None:
            self.calls, self.base = self.from_trace
            return True
        if not isinstance(run, dict):
            return False
        self.calls, self.base = calls_of(run), snaps_of(run)
        return True

    def unsteady(self) -> bool:
        """Did a leaf of the first checked graph move between the run as recorded and
        the run nudged up by more than its nudge (at most 1.5 H its size)?"""
        k = self.plans[0].stop_after
        base, up = self.base.get(k, {}), self.plus.get(k, {})
        for n in self.plans[0].leaves:
            if n in base and n in up and base[n].shape == up[n].shape and base[n].size:
                size = max(1.0, float(np.max(np.abs(base[n]), initial=0.0,
                                             where=np.isfinite(base[n]))))
                with np.errstate(invalid="ignore"):
                    moved = np.abs(up[n] - base[n])
                if np.any(moved[np.isfinite(moved)] > 20 * H * size):
                    return True
        return False

    # -- each call -------------------------------------------------------------------------
    def suspects(self, plan: ArrayPlan) -> tuple[list[Call], int]:
        """The calls of `plan`'s pass that do not match how their node moved in the run
        nudged up (one-sided: a suspect is checked again centrally, input by input), and
        how many calls could not be read."""
        base = self.base.get(plan.stop_after, {})
        up = self.plus.get(plan.stop_after, {})
        out, skipped = [], 0
        for k, event in enumerate(plan.calls, plan.stop_after):
            if event in self.ctx.explained or not self.ctx.inputs(self.trace.event_node(event)):
                continue  # explained already, or a leaf's no-op `_backward`
            call = self.calls.get(k)
            if call is None or call.node != self.trace.event_node(event):
                skipped += 1
                continue
            call.event = event
            inputs = [c for c in self.ctx.inputs(call.node) if c in call.contrib]
            if not inputs or any(n not in base or n not in up for n in (call.node, *inputs)):
                skipped += 1
                continue
            if any(call.contrib[c].shape != base[c].shape for c in inputs):
                continue  # a grad of the wrong shape: `check_grad_shape` says so
            self.tally.checked_calls += 1
            if not balanced(call, inputs, up, base, H):
                out.append(call)
        return out, skipped

    def left_out(self, plan: ArrayPlan) -> list[Finding]:
        """An op node of the checked graph that was handed a grad (not all zeros) in its
        pass but whose `_backward` never ran there: the topological order left it out,
        and nothing reached its inputs. (The scalar check finds it through the root's
        directional derivative.)"""
        t, ctx = self.trace, self.ctx
        ran = {t.event_node(e) for e in plan.calls}
        if not ran.issubset(plan.nodes):
            return []  # the pass goes on into another root's graph
        graph = set(plan.nodes)
        skipped = []
        for k in range(plan.stop_after, plan.stop_after + len(plan.calls)):
            call = self.calls.get(k)
            for c, g in (call.contrib.items() if call is not None else ()):
                if (c in graph and c not in ran and c not in skipped and not t.is_leaf(c)
                        and np.any(g != 0)):
                    skipped.append(c)
        if not skipped:
            return []
        nid = skipped[-1]
        more = f" ({len(skipped) - 1} more node(s) like it)" if len(skipped) > 1 else ""
        return [ctx.finding(
            "topo-order", nid, plan.first, ctx.order_where(plan.first),
            f"{ctx.op_text(nid)} is in the graph of {ctx.node_text(plan.root)} and was "
            f"handed a grad, but its _backward never ran in this pass: the topological "
            f"order leaves it out{more}, and no gradient reached {ctx.labels(ctx.inputs(nid))}")]

    # -- a faulty call's input and element -------------------------------------------------------
    def localise(self, plan: ArrayPlan, suspects: list[Call]) -> list[Finding]:
        t = self.trace
        found, seen = [], set()
        for s in suspects:
            closure = t.closure_index(s.event)
            if closure in seen:
                continue
            seen.add(closure)
            if closure in self.wrong_closures:  # found in an earlier pass: noted only
                self.tally.wrong_in.first_time("wrong-derivative", closure, plan.pass_)
                continue
            finding = self.faulty.finding_of(plan, s)
            if finding is None:  # every input right nudged alone: the call sat at a kink
                self.tally.kinks += 1
            else:
                self.wrong_closures.add(closure)
                self.tally.wrong_in.first_time("wrong-derivative", closure, plan.pass_)
                found.append(finding)
        return self.tally.wrong_in.own(found)
