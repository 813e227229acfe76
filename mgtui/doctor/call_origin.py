"""Where one `_backward` call of a tensor engine made a wrong value, given the right one
(for `mgtui diff`, issue 33): the scenario re-run in a runner child, as the doctor
re-runs it (`reruns.Reruns`, the job `array_runs.array_rerun`), the call replayed
there under a line tracer (`origins.made_at`): the statement after which the value it
added to the input's grad first exists. Told what the right value is (the other side
of the comparison added it), the replay also tries the earlier numbers that statement
reads (`origins.culprits`: a count `n` the returned `grad / n` divides by). Where the
replay names no statement (the value is written into the grad in parts, `g[rows,
labels] -= d`), the one write of the call's (in the trace) that changed the first
wrong element and none of the right ones is named (`array_elements.writing_line`).

Only arrays: a scalar engine's call adds a number, which the replay cannot tell from
any other equal number; for those (and a saved trace, which cannot be re-run) None.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MAX_RIGHT = 256  # the elements found right that a replay is told of (it needs a few)


@dataclass(frozen=True)
class CallOrigin:
    """The statement named (`file`, `line`) and a sentence saying how it was told; or,
    `line` None, the call was replayed and no statement named (`why` says so)."""

    file: str
    line: int | None
    why: str


NOT_NAMED = CallOrigin("", None, "a replay of the call could not tell which statement "
                       "made the value")


def call_origin(path: str | os.PathLike, trace, step: int, node: int, mine: object,
                theirs: object, *, element: tuple[int, ...] | None = None, seed: int = 0,
                max_nodes: int | None = None, timeout: float | None = None
                ) -> CallOrigin | None:
    """The statement where the `_backward` call at event `step` of `trace` (a run of the
    scenario at `path`) made the value it added to node `node`'s grad (`mine`, where
    `theirs` is right; `element`, the first that differs, as the comparison found it,
    else the first found off here); `NOT_NAMED` if the replay names none, None where
    there is no replay (numbers, or a value the trace does not hold whole)."""
    import numpy as np

    from mgtui.doctor.array_calls import NotWhole, as_numpy
    from mgtui.trace import EventKind

    if isinstance(mine, float) or isinstance(theirs, float):
        return None  # (a number: see the module's docstring)
    try:
        mine, theirs = as_numpy(mine), as_numpy(theirs)
    except NotWhole:
        return None
    if mine.shape != theirs.shape or not mine.ndim:
        return None
    wrong = ~np.isclose(mine, theirs, rtol=1e-3, atol=1e-5, equal_nan=True).reshape(-1)
    at = None
    if element is not None and len(element) == mine.ndim and all(
            0 <= i < n for i, n in zip(element, mine.shape)):
        at = int(np.ravel_multi_index(element, mine.shape))
        wrong[at] = True
    if not wrong.any() or not np.isfinite(theirs).all():
        return None
    j = int(np.flatnonzero(wrong)[0]) if at is None else at
    flat = theirs.reshape(-1)
    right = {int(k): float(flat[k]) for k in np.flatnonzero(~wrong)[:MAX_RIGHT]}
    call = len(trace.events_of(EventKind.BACKWARD, 0, step))
    found = _replayed(path, call, node, _measured(j, float(flat[j]), right, theirs),
                      seed, max_nodes, timeout)
    if found is not None:
        return found
    from mgtui.doctor.array_elements import writing_line

    line, why = writing_line(trace, step, node, j, right)
    closure = trace.closure_of(step)
    if line is None or closure is None:
        return NOT_NAMED
    return CallOrigin(closure.filename, line, why.strip())


def _measured(j: int, expected: float, right: dict[int, float], theirs) -> dict:
    """The right value as the numerical check's measurements (`origins.Target`, JSON):
    its element `j`, the elements found right, and its sum along a nudge of every
    element by 1."""
    import numpy as np

    from mgtui.doctor.arrays import encode

    return {"j": j, "expected": expected, "right": {str(k): v for k, v in right.items()},
            "dc": encode(np.ones_like(theirs)), "total": float(np.sum(theirs))}


def _replayed(path, call: int, node: int, measured: dict, seed: int,
              max_nodes: int | None, timeout: float | None) -> CallOrigin | None:
    """One re-run of the scenario, replaying call `call` under a line tracer
    (`array_runs.origin_line`); None if it named no line."""
    from mgtui.defaults import DEFAULT_MAX_NODES
    from mgtui.doctor.array_runs import array_args
    from mgtui.doctor.reruns import Reruns
    from mgtui.recording.scenario import load_scenario

    reruns = Reruns(load_scenario(path), seed, max_nodes or DEFAULT_MAX_NODES, timeout)
    args = array_args({}, {}, call, {}, origin=(call, node, measured), seed=seed)
    (result,) = reruns.wait_jobs(reruns.start_jobs([args]))
    found = result.get("origin") if isinstance(result, dict) else None
    if not found:
        return None
    file, line = str(found[0]), int(found[1])
    culprit = found[2] if len(found) > 2 else None
    if not culprit:
        return CallOrigin(file, line, "a replay of the call under a line tracer found the "
                          f"value it added made at line {line}")
    name, was, should = culprit["name"], culprit["was"], culprit["should"]
    change = (f"{name} = {should:.6g} instead of {was:.6g}" if was is not None
              else f"{name} scaled by {should:.6g}")
    others = culprit.get("others") or []
    also = ("; so would " + ", ".join(f"{n} (line {k})" for n, k in others)
            + ", changed alone: the first computed is named") if others else ""
    return CallOrigin(file, int(culprit["line"]), (
        f"a replay of the call found the value made at line {line} from {name}, computed "
        f"at line {culprit['line']}: with {change} and nothing else changed, it is the "
        f"right one{also}"))
