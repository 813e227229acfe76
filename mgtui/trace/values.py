"""A trace's values as its readers get them (`trace.values`, a `TraceValues`): a float
where the value was a number, an `ArrayValue` where it was an array (a tensor engine's
trace keeps those beside its scalar columns, in its `ArrayTable`: `mgtui.trace.arrays`).
And the views the panes read a state through (`state_values`)."""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from functools import cached_property
from typing import TYPE_CHECKING

from mgtui.trace.array_columns import FieldIndex
from mgtui.trace.arrays import ArrayTable, Value, is_finite
from mgtui.trace.records import _GRAD

if TYPE_CHECKING:
    from mgtui.trace.index import TraceIndex
    from mgtui.trace.replay import Replay


class TraceValues:
    """The readers of a trace's values that know arrays. It holds the trace's `arrays`
    (an `ArrayTable`) and the scalar columns beside them (not the trace), the trace's
    `Replay` (for the final state) and `TraceIndex` (for the event that made a node),
    and keeps, per field that ever held an array, where its values are."""

    def __init__(self, arrays: ArrayTable, node_data: array, events: tuple[array, array, array],
                 lone: tuple[array, array, array], writes: tuple[array, array, array, array],
                 replay: Replay, index: TraceIndex) -> None:
        self.arrays, self._node_data = arrays, node_data
        self._ev_kind, self._ev_node, self._ev_write_start = events
        self._lone_at, self._lone_before, self._lone_after = lone
        self._wr_node, self._wr_field, self._wr_before, self._wr_after = writes
        self._replay, self._index = replay, index
        self._histories: dict[tuple[int, bool], tuple[list[int], list[int]] | None] = {}

    def created_value(self, nid: int) -> Value:
        """The data node `nid` was made with."""
        found = self.arrays.nodes.get(nid)
        return self._node_data[nid] if found is None else found

    def created_grad(self, nid: int) -> Value:
        """The grad node `nid` was made with: 0.0, or an array node's zeros."""
        return self.arrays.grads.get(nid, 0.0)

    def write_value(self, w: int, scalar_before: float, scalar_after: float
                    ) -> tuple[Value, Value]:
        """(before, after) of write `w` (inside a `_backward`), given its columns'."""
        return _sides(ArrayTable.pair(self.arrays.writes, w), scalar_before, scalar_after)

    def event_value(self, index: int, scalar_before: float, scalar_after: float
                    ) -> tuple[Value, Value]:
        """(before, after) of the lone write of event `index`, given its columns'."""
        return _sides(ArrayTable.pair(self.arrays.events, index), scalar_before, scalar_after)

    def final_value(self, nid: int, grad: bool) -> Value:
        """Node `nid`'s grad (or data) at the end of the run."""
        final = self._replay.final_grad if grad else self._replay.final_data
        return self.value_at(nid, grad, len(self._ev_kind), final[nid])

    def value_at(self, nid: int, grad: bool, position: int, scalar: float) -> Value:
        """Node `nid`'s grad (or data) after the first `position` events, given the
        scalar state's (a `Timeline`'s) float for it: an array where it was one."""
        if not self.arrays:
            return scalar
        history = self._history(nid, grad)
        if history is None:
            return scalar
        events, values = history
        k = bisect_right(events, position - 1)
        if k == 0:
            return self.created_grad(nid) if grad else self.created_value(nid)
        ref = values[k - 1]
        found = self.arrays.writes.get(ref) if ref >= 0 else self.arrays.events.get(~ref)
        return scalar if found is None else found  # (None: a float, the scalar state's)

    def zeros_written(self, index: int) -> bool:
        """Did the lone write of event `index` set an array of zeros (`zero_grad`)?"""
        after = self.arrays.events.get(index + index + 1)
        return after is not None and after.all_zeros()

    def first_non_finite(self) -> int | None:
        """The first event that stores a nan or an inf: a node created with one, or a
        write (inside a `_backward` or not) of one (an array with one such element)."""
        if self.arrays:  # (its columns hold nan where the values were arrays)
            return self._first_non_finite_arrays()
        found = []
        nid = _first_non_finite(self._node_data)
        if nid is not None:
            found.append(self._index.creations[nid])
        w = _first_non_finite(self._wr_after)
        if w is not None:  # the last event whose writes start at or before it made it
            found.append(bisect_right(self._ev_write_start, w) - 1)
        lone = _first_non_finite(self._lone_after)
        if lone is not None:
            found.append(self._lone_at[lone])
        found = [i for i in found if i >= 0]
        return min(found) if found else None

    def _first_non_finite_arrays(self) -> int | None:
        """`first_non_finite` for a trace with arrays: each value read through the
        table, an array's elements checked (`ArrayValue.finite`)."""
        found = []
        nid = next((n for n in range(len(self._node_data))
                    if not is_finite(self.created_value(n))), None)
        if nid is not None:
            found.append(self._index.creations[nid])
        wr_before, wr_after = self._wr_before, self._wr_after
        w = next((k for k in range(len(wr_after))
                  if not is_finite(self.write_value(k, wr_before[k], wr_after[k])[1])), None)
        if w is not None:
            found.append(bisect_right(self._ev_write_start, w) - 1)
        before, after = self._lone_before, self._lone_after
        lone = next((k for k, i in enumerate(self._lone_at)
                     if not is_finite(self.event_value(i, before[k], after[k])[1])), None)
        if lone is not None:
            found.append(self._lone_at[lone])
        found = [i for i in found if i is not None and i >= 0]
        return min(found) if found else None

    @cached_property
    def _fields(self) -> FieldIndex:
        """Which writes touched each node (`FieldIndex`), sorted once, read per field."""
        return FieldIndex(self._wr_node, self._wr_field, self._ev_write_start, self._lone_at,
                          self._ev_node, self._ev_kind, _GRAD)

    def _history(self, nid: int, grad: bool) -> tuple[list[int], list[int]] | None:
        """The events that wrote a field that ever held an array, and where what each
        left is (`FieldIndex.history`); None for a field that never held one. Found when
        first asked for, and kept; no value made until read."""
        key = (nid, grad)
        found = self._histories.get(key, False)
        if found is False:
            t = self.arrays
            found = self._fields.history(nid, grad)
            if nid not in (t.grads if grad else t.nodes) and not any(
                    (ref in t.writes) if ref >= 0 else (~ref in t.events) for ref in found[1]):
                found = None
            self._histories[key] = found
        return found  # type: ignore[return-value]


def _sides(found: tuple | None, before: float, after: float) -> tuple[Value, Value]:
    """A write's (before, after): its arrays where it has them, else its columns'."""
    if found is None:
        return before, after
    b, a = found
    return (before if b is None else b), (after if a is None else a)


def _first_non_finite(values: array) -> int | None:
    """The index of the first nan or inf in `values`. A finite sum (summed at C speed)
    rules them all out; only a sum that is not finite needs a scan."""
    if math.isfinite(sum(values)):
        return None
    isfinite = math.isfinite
    return next((k for k in range(len(values)) if not isfinite(values[k])), None)


class ValuesAt:
    """Every node's grad (or data) after the first `position` events, by id, as a
    sequence: the scalar state's float (`scalar`, a `Timeline`'s own array), or the
    `ArrayValue` where the value was an array. What the panes read a tensor trace's
    state through (a trace of floats hands them the scalar arrays themselves)."""

    __slots__ = ("values", "grad", "position", "scalar")

    def __init__(self, values: TraceValues, grad: bool, position: int, scalar) -> None:
        self.values, self.grad, self.position, self.scalar = values, grad, position, scalar

    def __len__(self) -> int:
        return len(self.scalar)

    def __getitem__(self, nid: int) -> Value:
        return self.values.value_at(nid, self.grad, self.position, self.scalar[nid])


def state_values(trace, position: int, data, grad) -> tuple:
    """(data, grad) as the panes read them: the scalar state itself for a trace of floats,
    `ValuesAt` views for one with arrays (over the `trace.values` of a `Trace`)."""
    if not trace.arrays:
        return data, grad
    values = trace.values
    return ValuesAt(values, False, position, data), ValuesAt(values, True, position, grad)
