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

and every reader asks the trace's values (`trace.values`, a `TraceValues`: `value_at`,
`write_value`, ...), which answer a float or an `ArrayValue`. `display` writes either as text.

An array is kept whole up to `WHOLE_LIMIT` elements (as float64, C order, whatever its
dtype was: the dtype is kept by name); a bigger one keeps its shape, dtype, a summary
(min, max, mean, L2 norm, the count of elements that are not finite) and its first
`SAMPLE` elements. This module needs no numpy: a recording makes `ArrayValue`s with
`mgtui.trace.array_numpy.snapshot` (on its hot path), which calls the array's own methods, and a
loader with `of`.
"""

from __future__ import annotations

import math
import sys
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from mgtui.trace.array_columns import LazyValues, StoredArrays
from mgtui.trace.array_summary import summary_of

WHOLE_LIMIT = 1 << 16  # elements an array may have and still be kept whole
SAMPLE = 8  # elements kept of a bigger one
MAX_DIMS = 32  # numpy's own bound
SHOWN_WHOLE = 12  # elements a display writes out in full (`display`)
ARRAY_CELL = 20  # the width of a node table's data and grad cells in a trace with arrays
NODE, GRAD, EVENT, WRITE = range(4)  # the places an array may stand in (see above)
PLACE_NAMES = ("node", "grad", "event", "write")
NUMERIC_KINDS = "biuf"  # numpy dtype kinds an `ArrayValue` holds (bool, ints, floats)


class ArrayValue:
    """One array: its `shape`, its `dtype` (by name), and `values` (float64, C order):
    every element if `whole`, else the first few, with `summary` given (low, high,
    mean, norm, nonfinite). Its statistics are worked out on first use when whole.
    Treat it as immutable; it compares by identity (`same` compares contents). (A class
    with slots rather than a frozen dataclass: a recording makes one per array it sees,
    and a frozen dataclass's `__init__` costs three times as much.)

    `values` may be given as the bytes of the float64 elements (native order, as numpy's
    `tobytes` gives them: a recording's snapshot), made an `array('d')` on first use: a
    snapshot is then one copy of the array, and one object the collector does not track.
    A float32 array's bytes so given are its own float32 elements (a torch tensor's,
    most often: the cast to float64 is left until the values are read, or written out
    together with others by `joined_values`; a trace file holds float64 as before)."""

    __slots__ = ("shape", "dtype", "_values", "whole", "given", "_summary", "raw", "basis")

    def __init__(self, shape: tuple[int, ...], dtype: str, values: array | bytes,
                 whole: bool = True,
                 given: tuple[float, float, float, float, int] | None = None,
                 basis: int = 0) -> None:
        self.shape, self.dtype, self._values, self.whole = shape, dtype, values, whole
        self.given = given  # (a summary's)
        self._summary = given
        self.raw = None  # a copy of a big array, to be summarised (`settle`)
        # The summary of one not kept whole was worked out from `basis` elements where not
        # from all: > 0 the storage of a broadcast (or expanded) view, every distinct
        # element (exact); < 0 a strided sample of -basis elements (an estimate)
        self.basis = basis

    @classmethod
    def pending(cls, shape: tuple[int, ...], dtype: str, raw) -> ArrayValue:
        """A big array (over `WHOLE_LIMIT` elements) as a recording takes it on its hot
        path: `raw`, a numpy copy of it in C order, in its own dtype, summarised later
        (`settle`: by the runner's flusher, as the chunk is cut)."""
        value = cls(shape, dtype, b"", False)
        value.raw = raw
        return value

    def settle(self) -> None:
        """Work out the summary of a pending value (`pending`) and let its copy go."""
        raw = self.raw
        if raw is not None:
            flat = raw.reshape(-1)
            self._values = array("d", flat[:SAMPLE].tolist())
            self.given = self._summary = summary_of(flat, flat.size)
            self.raw = None

    @property
    def values(self) -> array:
        if self.raw is not None:
            self.settle()
        values = self._values
        if type(values) is bytes:  # (a float32 one's bytes are float32: see the class)
            values = self._values = array("d", _float64_bytes(values) if self.dtype == "float32"
                                          else values)
        return values  # type: ignore[return-value]

    @property
    def kept(self) -> int:
        """How many elements `values` holds (without converting them)."""
        if self.raw is not None:
            return min(SAMPLE, self.raw.size)
        values = self._values
        if type(values) is bytes:
            return len(values) // (4 if self.dtype == "float32" else 8)
        return len(values)

    def __repr__(self) -> str:
        return (f"ArrayValue(shape={self.shape}, dtype={self.dtype!r}, whole={self.whole}, "
                f"values={list(self.values[:SAMPLE])})")

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def summary(self) -> tuple[float, float, float, float, int]:
        """(min, max, mean, L2 norm, number of elements that are nan or inf), over the
        finite elements (nan where there are none)."""
        if self._summary is None:
            if self.raw is not None:
                self.settle()
            else:
                self._summary = self._worked_summary()
        return self._summary  # type: ignore[return-value]

    @property
    def basis_note(self) -> str:
        """What a summary not worked out from every element was worked out from ("" if
        from every element)."""
        if self.basis > 0:
            return f"a broadcast view: summarised from its {self.basis:,} stored elements"
        if self.basis < 0:
            return f"estimated from a strided sample of {-self.basis:,} elements"
        return ""

    def _worked_summary(self) -> tuple[float, float, float, float, int]:
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

    def all_zeros(self) -> bool:
        """Is every element 0 (or -0.0)? Told by its bytes where they are all zero (a
        recording's snapshot of `zeros_like`: a C-speed count, not a summary)."""
        raw = self._values
        if self.whole and type(raw) is bytes and raw and raw.count(0) == len(raw):
            return True
        return self.summary[:2] == (0.0, 0.0) and self.finite

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


def _float64_bytes(raw: bytes) -> bytes:
    """float32 elements (native order) as float64 ones: by numpy, loaded where a
    recording took float32 snapshots (`ArraySnapshots`), at C speed."""
    np = sys.modules.get("numpy")
    if np is not None:
        return np.frombuffer(raw, np.float32).astype(np.float64).tobytes()
    return array("d", array("f", raw)).tobytes()


def joined_values(values: Iterable[ArrayValue]) -> array:
    """The elements of `values`, one after another, as one float64 array (as a trace
    file holds them): runs of float32 snapshots converted together (`_float64_bytes`),
    not one value at a time. A recording's raw copy (`raw_value`) is taken as it is,
    not made a value first."""
    out, run = array("d"), []
    for v in values:
        if type(v) is not ArrayValue:  # (a raw copy: float64 or float32, C order)
            if v.dtype.char == "f":  # type: ignore[attr-defined]
                run.append(v.tobytes())  # type: ignore[attr-defined]
                continue
            if run:
                out.frombytes(_float64_bytes(b"".join(run)))
                run.clear()
            out.frombytes(v.tobytes())  # type: ignore[attr-defined]
            continue
        if v.raw is not None:
            v.settle()
        raw = v._values
        if type(raw) is bytes and v.dtype == "float32":
            run.append(raw)
            continue
        if run:
            out.frombytes(_float64_bytes(b"".join(run)))
            run.clear()
        out.extend(v.values)
    if run:
        out.frombytes(_float64_bytes(b"".join(run)))
    return out


Value = float | ArrayValue  # a value as the trace's readers get it


class ArrayChunk:
    """Array values, as they travel between processes and files: `entries` are
    (place, index, side, value), side 0 for a before (or a node's value), 1 for an after;
    `unrecorded`: (type name, count) of the values that were neither numbers nor arrays of
    numbers, so were not recorded (their columns hold nan), over the whole run so far.

    A recording gives its values as `columns` instead: for each place, in order, a list
    of keys (index * 2 + side) and a list of the values beside them (`ArrayTable.add`
    takes them in at C speed); `entries` are made of them when asked for (a file's
    writer), and `columns` of entries (`columns_of`)."""

    __slots__ = ("_entries", "_columns", "unrecorded")

    def __init__(self, entries: tuple[tuple[int, int, int, ArrayValue], ...] | None = None,
                 unrecorded: tuple[tuple[str, int], ...] = (), *,
                 columns: tuple[tuple[list, list], ...] | None = None) -> None:
        self._entries = () if entries is None and columns is None else entries
        self._columns = columns
        self.unrecorded = unrecorded

    @property
    def entries(self) -> tuple[tuple[int, int, int, ArrayValue], ...]:
        if self._entries is None:  # (a recording's raw copies made values: `raw_values`)
            value = raw_values()
            self._entries = tuple((place, k >> 1, k & 1, value(v))
                                  for place, (keys, values) in enumerate(self._columns or ())
                                  for k, v in zip(keys, values))
        return self._entries

    @property
    def columns(self) -> tuple[tuple[list, list], ...] | None:  # (if given so)
        return self._columns

    @property
    def raw_entries(self) -> tuple[tuple, ...]:
        """`entries`, a recording's raw copies (`raw_value`) left as they are: for a
        writer that takes them so (`joined_values`, `raw_parts`)."""
        if self._entries is not None or self._columns is None:
            return self.entries
        return tuple((place, k >> 1, k & 1, v)
                     for place, (keys, values) in enumerate(self._columns)
                     for k, v in zip(keys, values))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ArrayChunk):
            return NotImplemented
        return self.entries == other.entries and self.unrecorded == other.unrecorded

    def __repr__(self) -> str:
        return f"ArrayChunk(entries={self.entries!r}, unrecorded={self.unrecorded!r})"


def raw_value(a) -> ArrayValue:
    """The `ArrayValue` of a recording's raw copy of an array (`mgtui.recording.
    array_values`: a numpy array of float64 or float32, C order, of at most
    `WHOLE_LIMIT` elements, kept as it was taken): the value the recording would have
    made of the array then."""
    char = a.dtype.char  # (`dtype.name` is worked out in Python: microseconds)
    return ArrayValue(a.shape, _RAW_DTYPES.get(char) or a.dtype.name, a.tobytes())


_RAW_DTYPES = {"d": "float64", "f": "float32"}  # a raw copy's dtype, by its character


def raw_parts(v: object) -> tuple[tuple[int, ...], str, int, bool]:
    """(shape, dtype, elements kept, whole) of a value or of a raw copy (`raw_value`)."""
    if type(v) is ArrayValue:
        return v.shape, v.dtype, v.kept, v.whole
    a: Any = v
    return a.shape, _RAW_DTYPES.get(a.dtype.char) or a.dtype.name, a.size, True


def raw_values() -> Callable[[object], ArrayValue]:
    """A function that gives a chunk's or a table's values as `ArrayValue`s: one given as
    a value as it is; a raw copy (`raw_value`) made a value once, the same one wherever
    the copy stands (a write's after and the next write's before share one)."""
    made: dict[int, tuple[object, ArrayValue]] = {}

    def value(x: object) -> ArrayValue:
        if type(x) is ArrayValue:
            return x
        found = made.get(id(x))
        if found is None:
            found = made[id(x)] = (x, raw_value(x))  # (the copy kept: its id stays its own)
        return found[1]

    return value


def columns_of(entries: Iterable[tuple]) -> tuple[tuple[list, list], ...]:
    """A chunk's entries as `ArrayChunk.columns` (in the entries' order)."""
    columns: tuple[tuple[list, list], ...] = tuple(([], []) for _ in PLACE_NAMES)
    for place, index, side, value in entries:
        keys, values = columns[place]
        keys.append(index + index + side)
        values.append(value)
    return columns


_HALF = (1).__rrshift__  # k -> k >> 1: a key's index, at C speed in a `map`


@dataclass
class ArrayTable:
    """The arrays of a trace, by place (see the module's docstring); empty for a trace of
    floats. `nodes` and `grads` by node id; `events` and `writes` by key, the index times
    two plus the side (0 the before, 1 the after): a side that is a float has no key
    (`pair` gives both sides of one index)."""

    nodes: LazyValues = field(default_factory=lambda: LazyValues(_made))
    grads: LazyValues = field(default_factory=lambda: LazyValues(_made))
    events: LazyValues = field(default_factory=lambda: LazyValues(_made))
    writes: LazyValues = field(default_factory=lambda: LazyValues(_made))
    unrecorded: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        value = None  # (a recording's raw copies, made values as read: one function for
        for table in (self.nodes, self.grads, self.events, self.writes):  # every place)
            value = value or table.given or raw_values()
            if table.given is None:
                table.given = value

    def __bool__(self) -> bool:
        return bool(self.nodes or self.events or self.writes)

    @staticmethod
    def pair(table: LazyValues, index: int
             ) -> tuple[ArrayValue | None, ArrayValue | None] | None:
        """(before, after) of the write or event `index` of `table` (`events` or
        `writes`), None for a side that is a float; None if neither is an array."""
        before, after = table.get(index + index), table.get(index + index + 1)
        return None if before is None and after is None else (before, after)

    def zeros_written(self, index: int) -> bool:
        """Did the lone write of event `index` set an array of zeros (`zero_grad`)? A
        raw copy (`raw_value`) of zeros is told by its bytes, not made a value."""
        after = self.events.raw(index + index + 1)
        if after is None:
            return False
        if type(after) is not ArrayValue:
            data = after.tobytes()  # type: ignore[attr-defined]
            if data == bytes(len(data)):
                return True
            after = self.events[index + index + 1]  # (-0.0 is a zero too)
        return after.all_zeros()

    @staticmethod
    def holds(table: LazyValues, index: int) -> bool:  # (either side an array?)
        return index + index in table or index + index + 1 in table

    def add(self, chunk: ArrayChunk) -> None:
        """Take in a chunk's values (checked already: `TraceBuilder.add_arrays`), a place
        at a time, at C speed."""
        columns = chunk.columns
        if columns is None:
            columns = columns_of(chunk.entries)
        tables = (self.nodes, self.grads, self.events, self.writes)
        for place, (table, (keys, values)) in enumerate(zip(tables, columns)):
            if not keys:
                continue
            if type(keys) is list and type(values) is list and keys == sorted(keys):
                table.add_given(keys, values, 2 if place < EVENT else 1)  # (in whole)
            else:
                table.update(zip(map(_HALF, keys) if place < EVENT else keys,
                                 map(table.given, values)))
        if chunk.unrecorded:
            self.unrecorded.update(chunk.unrecorded)

    def add_stored(self, store: StoredArrays, places: list[tuple[array, array]],
                   unrecorded: tuple[tuple[str, int], ...]) -> None:
        """Take in a version 5 record's columns (checked already), values made as read."""
        for table, (keys, rows) in zip((self.nodes, self.grads, self.events, self.writes),
                                       places):
            table.add_stored(keys, rows, store)
        if unrecorded:
            self.unrecorded.update(unrecorded)

    def copy(self) -> ArrayTable:
        return ArrayTable(self.nodes.copy(), self.grads.copy(), self.events.copy(),
                          self.writes.copy(), dict(self.unrecorded))

    def entries(self) -> Iterable[tuple[int, int, int, ArrayValue]]:
        """Every array, as (place, index, side, value), places in order, each by index."""
        for place, table in ((NODE, self.nodes), (GRAD, self.grads)):
            for index in sorted(table):
                yield place, index, 0, table[index]
        for place, table in ((EVENT, self.events), (WRITE, self.writes)):
            for key in sorted(table):
                yield place, key >> 1, key & 1, table[key]

    def chunk(self) -> ArrayChunk:
        return ArrayChunk(tuple(self.entries()), tuple(sorted(self.unrecorded.items())))

    def unrecorded_note(self) -> str:
        """What was not recorded, said out loud ("" if everything was): values of types
        it does not know, and calls it does not follow (`NOT_FOLLOWED`)."""
        said = [NOT_FOLLOWED[name].format(n=n, times="once" if n == 1 else f"{n:,} times")
                for name, n in sorted(self.unrecorded.items()) if name in NOT_FOLLOWED]
        kinds = ", ".join(f"{name} ({n:,})" for name, n in sorted(self.unrecorded.items())
                          if name not in NOT_FOLLOWED)
        if kinds:
            said.append(f"values of type {kinds} were not recorded: they are neither numbers "
                        "nor numpy arrays of numbers, and show as nan")
        return "; ".join(said)


# Calls a recording does not follow, counted among the values not recorded by these names
# (a trace file keeps them as it keeps those), each said out loud as its text here says.
NOT_FOLLOWED = {
    "torch.autograd.grad": (
        "torch.autograd.grad ran {times}: the backward pass it runs is not recorded (only "
        "backward()'s are), and the gradients it returned are not in this trace"),
    "torch hidden": (
        "{n:,} values of autograd's own nodes inside a torch call (such as the Mm, Expand "
        "and Bmm of a matrix product of 3-D tensors) are not known to the recording: they "
        "show as nan"),
}
HIDDEN = "torch hidden"  # (a NOT_FOLLOWED name: `mgtui.recording.torch_recorder`'s)


def _made(store: StoredArrays, row: int) -> ArrayValue:
    """Value `row` of a record's columns, made as it is first read (`LazyValues`)."""
    value = store.made.get(row)
    if value is None:
        value = store.made[row] = ArrayValue(*store.parts(row))
    return value


EMPTY = ArrayTable()


def scalar_of(value: Value) -> float:
    """A value as one number: a float, an array's one element, else nan (a loss curve's
    point)."""
    if isinstance(value, ArrayValue):
        return value.values[0] if value.size == 1 and value.values else math.nan
    return value


def is_finite(value: Value) -> bool:
    """A float that is finite, or an array whose elements all are."""
    return value.finite if isinstance(value, ArrayValue) else math.isfinite(value)


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


def box_shape(shape: tuple[int, ...]) -> str:
    """A shape where space is tight (a graph box): `100×16`, `16` (1-d), `()` (0-d)."""
    return "×".join(map(str, shape)) if shape else "()"


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
    approx = "≈" if value.basis < 0 else ""  # (a sample's estimate)
    text = f"{shape_text(value.shape)} μ {approx}{number(mean, 2)} ‖‖ {approx}{number(norm, 2)}"
    return text + (f" ({bad} nan/inf)" if bad else "")


def display(value: Value, digits: int = 4, whole: int = SHOWN_WHOLE) -> str:
    """A value in full where it is small: a float; an array of up to `whole` elements
    as nested lists; a bigger one as its shape, dtype, min, max, mean, norm and its
    first elements (or, every element the same, that one: `(2, 16) float64 all 0.0`)."""
    if not isinstance(value, ArrayValue):
        return number(value, digits) if isinstance(value, float) else str(value)
    if value.whole and value.size <= whole:
        return f"{shape_text(value.shape)} {_nested_text(value.nested(), digits)}"
    low, high, mean, norm, bad = value.summary
    if low == high and not bad and value.size and value.basis >= 0:  # (a grad zeroed, ones)
        note = f" ({value.basis_note})" if value.basis else ""
        return f"{shape_text(value.shape)} {value.dtype} all {number(low, digits)}{note}"
    first = ", ".join(number(v, digits) for v in value.values[:4])
    text = (f"{shape_text(value.shape)} {value.dtype} min {number(low, digits)} "
            f"max {number(high, digits)} μ {number(mean, digits)} ‖‖ {number(norm, digits)}"
            f" [{first}, …]")
    text += f" {bad} nan/inf" if bad else ""
    return text + (f" ({value.basis_note})" if value.basis else "")


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
    if isinstance(other, ArrayValue) and other.whole:  # (a float against a summary: none,
        return array("d", [float(value)]) * other.size  # not one the size of its shape)
    return None


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of element `flat` (C order) of an array of `shape`: (2, 1)."""
    out = []
    for n in reversed(shape):
        flat, k = divmod(flat, n) if n else (flat, 0)
        out.append(k)
    return tuple(reversed(out))

