"""A faulty `_backward`'s numbers, for the finding the numerical check makes of it: each
input of the op nudged alone where it is made (a pair of runs each), the first input
whose contribution is not the op's grad times the local derivative measured, and that
input's numerical gradient against the recorded one.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from typing import Callable

from mgtui.doctor.context import CheckContext
from mgtui.doctor.findings import Finding
from mgtui.doctor.nudged import Plan, Suspect, close
from mgtui.doctor.reruns import Reruns
from mgtui.trace import Trace
from mgtui.trace.explain import misread_nodes, misread_sentences

H_SINGLE = 1e-6  # nudge of the one-input runs that give a finding its numbers
MAX_INPUTS_NUDGED = 8  # inputs of a faulty op nudged one by one for its numbers


class FaultyOp:
    """Works out the finding of each faulty `_backward` call the numerical check found
    (`finding`), re-running the scenario with one input nudged at a time."""

    def __init__(self, trace: Trace, ctx: CheckContext, reruns: Reruns,
                 progress: Callable[[int, int, str], None]) -> None:
        self.trace, self.ctx, self.reruns, self.progress = trace, ctx, reruns, progress

    def finding(self, plan: Plan, s: Suspect, start_grad: array, more: int) -> Finding:
        """The finding for a faulty `_backward`, with the numbers of its first input
        whose contribution is off."""
        t, ctx = self.trace, self.ctx
        inputs = list(ctx.inputs(s.node))[:MAX_INPUTS_NUDGED]
        worst = self.first_wrong_input(plan, s, inputs, start_grad)
        also = (f" The same _backward disagrees at {more} more call{'s' if more > 1 else ''}."
                if more else "")
        also += ctx.late_text(s.event)
        c = worst.input if worst is not None else inputs[0]
        closure = t.closure_of(s.event)
        line = ctx.grad_write_line(s.event, c) or (closure.first_line if closure else None)
        where = ctx.closure_where(s.event, line)
        if t.values_at(s.event):  # a closure that holds another node says why
            data, grad = t.replay.state_at(s.event)
            misread = misread_nodes(t, s.event, data.__getitem__, grad.__getitem__)
            also += "".join(" " + s for s in misread_sentences(t, misread))
        if worst is None:  # no single input shows it (several inputs move together)
            return ctx.finding(
                "wrong-derivative", s.node, s.event, where,
                f"the _backward of {ctx.op_text(s.node)} does not match how "
                f"{t.label(s.node)} changes with its inputs ({ctx.labels(inputs)}).{also}")
        name, out = t.label(c), t.label(s.node)
        grads = (f"{name}.grad: numerical {worst.grad_num:.6g}, recorded {worst.grad_rec:.6g}. "
                 if worst.grad_num is not None else "")
        return ctx.finding(
            "wrong-derivative", s.node, s.event, where,
            f"{grads}The _backward of {ctx.op_text(s.node)} added {worst.applied:.6g} to "
            f"{name}.grad, which is {worst.local_rec:.6g} × {out}.grad ({s.grad:.6g}); "
            f"∂{out}/∂{name} is {worst.local_num:.6g} numerically, so it should have added "
            f"{worst.expected:.6g}.{also}", numerical=worst.grad_num, recorded=worst.grad_rec,
            input=c, local=worst.local_num)

    def first_wrong_input(self, plan: Plan, s: Suspect, inputs: list[int],
                          start_grad: array) -> InputRate | None:
        """Nudge each input of the faulty op alone, where it is made: the first input whose
        contribution is not the op's grad times the local derivative measured.

        In a later pass a nudge made at creation has gone through the updates before it,
        so the op's other inputs (the other parameters) move too. The op's value depends
        on its inputs alone, so its local derivatives are still exact: they solve
        `dN_j = sum_k (dN/dc_k) dc_kj` over the runs `j`, one per input."""
        t = self.trace
        final = t.replay.state_at(plan.pass_.end)[1]
        phase = "working out the numbers"
        moves: list[list[float]] = []  # per run: how each input moved
        node_moves: list[float] = []
        root_moves: list[float] = []
        for n, c in enumerate(inputs):
            step = H_SINGLE * max(1.0, abs(t.node_data[c]))
            self.progress(2 * n, 2 * len(inputs), phase)
            plus, minus = self.reruns.pair(({c: step}, {c: -step}), plan.stop_after,
                                           (None, None))
            self.progress(2 * n + 2, 2 * len(inputs), phase)
            if len(plus) != plan.first or len(minus) != plan.first:
                return None
            dp, dm = plus.replay.final_data, minus.replay.final_data
            moves.append([dp[k] - dm[k] for k in inputs])
            node_moves.append(dp[s.node] - dm[s.node])
            root_moves.append(dp[plan.root] - dm[plan.root])
            alone = all(dc == 0 for k, dc in enumerate(moves[n]) if k != n)
            if alone:  # the common case: only this input moved, no need for more runs
                rate = input_rate(s, c, moves[n][n], node_moves[n], root_moves[n],
                                  final[c] - start_grad[c], True)
                if rate is not None:
                    return rate
        if all(all(dc == 0 for k, dc in enumerate(row) if k != j)
               for j, row in enumerate(moves)):
            return None  # each input alone, and none was off
        local = solve(moves, node_moves)
        for k, c in enumerate(inputs if local is not None else ()):
            rate = input_rate(s, c, moves[k][k], local[k] * moves[k][k], root_moves[k],
                              final[c] - start_grad[c], False)
            if rate is not None:
                return rate
        return None


def input_rate(s: Suspect, c: int, dc: float, dn: float, droot: float, grad_rec: float,
               alone: bool) -> InputRate | None:
    """Input `c`'s numbers if the call's contribution to it is off: `dc` is how far it
    moved, `dn` how far the op moved with it (alone, or that part of the op's move),
    `droot` how far the root moved (a numerical gradient only if `c` moved alone)."""
    if dc == 0 or not math.isfinite(dn / dc):
        return None
    local = dn / dc
    applied = s.contrib.get(c, 0.0)
    expected = s.grad * local
    if close(applied, expected, max(abs(applied), abs(expected))):
        return None
    return InputRate(c, local, applied / s.grad if s.grad else math.nan,
                     droot / dc if alone else None, grad_rec, applied, expected)



def solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """x with `sum_k x_k a[j][k] = b[j]` for every j (Gaussian elimination with partial
    pivoting, on a system as small as an op's inputs); None if it has no single answer."""
    n = len(b)
    rows = [[a[j][k] for k in range(n)] + [b[j]] for j in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        if rows[pivot][col] == 0 or not math.isfinite(rows[pivot][col]):
            return None
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(n):
            if r != col and rows[r][col]:
                f = rows[r][col] / rows[col][col]
                rows[r] = [x - f * y for x, y in zip(rows[r], rows[col])]
    return [rows[k][n] / rows[k][k] for k in range(n)]


@dataclass
class InputRate:
    """How one input of a faulty op should have been credited, and how it was."""

    input: int
    local_num: float  # d op / d input, numerically
    local_rec: float  # what the `_backward` applied, per unit of the op's grad
    grad_num: float | None  # the input's grad, numerically (None: not measured alone)
    grad_rec: float  # the input's grad, recorded (over the pass)
    applied: float  # what the call added to the input's grad
    expected: float  # what it should have added

