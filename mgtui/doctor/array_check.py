"""The numerical check on arrays (a tensor engine): `numerical.NumericalCheck` hands its
passes over to `ArrayCheck` when the probe saw array values. The re-runs read their
arrays live, through hooks of their own (`mgtui.doctor.array_runs`).

- The run as recorded: for each `_backward` call of the checked passes, the node's grad
  and what the call added to each input's grad, and the checked graph's data and grads
  as its pass starts. The trace holds all of it (`trace_values`) where it keeps the
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
  `(sum(N.grad * dN) - the other elements' terms) / dc_j`.
- The run of element 0 also replays the call under a line tracer to find the line
  that made the wrong value, and, once an element is found off, a second traced run
  may try the values that line read against what was measured (`array_runs.origin_line`,
  `mgtui.doctor.origins`): `unbroadcast`'s `mean`, not the line calling it; a
  `Function.backward`'s `return`, not the closure adding what it returned; and, from
  what was measured of the right value (the element, the elements found right, the sum
  along the input's nudge), an earlier number it was computed from that, changed
  alone, makes it right (`Mean`'s count `n`, not the `return` dividing by it).

numpy is imported here, and only this module is imported once arrays have shown up.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass

import numpy as np

from mgtui.doctor.array_runs import array_args
from mgtui.doctor.arrays import (FEW, SMALL, decode, element_index, element_text,
                                 sample_elements)
from mgtui.doctor.findings import Finding
from mgtui.trace import EventKind, Field, Pass

ATOL, RTOL = 1e-5, 1e-3  # gradcheck's (as `numerical`)
H = 1e-7  # the directional runs' nudge, relative to an array's largest element
H_SINGLE = 1e-6  # one input, or one element, nudged alone
MAX_INPUTS = 8
SAMPLED_PASSES = 4  # by default, the first, the last and evenly spaced ones between


def close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= ATOL + RTOL * scale


@dataclass
class ArrayPlan:
    """One backward pass to check: its calls, the call count before it, its graph."""

    pass_: Pass
    first: int
    stop_after: int
    root: int
    nodes: list[int]
    leaves: list[int]
    calls: list[int]  # its `_backward` events


@dataclass
class Call:
    """One `_backward` call as the run as recorded read it."""

    event: int
    node: int
    grad: np.ndarray
    contrib: dict[int, np.ndarray]


class ArrayCheck:
    """The array half of a `NumericalCheck` (`check`): its counts and notes are kept there."""

    def __init__(self, check) -> None:
        self.check = check
        self.trace, self.ctx, self.reruns = check.trace, check.ctx, check.reruns
        self.plans: list[ArrayPlan] = []
        self.direction: dict[int, float] = {}
        self.pending: list = []
        self.started = time.perf_counter()
        self.wrong_closures: set[int] = set()  # closures with a finding
        self.origins: dict[tuple[int, int], list | None] = {}  # (call, input) -> origin_line's

    # -- the runs --------------------------------------------------------------------------
    def begin(self, passes: list[Pass]) -> None:
        """Plan the passes and start the run as recorded and the run nudged up."""
        t = self.trace
        rng = random.Random(self.reruns.seed)
        if self.check.sampled and len(passes) > SAMPLED_PASSES:
            keep = {round(k * (len(passes) - 1) / (SAMPLED_PASSES - 1))
                    for k in range(SAMPLED_PASSES)}
            self.check.notes.append(
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
            self.check.notes.append("the re-runs of the array check did not report: no "
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
            self.check.notes.append(
                "the arrays differ from one run of the scenario to the next by more than "
                "the doctor's nudges (numbers drawn at random with no seed?), so no "
                "gradient was checked numerically")
            return earlier
        found = list(earlier)
        unread = 0
        for plan in self.plans:
            self.check.checked.append(plan.pass_)
            self.check.checked_nodes += len(plan.nodes)
            suspects, skipped = self.suspects(plan)
            unread += skipped
            found += self.localise(plan, suspects)
            if not suspects and plan.pass_.index not in self.ctx.explained_passes:
                found += self.check.wrong_in.first_of(self.left_out(plan), plan.pass_)
        found = self.check.wrong_in.named(found)
        self.check.notes.append(
            f"on arrays each _backward call was checked along a random direction over all "
            f"the elements; of an input found off, the first element off in order was "
            f"found by halving (element 0, then halves of the rest), else among {FEW} "
            f"elements checked one by one (all of an input of up to {SMALL})")
        if unread:
            self.check.notes.append(f"{unread} _backward call(s) on arrays could not be "
                                    f"checked numerically (their values were not read)")
            self.check.uncovered.append(f"{unread} _backward call(s) on arrays could not be "
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
            self.check.checked_calls += 1
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
                self.check.wrong_in.first_time("wrong-derivative", closure, plan.pass_)
                continue
            finding = self.wrong_element(plan, s)
            if finding is not None:
                self.wrong_closures.add(closure)
                self.check.wrong_in.first_time("wrong-derivative", closure, plan.pass_)
                found.append(finding)
        return self.check.wrong_in.own(found)

    def wrong_element(self, plan: ArrayPlan, s: Call) -> Finding | None:
        """The finding for a suspect call: its first input whose contribution is off
        (each nudged alone, side by side), then that input's first element that is off
        (`first_wrong_element`, within the time budget). None if every input is
        right nudged alone, centrally or on either side (the suspect sat at a kink)."""
        t, ctx = self.trace, self.ctx
        inputs = [c for c in ctx.inputs(s.node)
                  if c in s.contrib and c not in ctx.arrays.constants][:MAX_INPUTS]
        k = plan.stop_after
        snap = {k: [s.node, *inputs, plan.root]}
        base = self.base.get(k, {})
        runs = self.runs([({c: H_SINGLE}, {}) for c in inputs], k, snap)
        wrong = [(c, up, down) for c, (up, down) in zip(inputs, runs)
                 if up is not None and not self.input_ok(s, inputs, up, down, base)]
        if not wrong:
            self.check.kinks += 1
            return None
        unchecked = []
        for c, c_up, c_down in wrong:
            right: dict[int, float] = {}
            first = self.first_wrong_element(plan, s, inputs, c, snap, right)
            if first is not None:
                j, numbers = first
                measured = measured_of(s, inputs, c, j, numbers[0], right, c_up, c_down)
                return self.finding(plan, s, c, j, numbers, measured, right)
            unchecked.append(c)
        wrong = [c for c, _, _ in wrong]
        closure = t.closure_of(s.event)
        return ctx.finding(
            "wrong-derivative", s.node, s.event,
            ctx.closure_where(s.event, closure.first_line if closure else None),
            f"the _backward of {ctx.op_text(s.node)} does not match how {t.label(s.node)} "
            f"changes with {ctx.labels(wrong)}, and none of the elements of "
            f"{ctx.labels(unchecked)} checked one by one within the time budget shows it")

    def first_wrong_element(self, plan: ArrayPlan, s: Call, inputs: list[int], c: int,
                            snap: dict, right: dict[int, float]
                            ) -> tuple[int, tuple[float, float, float | None]] | None:
        """Input `c`'s first element (in C order) whose contribution is off, and its
        numbers: element 0 alone, then halves of the rest, each nudged along the
        input's pattern (a pair of runs each: 1 + log2(size) pairs); a half that
        balances holds no wrong element, unless errors in it cancel along a random
        direction. If that does not end on an element found off, the elements
        `sample_elements` picks, one by one, within the time budget. `right` gets the
        elements found right."""
        k = plan.stop_after
        base = self.base.get(k, {})
        size = s.contrib[c].size
        flat = s.contrib[c].reshape(-1)

        def element(j: int):
            ((up, down),) = self.runs([({c: H_SINGLE}, {c: j})], k, snap,
                                      origin=(plan.calls.index(s.event) + k, c))
            if up is None:
                return None
            numbers = self.element_numbers(plan, s, inputs, c, j, up, down)
            if numbers is None:
                right[j] = float(flat[j])
            return numbers

        numbers = element(0)
        if numbers is not None:
            return 0, numbers
        lo, hi = 1, size
        while hi - lo > 1 and time.perf_counter() - self.started <= self.check.budget:
            mid = (lo + hi) // 2
            self.check.progress(lo, size, "checking elements")
            ((up, down),) = self.runs([({c: H_SINGLE}, {c: (lo, mid)})], k, snap)
            if up is None:
                break
            lo, hi = (mid, hi) if self.input_ok(s, inputs, up, down, base) else (lo, mid)
        if hi - lo == 1 and lo < size and lo not in right:
            numbers = element(lo)
            if numbers is not None:
                return lo, numbers
        elements = [j for j in sample_elements(size, self.reruns.seed + c) if j not in right]
        for n, j in enumerate(elements):
            if time.perf_counter() - self.started > self.check.budget:
                break
            self.check.progress(n, len(elements), "checking elements")
            numbers = element(j)
            if numbers is not None:
                return j, numbers
        return None

    def runs(self, nudges: list[tuple[dict[int, float], dict[int, int]]], stop: int,
             snap: dict, origin: tuple[int, int] | None = None
             ) -> list[tuple[dict | None, dict | None]]:
        """A pair of runs (nudged up and down) for each (nudge, element), all side by
        side: their copies at call `stop` (None where a run did not report). The first
        run up also looks for the line that made the value `origin` names (once)."""
        args = [array_args({n: sign * v for n, v in nudge.items()}, element, stop, snap,
                           seed=self.reruns.seed) for nudge, element in nudges for sign in (1, -1)]
        if origin is not None and origin not in self.origins:  # (that run goes on to the call)
            self.origins[origin] = None
            args[0].update(stop_after=max(stop, origin[0]), origin=list(origin))
        results = self.reruns.wait_jobs(self.reruns.start_jobs(args))
        if origin is not None and isinstance(results[0], dict) and results[0].get("origin"):
            self.origins[origin] = results[0]["origin"]
        out = []
        for up, down in zip(results[::2], results[1::2]):
            a = snaps_of(up).get(stop) if isinstance(up, dict) else None
            b = snaps_of(down).get(stop) if isinstance(down, dict) else None
            out.append((a, b) if a and b else (None, None))
        return out

    def trace_origin(self, call: int, c: int, measured: dict | None) -> list | None:
        """One run, as recorded, that replays call `call` under a line tracer: where the
        value it added to input `c`'s grad was made, and the number before it that,
        changed alone, makes it right (`array_runs.origin_line`); None if not found."""
        args = array_args({}, {}, call, {}, origin=(call, c, measured), seed=self.reruns.seed)
        (result,) = self.reruns.wait_jobs(self.reruns.start_jobs([args]))
        return result.get("origin") if isinstance(result, dict) else None

    def input_ok(self, s: Call, inputs: list[int], up: dict, down: dict, base: dict) -> bool:
        """Does the call balance with one input nudged alone: centrally, or (at a kink)
        on one side?"""
        if not all(n in up and n in down for n in (s.node, *inputs)):
            return True  # not read: not a finding
        sides = [(up, down, 2 * H_SINGLE)]
        if all(n in base for n in (s.node, *inputs)):
            sides += [(up, base, H_SINGLE), (base, down, H_SINGLE)]
        return any(balanced(s, inputs, hi, lo, step) for hi, lo, step in sides)

    def element_numbers(self, plan: ArrayPlan, s: Call, inputs: list[int], c: int, j: int,
                        up: dict, down: dict) -> tuple[float, float, float | None] | None:
        """(numerical contribution to c[j], what the call added, numerical d root / d c[j])
        if element `j` of input `c` is off; None if it is right."""
        dc = (up[c] - down[c]).reshape(-1)
        if not dc[j] or not math.isfinite(dc[j]):
            return None
        lhs = float(np.sum(s.grad * (up[s.node] - down[s.node])))
        others = sum(float(np.sum(s.contrib[k] * (up[k] - down[k]))) for k in inputs)
        applied = float(s.contrib[c].reshape(-1)[j])
        others -= applied * dc[j]
        expected = (lhs - others) / dc[j]
        if close(applied, expected, max(abs(applied), abs(expected))):
            return None
        alone = all(not np.any(up[k] != down[k]) for k in inputs if k != c) and np.count_nonzero(dc) == 1
        root = (float(np.sum(up[plan.root] - down[plan.root])) / dc[j]
                if alone and plan.root in up else None)
        return expected, applied, root

    def finding(self, plan: ArrayPlan, s: Call, c: int, j: int,
                numbers: tuple[float, float, float | None], measured: dict | None,
                right: dict[int, float]) -> Finding:
        t, ctx = self.trace, self.ctx
        expected, applied, root = numbers
        shape = s.contrib[c].shape
        at = element_text(shape, j)
        name, out = t.label(c), t.label(s.node)
        recorded = self.recorded_grad(plan, c, j)
        grads = (f"{name}.grad{at}: numerical {root:.6g}, recorded {recorded:.6g}. "
                 if root is not None and recorded is not None else "")
        where, why = where_made(self, plan, s, c, measured, j, right)
        return ctx.finding(
            "wrong-derivative", s.node, s.event, where,
            f"{grads}The _backward of {ctx.op_text(s.node)} added {applied:.6g} to "
            f"{name}.grad{at} (of shape {shape}); nudging {name}{at} alone moves {out} "
            f"(shape {tuple(s.grad.shape)}) so that, times {out}.grad, it should have added "
            f"{expected:.6g}.{why}{ctx.late_text(s.event)}", numerical=root, recorded=recorded, input=c,
            local=expected, element=element_index(shape, j))

    def recorded_grad(self, plan: ArrayPlan, c: int, j: int) -> float | None:
        """Input `c`'s grad element `j` at the end of the pass, as the calls added it."""
        snap = self.base.get(plan.stop_after, {})
        start, data = snap.get(-c - 1), snap.get(c)
        if start is None or data is None:
            return None
        try:  # (a grad that starts as the number 0 and becomes an array)
            total = np.broadcast_to(start, data.shape).reshape(-1)[j]
        except ValueError:
            return None
        for k in range(plan.stop_after, plan.stop_after + len(plan.calls)):
            call = self.calls.get(k)
            if call is not None and c in call.contrib and call.contrib[c].shape == data.shape:
                total = total + call.contrib[c].reshape(-1)[j]
        return float(total)

def where_made(check: ArrayCheck, plan: ArrayPlan, s: Call, c: int, measured: dict | None,
               j: int, right: dict[int, float]):
    """Where the wrong value was made (`mgtui.doctor.origins`), and a sentence saying
    how that was told: the line a traced replay found the value made on, or the
    earlier number it was computed from that, changed alone, makes it right; else
    the closure's line that writes the input's grad."""
    ctx = check.ctx
    call = plan.calls.index(s.event) + plan.stop_after
    found = check.origins.get((call, c))
    if found and len(found) > 3 and found[3] and measured is not None:
        found = check.trace_origin(call, c, measured) or found  # (it reads suspects)
    if not found:
        line, why = writing_line(check.trace, s.event, c, j, right)
        return ctx.closure_where(s.event, line or ctx.grad_write_line(s.event, c)), why
    file, line = str(found[0]), int(found[1])
    culprit = found[2] if len(found) > 2 else None
    if not culprit:  # (the line a traced replay of the call found it made on)
        return ctx.where_in(file, line), ""
    others = culprit.get("others") or []
    also = (" The same holds of " + ", ".join(f"{n} (line {k})" for n, k in others)
            + " changed alone: the numbers measured cannot tell them apart, and the "
            "first computed is named.") if others else ""
    name, was, should = culprit["name"], culprit["was"], culprit["should"]
    change = (f"{name} = {should:.6g} instead of {was:.6g}" if was is not None
              else f"{name} scaled by {should:.6g}")
    return ctx.where_in(file, int(culprit["line"])), (
        f" The value was made at line {line} from {name}, computed at line "
        f"{culprit['line']}; with {change} and nothing else changed, it agrees with "
        f"every number measured of the right one.{also}")


def writing_line(t, event: int, c: int, j: int, right: dict[int, float]
                 ) -> tuple[int | None, str]:
    """Of the writes call `event` made to input `c`'s grad, where there are several (`g
    += probs * d; g[rows, labels] -= d`): the one line that changed element `j`, found
    off, and none of the elements found right (`right`), with a sentence saying so;
    (None, "") if no single line is told apart that way (or the trace does not hold
    the writes' arrays whole)."""
    writes = [w for w in t.writes(event) if w.node == c and w.field is Field.GRAD]
    if len({w.line for w in writes}) < 2 or not right:
        return None, ""
    touched: dict[int, set[int]] = {}  # line -> the flat elements it changed
    try:
        for w in writes:
            before, after = map(as_numpy, t.values.write_value(w.index, w.before, w.after))
            with np.errstate(all="ignore"):
                changed = np.broadcast_to(after - before, np.shape(after)).reshape(-1) != 0
            touched.setdefault(w.line, set()).update(np.flatnonzero(changed).tolist())
    except (NotWhole, ValueError):
        return None, ""
    lines = [line for line, at in touched.items() if j in at and not at & set(right)]
    if len(lines) != 1:
        return None, ""
    shown = [line for line, at in touched.items() if at & set(right)]
    return lines[0], (f" Of the lines that write it, line {lines[0]} is the one that wrote "
                      f"this element and none of those found right"
                      + (f" (line {', '.join(map(str, shown))} wrote those)." if shown else "."))


def measured_of(s: Call, inputs: list[int], c: int, j: int, expected: float,
                right: dict[int, float], up: dict, down: dict) -> dict | None:
    """What the numerical check measured of the right contribution to input `c` (as
    `origins.Target`, in JSON): its element `j`, the elements found right, and its sum
    along `c`'s nudge in the runs that nudged `c` alone."""
    from mgtui.doctor.arrays import encode

    if not all(n in up and n in down for n in (s.node, *inputs)):
        return None
    with np.errstate(all="ignore"):
        dc = up[c] - down[c]
        total = float(np.sum(s.grad * (up[s.node] - down[s.node]))) - sum(
            float(np.sum(s.contrib[k] * (up[k] - down[k]))) for k in inputs if k != c)
    if not math.isfinite(total):
        return None
    return {"j": j, "expected": expected, "right": {str(k): v for k, v in right.items()},
            "dc": encode(dc), "total": total}


def trace_values(t, ctx, plans: list[ArrayPlan]
                 ) -> tuple[dict[int, Call], dict[int, dict[int, np.ndarray]]] | None:
    """What the run as recorded reads (`calls_of`, `snaps_of`), from the trace itself,
    which holds every array up to `mgtui.trace.arrays.WHOLE_LIMIT` elements whole: each
    call's node grad and its writes to its inputs' grads (after less before), and the
    data and grad of each checked graph's nodes as its pass starts. None if a value
    needed is not held whole."""
    calls: dict[int, Call] = {}
    snaps: dict[int, dict[int, np.ndarray]] = {}
    state: dict[int, tuple] = {}

    def value(nid: int, grad: bool, position: int) -> np.ndarray:
        if position not in state:
            state[position] = t.replay.state_at(position)
        v = t.values.value_at(nid, grad, position, state[position][int(grad)][nid])
        return as_numpy(v)

    try:
        for plan in plans:
            snap = snaps[plan.stop_after] = {}
            for n in plan.nodes:
                snap[n] = value(n, False, plan.first)
                snap[-n - 1] = value(n, True, plan.first)
            for k, event in enumerate(plan.calls, plan.stop_after):
                nid = t.event_node(event)
                contrib = {c: np.zeros_like(snap[c]) if c in snap else 0.0
                           for c in ctx.inputs(nid)}
                for w in t.writes(event):
                    if w.node in contrib and w.field is Field.GRAD:
                        before, after = map(as_numpy, t.values.write_value(w.index, w.before, w.after))
                        contrib[w.node] = contrib[w.node] + (after - before)
                calls[k] = Call(event, nid, value(nid, True, event),
                                {c: np.asarray(g, dtype=np.float64) for c, g in contrib.items()})
    except NotWhole:
        return None
    return calls, snaps


class NotWhole(Exception):
    """A value the trace keeps only as a summary (a big array)."""


def as_numpy(v) -> np.ndarray:
    """A trace's value (a float, or an `ArrayValue` kept whole) as a float64 array."""
    if isinstance(v, float):
        return np.array(v)
    if not getattr(v, "whole", False):
        raise NotWhole
    return np.array(v.values, dtype=np.float64).reshape(v.shape)


def balanced(call: Call, inputs: list[int], hi: dict, lo: dict, step: float) -> bool:
    """Does `sum(g * dN) == sum_k sum(contribution_k * dc_k)` hold between two runs?"""
    with np.errstate(all="ignore"):
        lhs = float(np.sum(call.grad * (hi[call.node] - lo[call.node]))) / step
        terms = [float(np.sum(call.contrib[c] * (hi[c] - lo[c]))) / step for c in inputs]
    if not all(math.isfinite(x) for x in (lhs, *terms)):
        return True  # not a number to compare: the non-finite check's business
    scale = max(abs(lhs), sum(abs(x) for x in terms))
    return close(lhs, sum(terms), scale)


def snaps_of(result: dict) -> dict[int, dict[int, np.ndarray]]:
    """A run's copies of node data by call: {call: {node: data}}; a grad copied too is
    kept under `-node - 1`."""
    out: dict[int, dict[int, np.ndarray]] = {}
    for k, snap in (result.get("snaps") or {}).items():
        row = out[int(k)] = {}
        for n, values in snap.items():
            row[int(n)] = decode(values["d"])
            if "g" in values:
                row[-int(n) - 1] = decode(values["g"])
    return out


def calls_of(result: dict) -> dict[int, Call]:
    """The calls the run as recorded read, by call number."""
    out = {}
    for k, nid, grad, contrib in result.get("calls") or ():
        out[int(k)] = Call(-1, int(nid), decode(grad),
                           {int(c): decode(g) for c, g in contrib})
    return out
