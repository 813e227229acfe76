"""The torch engine's working of a step: the array engine's (`mgtui.trace.explain_arrays`,
or the scalar one for a one-element tensor), with a backward step named by its autograd
node (`TanhBackward0 of o`), and a leaf's `AccumulateGrad` saying what it does."""

from __future__ import annotations

from dataclasses import replace

from mgtui.trace import Trace
from mgtui.trace.engine_kind import AUTOGRAD_FILE
from mgtui.trace.working import Explanation, name


def torch_step(trace: Trace, index: int, e: Explanation) -> Explanation:
    """`e`, the working of event `index`, for a torch backward step: an autograd node's
    step (`mgtui.recording.torch_recorder`, which has no source) is named by the node; a
    custom Function's `backward` keeps its own working."""
    closure = trace.closure_of(index) if e.kind == "backward" else None
    if closure is None or closure.filename != AUTOGRAD_FILE:
        return e
    out, op = name(trace.label(e.node)), trace.op(e.node)
    notes = e.notes
    if closure.name == "AccumulateGrad":
        notes = (f"torch's AccumulateGrad: what reached {out} is added into {out}.grad "
                 "(each += shows at the step that passed it on).",) + tuple(
                     n for n in notes if "is a leaf: its _backward" not in n)
    return replace(e, title=f"backward: {closure.name} of {out}" + (f"  ({op})" if op else ""),
                   notes=notes)
