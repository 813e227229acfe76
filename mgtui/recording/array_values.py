"""Array values as a recording takes them: snapshots of a tensor engine's numpy arrays,
made as each node is made and each field written, kept beside the record columns
(`Records.arrays`) and cut into `mgtui.trace.arrays.ArrayChunk`s with the rest.

The probes' hot paths make one check, `type(value) is float`, and call in here only
for a value that is not a float (an array, an int, a numpy scalar...); a scalar engine
never comes here but for its few int writes (`grad = 1`, `grad = 0`).

Arrays are taken as they are recorded: a numpy engine changes them in place. Each is
read once, at C speed. A float64 or float32 array of at most `WHOLE_LIMIT` elements (a
lesson's, nearly all) is kept as a raw copy (`ndarray.copy()`, C order), made an
`ArrayValue` only when the trace's reader asks for it (`mgtui.trace.arrays.raw_value`):
a numpy array is not tracked by the garbage collector, and a value holding its bytes is;
the end of a run's collection visited each one, a cache miss on its bytes apart (~0.25
µs a value, ~25 µs a step of the tensor lesson; issue 32). Any other array goes straight
into the `ArrayValue` the trace keeps (`mgtui.trace.array_numpy.snapshot`: a big one
summarised then, not copied), so cutting a chunk converts nothing.
`self.grad += g` runs `ndarray.__iadd__`, then sets the field to the same
object, so the "before" a probe sees has changed already: a write's before is taken
from the last snapshot of that field (`last`, by node and field, kept with a weak
reference to the live object it was taken of: `held`) when the before is that same object. A
float written over an
array (`p.grad = 0.0`) is seen only when its chunk is cut (the hot path checks the
value written, not the one before): the array it replaced is taken then, which is right
unless the scenario changed that array in place after it left the node (a one-element
array there becomes its number). A node's grad made as zeros (as most are) shares one
value for each shape.

The snapshots wait by place (node, grad, event, write), each place's in the order of its
rows, as two lists side by side: `keys` (the row's index times two, plus the side: 0 a
before or a node's value, 1 an after) and `values` (the `ArrayValue`s). A chunk is a
slice of each, found by bisection, made into the chunk's (place, index, side, value)
entries as it is cut; what lies before the rows a chunk starts at has been taken (the
runner's child sent it, or the store packed it) and is let go. (Not a tuple an entry as
it waits: a long run's snapshots outlive many collections of the young generation, and
a tuple holding a value is one more object each collection visits.)

A value that is neither a number nor a numpy array of numbers (bool, ints or floats)
is not recorded: its column holds nan, and `unrecorded` counts it by type, which the
trace says out loud (`ArrayTable.unrecorded_note`).

For other probes (a torch graph): `made(nid, data, grad)` and `write(nid, field, before,
value)` take any numpy array; convert a tensor first (`t.detach().cpu().numpy()`), or
make its `ArrayValue` and give it to `taken_node` / `taken_write`, which keep it as it is.
"""

from __future__ import annotations

import math
import sys
import threading
from bisect import bisect_left, bisect_right
from typing import Any
from weakref import ref

from mgtui.recording.sandbox import collect_as_found
from mgtui.trace.arrays import (
    EVENT,
    GRAD,
    NODE,
    NUMERIC_KINDS,
    WHOLE_LIMIT,
    WRITE,
    ArrayChunk,
    ArrayValue,
    raw_value,
)
from mgtui.trace.array_numpy import snapshot
from mgtui.trace.array_summary import all_zero_bits

NAN = math.nan
PRUNE_EVERY = 4096  # array nodes made between two prunings of `last`
PENDING_BYTES = 1 << 26  # big arrays' copies that may wait to be summarised (`_taken`)
# A node's array from which the collector runs as often as in the plain run
# (`mgtui.recording.sandbox.collect_as_found`): glibc's default mmap threshold, from
# which an array freed late is memory given back and page-faulted in again
BIG_BYTES = 128 * 1024
# The ops whose backward step the array engine's explainer works out from their rule
# alone (`mgtui.trace.explain_arrays.local_rule`), as the scalar one does `KNOWN_OPS`
# (`+ * tanh exp relu **k`, skipped for every engine): a call of one on arrays reads
# nothing (`mgtui.recording.call_values`), its closure's node ids included, as a known
# op's. (The tensor lesson's `@`, `sum` and `mean`: ~20 µs of its step.)
RULED_OPS = frozenset({"@", "sum", "mean", "log"})


def _weak(x: object):
    """A weak reference to the array `x` (a strong one, as a call, where numpy cannot
    make a weak one)."""
    try:
        return ref(x)
    except TypeError:
        return lambda: x


class ArraySnapshots:
    """The arrays of one recording, by the row they belong to (see the module's
    docstring). `records` is the `Records` whose rows they stand beside."""

    def __init__(self, records, rows: tuple[int, int] = (7, 5)) -> None:
        self.records = records
        self.event_row, self.write_row = rows  # (`store.EVENT_ROW`, `WRITE_ROW`: see `write`)
        # by place (NODE, GRAD, EVENT, WRITE), in row order: index * 2 + side, and the value
        self.keys: tuple[list, list, list, list] = ([], [], [], [])
        self.values: tuple[list, list, list, list] = ([], [], [], [])
        # (each place's two lists by name too, for the hot paths: cut and taken back in place)
        self.node_keys, self.grad_keys, self.event_keys, self.write_keys = self.keys
        self.node_values, self.grad_values, self.event_values, self.write_values = self.values
        # The last snapshot of each field by `nid * 2 + field` (`Field.code`: 0 grad, 1 data),
        # and a weak reference to the live array it was taken of (`held`, `live`); those gone
        # are let go every `PRUNE_EVERY` nodes. (Two dicts by an int: no tuple a field.)
        self.last: dict[int, ArrayValue] = {}
        self.lives: dict[int, Any] = {}
        self.made_count = 0
        self.big = False  # a node was made with an array of `BIG_BYTES` or more
        self.unrecorded: dict[str, int] = {}  # type name -> values not recorded
        self.told: dict[str, int] = {}  # `unrecorded` as the last chunk had it
        self.zeros: dict[tuple, ArrayValue] = {}  # shape -> float64 zeros, shared
        self.zero_bytes: dict[int, bytes] = {}  # length -> that many zero bytes
        self.pending: list[ArrayValue] = []  # big arrays' copies, to summarise (`_taken`)
        self.pending_bytes = 0
        self.seen = False  # an array was taken (the store asks for chunks from then on)
        self.ndarray: type | None = None  # numpy's, once numpy is loaded
        self.f64: object = None  # its float64 dtype (that of nearly every array seen)
        self.f32: object = None  # and float32 (a torch tensor's)
        # (the runner's child cuts chunks in another thread: a cut's letting go and a
        # replay's taking back move entries, one at a time; appends need no lock)
        self.lock = threading.Lock()

    def __bool__(self) -> bool:
        return self.seen or bool(self.unrecorded)

    def unread(self, x: object) -> bool:
        """Is `x` an array (a numpy one)? A custom op's closure whose node field
        (`out.grad`, `self.data`) holds one at the closure code's first call holds one
        at every call: an array engine's fields are arrays. A call's values are numbers
        (`mgtui.recording.call_values`), so such a field is not read at the code's later
        calls (the tensor lesson's `@`, `sum` and `mean` read six: ~35 µs a step)."""
        return self.ndarray is not None and type(x) is self.ndarray

    # -- the probes' slow path -------------------------------------------------------------
    def snap(self, x: object) -> tuple[ArrayValue | None, object]:
        """(an `ArrayValue` of `x` if it is an array, else None; what its column holds)."""
        t = type(x)
        if t is self.ndarray:  # (the common case: a native float64 array, taken inline)
            dtype = x.dtype  # type: ignore[attr-defined]
            if dtype is self.f64 and x.size <= WHOLE_LIMIT:  # type: ignore[attr-defined]
                return ArrayValue(x.shape, "float64", x.tobytes()), NAN  # type: ignore[attr-defined]
            if dtype is self.f32 and x.size <= WHOLE_LIMIT:  # type: ignore[attr-defined]
                # (a torch tensor's, most often: inline too, its own bytes: `ArrayValue`)
                return ArrayValue(x.shape, "float32", x.tobytes()), NAN  # type: ignore[attr-defined]
            if x.dtype.kind in NUMERIC_KINDS:  # type: ignore[attr-defined]
                return self._taken(snapshot(x)), NAN
            return self._not_recorded(f"numpy array of {x.dtype}")  # type: ignore[attr-defined]
        if t is int or t is float:
            return None, x
        if x is None:  # a grad not written yet, or set to None between steps (as torch
            return None, 0.0  # does): the engine adds onto it as onto 0, so 0 it is
        np = sys.modules.get("numpy")
        if np is not None:
            if self.ndarray is None:
                self.ndarray, self.seen = np.ndarray, True  # (chunks are cut from now on)
                self.f64, self.f32 = np.dtype(np.float64), np.dtype(np.float32)
            if isinstance(x, np.ndarray):
                if x.dtype.kind in NUMERIC_KINDS:  # type: ignore[union-attr]
                    return self._taken(snapshot(x)), NAN
                return self._not_recorded(f"numpy array of {x.dtype}")  # type: ignore[union-attr]
            if isinstance(x, np.generic):
                if x.dtype.kind in NUMERIC_KINDS:  # type: ignore[union-attr]
                    return None, float(x)  # type: ignore[arg-type]
                return self._not_recorded(f"numpy {x.dtype}")  # type: ignore[union-attr]
        if t is bool:
            return None, float(x)  # type: ignore[arg-type]
        if not hasattr(x, "__len__") and not isinstance(x, complex):
            try:
                return None, float(x)  # type: ignore[arg-type]
            except (TypeError, ValueError, OverflowError):
                pass
        return self._not_recorded(f"{t.__module__}.{t.__qualname__}"
                                  if t.__module__ != "builtins" else t.__qualname__)

    def _taken(self, value: ArrayValue) -> ArrayValue:
        """A snapshot just taken: a big array's copy (`ArrayValue.pending`) waits to be
        summarised as its chunk is cut (by the runner's flusher, in its own thread), or
        here once the copies waiting pass `PENDING_BYTES`."""
        raw = value.raw
        if raw is not None:
            self.pending.append(value)
            self.pending_bytes += raw.nbytes
            if self.pending_bytes > PENDING_BYTES:
                self.settle()
        return value

    def settle(self) -> None:
        """Summarise the big arrays' copies waiting (`_taken`), and let them go."""
        with self.lock:
            pending, self.pending, self.pending_bytes = self.pending, [], 0
        for value in pending:
            value.settle()

    def _not_recorded(self, name: str) -> tuple[None, float]:
        self.unrecorded[name] = self.unrecorded.get(name, 0) + 1
        return None, NAN

    def _grad_value(self, grad: object) -> ArrayValue | None:
        """The snapshot of a grad a node is made with: float64 zeros (as most grads
        start) shared, one value for each shape, told by their bytes (`ndarray.any`
        takes 2 µs)."""
        is_f64 = type(grad) is self.ndarray and grad.dtype is self.f64  # type: ignore[attr-defined]
        if is_f64 and grad.size <= WHOLE_LIMIT:  # type: ignore[attr-defined]
            raw = grad.tobytes()  # type: ignore[attr-defined]
            zeros = self.zero_bytes.get(len(raw))
            if zeros is None:
                zeros = self.zero_bytes[len(raw)] = bytes(len(raw))
            if raw == zeros:
                shape = grad.shape  # type: ignore[attr-defined]
                value = self.zeros.get(shape)
                if value is None:
                    value = self.zeros[shape] = ArrayValue(shape, "float64", raw)
                return value
            return ArrayValue(grad.shape, "float64", raw)  # type: ignore[attr-defined]
        g: Any = grad  # (a big one of floats, zeros: one summary for each shape and dtype,
        if (type(g) is self.ndarray and g.dtype.kind == "f" and g.size > WHOLE_LIMIT  # shared)
                and 0 not in g.strides and all_zero_bits(g)):
            key = (g.shape, g.dtype.char)
            value = self.zeros.get(key)
            if value is None:
                value = self.zeros[key] = snapshot(g)
                value.settle()
            return value
        value, _ = self.snap(grad)
        return value

    def made(self, nid: int, data: object, grad: object = None) -> object:
        """Node `nid` made with `data`, which is not a float: what its column holds.
        An array node's grad (zeros, most often) is taken too: its first write's
        before. (The common case, a float64 array and float64 zeros, is written out
        here: this runs for each node of a tensor engine. A lesson's arrays are small:
        its cost is the calls, each attribute read once.)"""
        x: Any = data
        ndarray = self.ndarray
        if type(x) is ndarray and x.size <= WHOLE_LIMIT and (
                (dtype := x.dtype) is self.f64 or dtype is self.f32):  # (as `snap`: inline,
            value: Any = x.copy()  # a raw copy: see the module's docstring)
            live: Any = ref(x)
        else:
            value, column = self.snap(data)
            if value is None:
                return column
            live = ref(data) if type(data) is self.ndarray else _weak(data)
        if not self.big and x.nbytes >= BIG_BYTES:  # (`x` is a numpy array here)
            self.big = True  # (the scenario's garbage cycles hold big arrays: collected
            collect_as_found()  # as often as in its plain run)
        count = self.made_count = self.made_count + 1
        if not count % PRUNE_EVERY:
            self.prune()
        key = nid + nid
        self.node_keys.append(key)
        self.node_values.append(value)
        last, lives = self.last, self.lives
        last[key + 1] = value
        lives[key + 1] = live
        g: Any = grad
        if type(g) is ndarray and g.dtype is self.f64 and g.size <= WHOLE_LIMIT:
            raw = g.tobytes()  # (zeros, as most grads start: one value for each shape)
            shape = g.shape
            gvalue = self.zeros.get(shape)
            if gvalue is None or raw != gvalue._values:  # (not those zeros: the first
                if (gvalue is None or type(gvalue._values) is not bytes) and (  # zeros of
                        raw.count(0) == len(raw)):  # this shape, or other values)
                    gvalue = self.zeros[shape] = ArrayValue(shape, "float64", raw)
                else:
                    gvalue = ArrayValue(shape, "float64", raw)
            glive = ref(g)
        elif grad is None or type(grad) is float:
            return NAN
        else:
            gvalue = self._grad_value(grad)
            if gvalue is None:
                return NAN
            glive = _weak(grad)
        self.grad_keys.append(key)
        self.grad_values.append(gvalue)
        last[key] = gvalue
        lives[key] = glive
        return NAN

    def write(self, nid: int, field: int, before: object, value: object) -> tuple[object, object]:
        """A write of `value` (not a float) over `before` into node `nid`'s field
        (`Field.code`: 0 grad, 1 data), about to be appended as a row (a `_backward`'s
        write while `records.stack` is not empty, else an event): (before, after) as the
        row holds them. (Its common case, `x.grad += g` on a float64 array whose last
        snapshot is kept, is written out first.)"""
        x: Any = value
        key = nid + nid + field
        last = self.last
        entry = last.get(key)
        if type(x) is self.ndarray and x.size <= WHOLE_LIMIT and (
                (dtype := x.dtype) is self.f64 or dtype is self.f32):  # (as `made`: a raw
            after_value: Any = x.copy()  # copy)
            if entry is not None and value is before and self.lives[key]() is x:  # (`+=`)
                last[key] = after_value
                records = self.records
                if records.stack:  # (`records.write_count()`, without the call)
                    index = records.packed.writes + len(records.writes) // self.write_row
                    index += index
                    self.write_keys += (index, index + 1)
                    self.write_values += (entry, after_value)
                else:
                    index = records.packed.events + len(records.events) // self.event_row
                    index += index
                    self.event_keys += (index, index + 1)
                    self.event_values += (entry, after_value)
                return NAN, NAN
            after: object = NAN
        else:
            after_value, after = self.snap(value)
        if before is None:  # (a grad not written yet: 0, as `snap` says)
            before = 0.0
        before_value = held = None
        if entry is not None and before is self.lives[key]():
            if value is before:  # (`+=`: the same array, whose reference is kept)
                held = self.lives[key]
            before_value, before = entry, NAN
        elif type(before) is not float and type(before) is not int:
            before_value, before = self.snap(before)
        if after_value is not None:
            last[key] = after_value
            self.lives[key] = held or (ref(value) if type(value) is self.ndarray else _weak(value))
        elif entry is not None:
            del last[key], self.lives[key]
        if before_value is not None or after_value is not None:
            if self.records.stack:
                index = self.records.write_count()
                keys, values = self.write_keys, self.write_values
            else:
                index = self.records.event_count()
                keys, values = self.event_keys, self.event_values
            index += index
            if before_value is not None:
                keys.append(index)
                values.append(before_value)
            if after_value is not None:
                keys.append(index + 1)
                values.append(after_value)
        return before, after

    def taken_node(self, nid: int, value: object) -> object:
        """`made`, for a value taken already (the torch adapter's, `torch_backward.taken`):
        an `ArrayValue` is kept as it is, with no `last` (the adapter keeps what it took)."""
        if type(value) is not ArrayValue:
            return self.made(nid, value)
        self.seen = True
        self.keys[NODE].append(nid + nid)
        self.values[NODE].append(value)
        return NAN

    def taken_write(self, before: object, value: object) -> tuple[object, object]:
        """`write`, for values taken already (as `taken_node`): each a float, an
        `ArrayValue` kept as it is, or what `snap` takes; no `last` kept."""
        old = new = None
        if type(before) is not float:
            old, before = (before, NAN) if type(before) is ArrayValue else self.snap(before)
        if type(value) is not float:
            new, value = (value, NAN) if type(value) is ArrayValue else self.snap(value)
        self.seen = True
        records = self.records
        place = WRITE if records.stack else EVENT
        row = records.write_count() if place == WRITE else records.event_count()
        keys, values = self.keys[place], self.values[place]
        if old is not None and new is not None:
            keys += (row + row, row + row + 1)
            values += (old, new)
        elif old is not None or new is not None:  # (one side: a before, or an after)
            keys.append(row + row + (old is None))
            values.append(old if new is None else new)
        return before, value

    def prune(self) -> None:
        """Let go of the last snapshots of arrays the engine has let go of (on the
        recording's thread: the only one that changes `last`)."""
        last, lives = self.last, self.lives
        for key in [key for key, held in lives.items() if held() is None]:
            del last[key], lives[key]

    def live(self, nid: int, field: int) -> Any:
        """`held`'s weak reference alone (no value made of a raw copy), or None."""
        return self.lives.get(nid + nid + field)

    def held(self, nid: int, field: int) -> tuple[Any, ArrayValue] | None:
        """(a weak reference to the live array, its snapshot) of node `nid`'s `field`
        as last taken (`last`), or None. (A raw copy is given as its `ArrayValue`.)"""
        key = nid + nid + field
        value = self.last.get(key)
        if value is None:
            return None
        return self.lives[key], value if type(value) is ArrayValue else raw_value(value)

    def kept_last(self) -> tuple[dict, dict] | None:
        """The last snapshots (`last`, `lives`), copied, to put back (`put_back`) after
        what follows is taken back (a `before_backward` hook's replay); None if none."""
        return (dict(self.last), dict(self.lives)) if self.last else None

    def put_back(self, kept: tuple[dict, dict]) -> None:
        self.last, self.lives = kept

    def late_before(self, place: int, index: int, before: object) -> None:
        """A float was written over the array `before` (seen as its chunk is cut)."""
        value, _ = self.snap(before)
        if value is not None:
            keys = self.keys[place]
            at = bisect_right(keys, index + index)
            keys.insert(at, index + index)
            self.values[place].insert(at, value)

    # -- taking back, cutting ----------------------------------------------------------------
    def forget_since(self, nodes: int, events: int, writes: int) -> None:
        with self.lock:
            for keys, values, first in zip(self.keys, self.values,
                                           (nodes, nodes, events, writes)):
                if keys and keys[-1] >= first + first:
                    at = bisect_left(keys, first + first)
                    del keys[at:], values[at:]

    def chunk(self, since, upto) -> ArrayChunk | None:
        """The arrays of the rows between two `Mark`s, as an `ArrayChunk` (None if none,
        and nothing new unrecorded); those of rows before `since` are let go. Values
        shared by two rows (a write's after, the next one's before) are one
        `ArrayValue`."""
        if not self:
            return None
        if self.pending:
            self.settle()
        columns = []
        bounds = ((since.nodes, upto.nodes), (since.nodes, upto.nodes),
                  (since.events, upto.events), (since.writes, upto.writes))
        with self.lock:
            for place, (lo, hi) in enumerate(bounds):
                keys, values = self.keys[place], self.values[place]
                n = len(values)  # (the recording's thread may append meanwhile: a key
                if not n:        # goes in before its value)
                    columns.append(([], []))
                    continue
                lo, hi = lo + lo, hi + hi
                a = bisect_left(keys, lo, 0, n) if keys[0] < lo else 0
                b = bisect_left(keys, hi, a, n) if keys[n - 1] >= hi else n
                columns.append((keys[a:b], values[a:b]))
                if a:
                    del keys[:a], values[:a]
        unrecorded = dict(self.unrecorded)
        if not any(keys for keys, _ in columns) and unrecorded == self.told:
            return None
        self.told = unrecorded
        return ArrayChunk(columns=tuple(columns), unrecorded=tuple(sorted(unrecorded.items())))
