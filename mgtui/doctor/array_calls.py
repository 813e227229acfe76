"""What the array check reads of a run: a checked backward pass (`ArrayPlan`), one
`_backward` call as the run as recorded read it (`Call`), read from the trace itself
(`trace_values`) or from a re-run's report (`calls_of`, `snaps_of`), and the balance a
call must keep between two runs (`balanced`). Shared by `array_check` (the passes) and
`array_elements` (a faulty call's input and element).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mgtui.doctor.arrays import decode
from mgtui.doctor.nudged import close
from mgtui.trace import Field, Pass


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
