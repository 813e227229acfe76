"""The trace's part of each engine (`mgtui.trace.engine_kind`): what its values are and
how one of its steps is worked out. Code outside an engine asks the trace's engine
(`engine_of(trace)`) and never looks at a value or a closure to guess.

An `Engine` here is one implementation per kind, registered in `ENGINES`:

- scalar: values are floats; a step is worked out by `mgtui.trace.explain`;
- array: values are floats or arrays (`mgtui.trace.arrays.ArrayValue`); a step that
  touches an array is worked out with shapes by `mgtui.trace.explain_arrays`, the rest
  as a scalar one;
- torch: the array engine's values and working, with autograd nodes' steps named by
  the node (`mgtui.trace.explain_torch`).

Each room has its part of an engine beside this one, registered by the same kinds: the
recording's probes (`mgtui.recording.probes.Probe`; the torch engine's is
`mgtui.recording.torch_watch`), the doctor's check (`mgtui.doctor.engines`) and the
comparison of values in `mgtui diff` (`mgtui.diff.array_values`).
"""

from __future__ import annotations

import math
from typing import Protocol

from mgtui.trace import Trace
from mgtui.trace import arrays
from mgtui.trace.engine_kind import ARRAY, SCALAR, TORCH
from mgtui.trace.explain import explain_scalar
from mgtui.trace.explain_arrays import explain_arrays
from mgtui.trace.explain_torch import torch_step
from mgtui.trace.working import Explanation


class Engine(Protocol):
    """The trace's part of one engine: its kind, its values as text, and its step."""

    kind: str

    def brief(self, value: object, digits: int = 4) -> str:
        """A value in a few characters (a table's cell, a finding)."""

    def display(self, value: object, digits: int = 4) -> str:
        """A value in full where it is small."""

    def finite(self, value: object) -> bool:
        """Is every number of `value` finite?"""

    def explain(self, trace: Trace, data, grad, index: int,
                numerical: dict[int, float] | None = None) -> Explanation:
        """The working of event `index` (`data`, `grad`: the state after it, a
        `Timeline`'s; `numerical`: the doctor's measured local derivatives)."""


class ScalarEngine:
    """Micrograd-style Values of floats."""

    kind = SCALAR

    def brief(self, value: object, digits: int = 4) -> str:
        return arrays.number(value, digits) if isinstance(value, float) else str(value)

    display = brief

    def finite(self, value: object) -> bool:
        return math.isfinite(value)  # type: ignore[arg-type]

    def explain(self, trace: Trace, data, grad, index: int,
                numerical: dict[int, float] | None = None) -> Explanation:
        return explain_scalar(trace, data, grad, index, numerical)


class ArrayEngine:
    """A tensor engine whose values are numpy arrays (and floats among them)."""

    kind = ARRAY

    def brief(self, value: object, digits: int = 4) -> str:
        return arrays.brief(value, digits)  # type: ignore[arg-type]

    def display(self, value: object, digits: int = 4) -> str:
        return arrays.display(value, digits)  # type: ignore[arg-type]

    def finite(self, value: object) -> bool:
        return arrays.is_finite(value)  # type: ignore[arg-type]

    def explain(self, trace: Trace, data, grad, index: int,
                numerical: dict[int, float] | None = None) -> Explanation:
        found = explain_arrays(trace, data, grad, index)
        return found if found is not None else explain_scalar(trace, data, grad, index,
                                                              numerical)


class TorchEngine(ArrayEngine):
    """PyTorch through the torch adapter: the array engine's values (a one-element
    tensor reads as a float), each backward step an autograd node's."""

    kind = TORCH

    def explain(self, trace: Trace, data, grad, index: int,
                numerical: dict[int, float] | None = None) -> Explanation:
        return torch_step(trace, index, super().explain(trace, data, grad, index, numerical))


ENGINES: dict[str, Engine] = {e.kind: e for e in (ScalarEngine(), ArrayEngine(), TorchEngine())}


def engine_of(trace: Trace) -> Engine:
    """The trace's part of the engine that recorded `trace`."""
    return ENGINES[trace.engine]


def explain(trace: Trace, data, grad, index: int,
            numerical: dict[int, float] | None = None) -> Explanation:
    """The working of one step, by the engine that recorded the trace (`Engine.explain`)."""
    return engine_of(trace).explain(trace, data, grad, index, numerical)
