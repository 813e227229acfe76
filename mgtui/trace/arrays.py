"""Array values in a trace (a tensor-valued micrograd: numpy arrays for `data` and
`grad`): `ArrayValue`, one array as the trace keeps it, and `ArrayTable`, the side table
that holds them beside the trace's scalar columns.

The scalar columns stay what they are (`array('d')`, one float a value): a trace of
floats costs nothing more. Where a value was an array, its column holds a stand-in
(nan) that no one may read as the value: the table has the array, by place

    NODE   the data a node was made with      (by node id)
    GRAD   the grad a node was made with      (by node id: an array node's grad starts
                                               as an array of zeros, not as 0.0)
    EVENT  a lone write's before and after    (by event index; either may be a float)
    WRITE  a `_backward` write's before/after (by write index)

and every reader asks the trace (`TraceArrays.value_at`, `write_value`, ...), which
answers a float or an `ArrayValue`. `display` writes either as text.

An array is kept whole up to `WHOLE_LIMIT` elements (as float64, C order, whatever its
dtype was: the dtype is kept by name); a bigger one keeps its shape, dtype, a summary
(min, max, mean, L2 norm, the count of elements that are not finite) and its first
`SAMPLE` elements. This module needs no numpy: a recording makes `ArrayValue`s with
`from_numpy`, which calls the array's own methods, and a loader with `of`.
"""

from __future__ import annotations

import math
import sys
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Sequence

from mgtui.trace.records import _GRAD

WHOLE_LIMIT = 1 << 16  # elements an array may have and still be kept whole
SAMPLE = 8  # elements kept of a bigger one
MAX_DIMS = 32  # numpy's own bound
SHOWN_WHOLE = 12  # elements a display writes out in full (`display`)
NODE, GRAD, EVENT, WRITE = range(4)  # the places an array may stand in (see above)
PLACE_NAMES = ("node", "grad", "event", "write")
NUMERIC_KINDS = "biuf"  # numpy dtype kinds an `ArrayValue` holds (bool, ints, floats)


@dataclass(frozen=True, eq=False)
class ArrayValue:
    """One array: its `shape`, its `dtype` (by name), and `values` (float64, C order):
    every element if `whole`, else the first few, with `summary` given (low, high,
    mean, norm, nonfinite). Its statistics are worked out on first use when whole."""

    shape: tuple[int, ...]
    dtype: str
    values: array  # 'd'
    whole: bool = True
    given: tuple[float, float, float, float, int] | None = None  # (a summary's)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @cached_property
    def summary(self) -> tuple[float, float, float, float, int]:
        """(min, max, mean, L2 norm, number of elements that are nan or inf), over the
        finite elements (nan where there are none)."""
        if self.given is not None:
            return self.given
        values = self.values
        total = sum(values)
        if math.isfinite(total):  # (the common case: every element finite, at C speed)
            finite, bad = values, 0
        else:
            finite = [v for v in values if math.isfinite(v)]
            bad = len(values) - len(finite)
        if not finite:
            return (math.nan, math.nan, math.nan, math.nan, bad)
        return (min(finite), max(finite), math.fsum(finite) / len(finite),
                math.sqrt(math.fsum(v * v for v in finite)), bad)

    @property
    def finite(self) -> bool:
        return self.summary[4] == 0

    def element(self, flat: int) -> float | None:
        """The element at C-order index `flat`, None where it was not kept."""
        return self.values[flat] if 0 <= flat < len(self.values) else None

    def first_non_finite(self) -> int | None:
        """The C-order index of the first element kept that is nan or inf."""
        isfinite = math.isfinite
        return next((k for k, v in enumerate(self.values) if not isfinite(v)), None)

    def nested(self) -> object:
        """The values as nested lists of the array's shape (whole arrays only; a 0-d
        array is its number)."""
        if not self.shape:
            return self.values[0]
        if not self.size:
            return []
        flat: list = list(self.values)
        for n in reversed(self.shape[1:]):
            flat = [flat[k:k + n] for k in range(0, len(flat), n)]
        return flat

    def same(self, other: object) -> bool:
        """Equal shape, dtype and values (nan equal to nan)."""
        return (isinstance(other, ArrayValue) and self.shape == other.shape
                and self.dtype == other.dtype and self.whole == other.whole
                and self.values.tobytes() == other.values.tobytes())

    @classmethod
    def of(cls, values: Iterable[float], shape: Sequence[int], dtype: str = "float64",
           summary: Sequence[float] | None = None) -> ArrayValue:
        """An array from its elements (C order; all of them, or with `summary` given,
        the first few of a bigger one): `mgtui.trace.fields.array_value` checks them."""
        flat = array("d", values)
        shape = tuple(int(n) for n in shape)
        if summary is None:
            return cls(shape, dtype, flat)
        low, high, mean, norm, bad = summary
        return cls(shape, dtype, flat, False,
                   (float(low), float(high), float(mean), float(norm), int(bad)))


def from_numpy(a) -> ArrayValue:
    """An `ArrayValue` of a numpy array of numbers (its dtype kind in `NUMERIC_KINDS`),
    read through its own methods, at C speed: one copy as float64, and for a big one,
    its summary from numpy."""
    np = sys.modules["numpy"]  # (loaded: `a` is one of its arrays)
    shape = tuple(int(n) for n in a.shape)
    f64 = a.astype(np.float64, copy=False)
    if a.size <= WHOLE_LIMIT:
        flat = array("d")
        flat.frombytes(np.ascontiguousarray(f64).tobytes())  # (native order, as 'd')
        return ArrayValue(shape, str(a.dtype), flat)
    ok = np.isfinite(f64)
    good = f64[ok]
    bad = int(f64.size - good.size)
    if good.size:
        given = (float(good.min()), float(good.max()), float(good.mean()),
                 float(np.sqrt(np.dot(good, good))), bad)
    else:
        given = (math.nan, math.nan, math.nan, math.nan, bad)
    sample = array("d", f64.reshape(-1)[:SAMPLE].tolist())
    return ArrayValue(shape, str(a.dtype), sample, False, given)


Value = float | ArrayValue  # a value as the trace's readers get it


@dataclass(frozen=True)
class ArrayChunk:
    """Array values, as they travel between processes and files: `entries` are
    (place, index, side, value), side 0 for a before (or a node's value), 1 for an after;
    `unrecorded`: (type name, count) of the values that were neither numbers nor arrays of
    numbers, so were not recorded (their columns hold nan), over the whole run so far."""

    entries: tuple[tuple[int, int, int, ArrayValue], ...]
    unrecorded: tuple[tuple[str, int], ...] = ()


@dataclass
class ArrayTable:
    """The arrays of a trace, by place (see the module's docstring); empty for a trace of
    floats. `events` and `writes` hold [before, after], None for a side that is a float."""

    nodes: dict[int, ArrayValue] = field(default_factory=dict)
    grads: dict[int, ArrayValue] = field(default_factory=dict)
    events: dict[int, list] = field(default_factory=dict)
    writes: dict[int, list] = field(default_factory=dict)
    unrecorded: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.nodes or self.events or self.writes)

    def add(self, chunk: ArrayChunk) -> None:
        tables = (self.nodes, self.grads, self.events, self.writes)
        for place, index, side, value in chunk.entries:
            if place in (NODE, GRAD):
                tables[place][index] = value
            else:
                tables[place].setdefault(index, [None, None])[side] = value
        if chunk.unrecorded:
            self.unrecorded.update(chunk.unrecorded)

    def copy(self) -> ArrayTable:
        return ArrayTable(dict(self.nodes), dict(self.grads),
                          {k: list(v) for k, v in self.events.items()},
                          {k: list(v) for k, v in self.writes.items()}, dict(self.unrecorded))

    def entries(self) -> Iterable[tuple[int, int, int, ArrayValue]]:
        """Every array, as (place, index, side, value), places in order, each by index."""
        for place, table in ((NODE, self.nodes), (GRAD, self.grads)):
            for index in sorted(table):
                yield place, index, 0, table[index]
        for place, table in ((EVENT, self.events), (WRITE, self.writes)):
            for index in sorted(table):
                for side, value in enumerate(table[index]):
                    if value is not None:
                        yield place, index, side, value

    def chunk(self) -> ArrayChunk:
        return ArrayChunk(tuple(self.entries()), tuple(sorted(self.unrecorded.items())))

    def unrecorded_note(self) -> str:
        """What was not recorded, said out loud ("" if everything was)."""
        if not self.unrecorded:
            return ""
        kinds = ", ".join(f"{name} ({n:,})" for name, n in sorted(self.unrecorded.items()))
        return (f"values of type {kinds} were not recorded: they are neither numbers nor "
                "numpy arrays of numbers, and show as nan")


EMPTY = ArrayTable()


class TraceArrays:
    """The readers of values that know arrays: a mixin of `Trace`, which has `arrays`
    (an `ArrayTable`) beside its scalar columns. Each answers a float where the value
    was a number, an `ArrayValue` where it was an array."""

    arrays: ArrayTable
    node_data: array
    _ev_write_start: array
    _wr_node: array
    _wr_field: array
    _ev_node: array
    _ev_kind: array
    _lone_at: array

    @property
    def has_arrays(self) -> bool:
        return bool(self.arrays)

    def created_value(self, nid: int) -> Value:
        """The data node `nid` was made with."""
        found = self.arrays.nodes.get(nid)
        return self.node_data[nid] if found is None else found

    def created_grad(self, nid: int) -> Value:
        """The grad node `nid` was made with: 0.0, or an array node's zeros."""
        return self.arrays.grads.get(nid, 0.0)

    def write_value(self, w: int, scalar_before: float, scalar_after: float
                    ) -> tuple[Value, Value]:
        """(before, after) of write `w` (inside a `_backward`), given its columns'."""
        found = self.arrays.writes.get(w)
        if found is None:
            return scalar_before, scalar_after
        b, a = found
        return (scalar_before if b is None else b), (scalar_after if a is None else a)

    def event_value(self, index: int, scalar_before: float, scalar_after: float
                    ) -> tuple[Value, Value]:
        """(before, after) of the lone write of event `index`, given its columns'."""
        found = self.arrays.events.get(index)
        if found is None:
            return scalar_before, scalar_after
        b, a = found
        return (scalar_before if b is None else b), (scalar_after if a is None else a)

    def final_value(self, nid: int, grad: bool) -> Value:
        """Node `nid`'s grad (or data) at the end of the run."""
        final = self.final_grad if grad else self.final_data  # type: ignore[attr-defined]
        return self.value_at(nid, grad, len(self), final[nid])  # type: ignore[arg-type]

    def value_at(self, nid: int, grad: bool, position: int, scalar: float) -> Value:
        """Node `nid`'s grad (or data) after the first `position` events, given the
        scalar state's (a `Timeline`'s) float for it: an array where it was one."""
        if not self.arrays:
            return scalar
        history = self._array_history.get((nid, grad))
        if history is None:
            return scalar
        events, values = history
        k = bisect_right(events, position - 1)
        if k == 0:
            return self.created_grad(nid) if grad else self.created_value(nid)
        found = values[k - 1]
        return scalar if found is None else found

    @cached_property
    def _array_history(self) -> dict[tuple[int, bool], tuple[list[int], list]]:
        """For each (node, is-grad) field that ever held an array: the events that wrote
        it, in order, and what each left there (an `ArrayValue`, or None: a float, which
        the scalar state has). Built once, over the writes of array nodes only."""
        t = self.arrays
        fields = {(n, False) for n in t.nodes} | {(n, True) for n in t.grads}
        nodes = {n for n, _ in fields}
        for index in t.events:
            nodes.add(self._ev_node[index])
        for w in t.writes:
            nodes.add(self._wr_node[w])
        history: dict = {}
        starts = self._ev_write_start
        wr_node, wr_field = self._wr_node, self._wr_field
        for w in range(len(wr_node)):
            nid = wr_node[w]
            if nid in nodes:
                after = t.writes.get(w, (None, None))[1]
                key = (nid, wr_field[w] == 0)
                events, values = history.setdefault(key, ([], []))
                events.append(bisect_right(starts, w) - 1)
                values.append(after)
        for index in self._lone_at:
            nid = self._ev_node[index]
            if nid in nodes:
                after = t.events.get(index, (None, None))[1]
                key = (nid, self._ev_kind[index] == _GRAD)
                events, values = history.setdefault(key, ([], []))
                k = bisect_right(events, index)
                events.insert(k, index)
                values.insert(k, after)
        for key in fields:
            history.setdefault(key, ([], []))
        return history


# -- text ----------------------------------------------------------------------------------


def number(x: float, digits: int = 4) -> str:
    """A float as a lesson shows it: at most `digits` decimals, trailing zeros trimmed
    (`mgtui.trace.explain.fmt`); `digits` below 4 for a short summary."""
    if x != x:
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x != 0 and (abs(x) >= 1e6 or abs(x) < 10.0 ** -digits):
        return f"{x:.{digits}g}"
    s = f"{x:.{digits}f}".rstrip("0")
    s = s + "0" if s.endswith(".") else s
    return "0.0" if s == "-0.0" else s


def shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def brief(value: Value, digits: int = 4) -> str:
    """A value in a few characters: a float as it is; an array as its shape and a short
    summary, `(4, 5) μ 0.12 ‖‖ 1.9` (a 0-d or one-element array: its shape and number)."""
    if not isinstance(value, ArrayValue):
        return number(value, digits) if isinstance(value, float) else str(value)
    if value.size == 1 and value.values:
        return f"{shape_text(value.shape)} {number(value.values[0], digits)}"
    if value.size == 0:
        return f"{shape_text(value.shape)} empty"
    _, _, mean, norm, bad = value.summary
    text = f"{shape_text(value.shape)} μ {number(mean, 2)} ‖‖ {number(norm, 2)}"
    return text + (f" ({bad} nan/inf)" if bad else "")


def display(value: Value, digits: int = 4, whole: int = SHOWN_WHOLE) -> str:
    """A value in full where it is small: a float; an array of up to `whole` elements
    as nested lists; a bigger one as its shape, dtype, min, max, mean, norm and its
    first elements."""
    if not isinstance(value, ArrayValue):
        return number(value, digits) if isinstance(value, float) else str(value)
    if value.whole and value.size <= whole:
        return f"{shape_text(value.shape)} {_nested_text(value.nested(), digits)}"
    low, high, mean, norm, bad = value.summary
    first = ", ".join(number(v, digits) for v in value.values[:4])
    text = (f"{shape_text(value.shape)} {value.dtype} min {number(low, digits)} "
            f"max {number(high, digits)} μ {number(mean, digits)} ‖‖ {number(norm, digits)}"
            f" [{first}, …]")
    return text + (f" {bad} nan/inf" if bad else "")


def _nested_text(x: object, digits: int) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_nested_text(v, digits) for v in x) + "]"
    return number(x, digits)  # type: ignore[arg-type]


def delta(before: Value, after: Value) -> Value | None:
    """after - before, element by element where both are whole arrays of one shape (or
    one is a float, broadcast); None where it cannot be worked out."""
    if not isinstance(before, ArrayValue) and not isinstance(after, ArrayValue):
        return after - before
    b = _flat(before, after)
    a = _flat(after, before)
    if a is None or b is None:
        return None
    shape = after.shape if isinstance(after, ArrayValue) else before.shape  # type: ignore[union-attr]
    dtype = after.dtype if isinstance(after, ArrayValue) else "float64"
    return ArrayValue(shape, dtype, array("d", map(float.__sub__, a, b)))


def _flat(value: Value, other: Value) -> array | None:
    if isinstance(value, ArrayValue):
        if not value.whole or (isinstance(other, ArrayValue) and other.shape != value.shape):
            return None
        return value.values
    if isinstance(other, ArrayValue):
        return array("d", [float(value)]) * other.size
    return None
