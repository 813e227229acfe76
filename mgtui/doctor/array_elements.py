"""A faulty `_backward` call on arrays, found by the array check (`array_check`): which
input's contribution is off (each input nudged alone, a pair of runs each, side by
side), then that input's first element off, in C order (element 0 alone, then halves of
the rest nudged along the pattern, down to one element: `first_wrong_element`), its
numbers, and where the wrong value was made (`where_made`: a traced replay of the call,
`array_runs.origin_line`, or the one line of the closure that wrote that element).
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from mgtui.doctor.array_calls import (ArrayPlan, Call, NotWhole, as_numpy, balanced,
                                      snaps_of)
from mgtui.doctor.array_runs import array_args
from mgtui.doctor.arrays import element_index, element_text, sample_elements
from mgtui.doctor.context import CheckContext
from mgtui.doctor.findings import Finding
from mgtui.doctor.nudged import close
from mgtui.doctor.reruns import Reruns
from mgtui.trace import Field, Trace

H_SINGLE = 1e-6  # one input, or one element, nudged alone
MAX_INPUTS = 8


class FaultyCall:
    """The finding of each suspect call of the array check (`finding_of`), from runs with
    one input, or some of its elements, nudged alone, while the time budget lasts
    (`started` + `budget` seconds). `calls` and `base` are the run as recorded
    (`array_calls.Call`s by call number, and its copies of node data by call)."""

    def __init__(self, trace: Trace, ctx: CheckContext, reruns: Reruns,
                 calls: dict[int, Call], base: dict[int, dict[int, np.ndarray]],
                 progress: Callable[[int, int, str], None], started: float,
                 budget: float) -> None:
        self.trace, self.ctx, self.reruns = trace, ctx, reruns
        self.calls, self.base = calls, base
        self.progress, self.started, self.budget = progress, started, budget
        self.origins: dict[tuple[int, int], list | None] = {}  # (call, input) -> origin_line's

    def in_time(self) -> bool:
        return time.perf_counter() - self.started <= self.budget

    def finding_of(self, plan: ArrayPlan, s: Call) -> Finding | None:
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
        while hi - lo > 1 and self.in_time():
            mid = (lo + hi) // 2
            self.progress(lo, size, "checking elements")
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
            if not self.in_time():
                break
            self.progress(n, len(elements), "checking elements")
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

def where_made(check: FaultyCall, plan: ArrayPlan, s: Call, c: int, measured: dict | None,
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

