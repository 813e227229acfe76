"""Array values as a recording takes them: snapshots of a tensor engine's numpy arrays,
made as each node is made and each field written, kept beside the record columns
(`Records.arrays`) and cut into `mgtui.trace.arrays.ArrayChunk`s with the rest.

The probes' hot paths make one check, `type(value) is float`, and call in here only
for a value that is not a float (an array, an int, a numpy scalar...); a scalar engine
never comes here but for its few int writes (`grad = 1`, `grad = 0`).

Arrays are copied as they are recorded (one `ndarray.copy()`, at C speed; no work per
element on the hot path): a numpy engine changes them in place. `self.grad += g` runs
`ndarray.__iadd__`, then sets the field to the same object, so the "before" a probe
sees has changed already: a write's before is taken from the last snapshot of that
field (`last`, by node and field, kept with the live object it was taken of) when the
before is that same object. A float written over an array (`p.grad = 0.0`) is seen only
when its chunk is cut (the hot path checks the value written, not the one before): the
array it replaced is copied then, which is right unless the scenario changed that array
in place after it left the node (a one-element array there becomes its number).

A value that is neither a number nor a numpy array of numbers (bool, ints or floats)
is not recorded: its column holds nan, and `unrecorded` counts it by type, which the
trace says out loud (`ArrayTable.unrecorded_note`).

For other probes (a torch graph): `made(nid, data, grad)` and `write(nid, field, before,
value)` take any numpy array; convert a tensor first (`t.detach().cpu().numpy()`).
"""

from __future__ import annotations

import math
import sys

from mgtui.trace.arrays import (
    EVENT,
    GRAD,
    NODE,
    NUMERIC_KINDS,
    WRITE,
    ArrayChunk,
    from_numpy_many,
)

NAN = math.nan


class ArraySnapshots:
    """The arrays of one recording, by the row they belong to (see the module's
    docstring). `records` is the `Records` whose rows they stand beside."""

    def __init__(self, records) -> None:
        self.records = records
        self.nodes: dict[int, object] = {}  # nid -> the data it was made with (a copy)
        self.grads: dict[int, object] = {}  # nid -> the grad it was made with
        self.events: dict[int, list] = {}  # event -> [before, after], None for a float
        self.writes: dict[int, list] = {}  # write -> [before, after]
        self.last: dict[tuple[int, int], tuple[object, object]] = {}  # (nid, field) ->
        #                                       (the live array, the copy taken of it)
        self.unrecorded: dict[str, int] = {}  # type name -> values not recorded
        self.told: dict[str, int] = {}  # `unrecorded` as the last chunk had it
        self.zeros: dict[tuple, object] = {}  # (shape, dtype) -> a copy of zeros, shared

    def __bool__(self) -> bool:
        return bool(self.nodes or self.events or self.writes or self.unrecorded)

    # -- the probes' slow path -------------------------------------------------------------
    def snap(self, x: object) -> tuple[object, object]:
        """(a copy of `x` if it is an array, else None; what its column holds)."""
        t = type(x)
        if t is int or t is float:
            return None, x
        np = sys.modules.get("numpy")
        if np is not None:
            if t is np.ndarray or isinstance(x, np.ndarray):
                if x.dtype.kind in NUMERIC_KINDS:  # type: ignore[union-attr]
                    return x.copy(), NAN  # type: ignore[union-attr]
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

    def _not_recorded(self, name: str) -> tuple[None, float]:
        self.unrecorded[name] = self.unrecorded.get(name, 0) + 1
        return None, NAN

    def made(self, nid: int, data: object, grad: object = None) -> object:
        """Node `nid` made with `data`, which is not a float: what its column holds.
        An array node's grad (zeros, most often) is copied too: its first write's
        before."""
        copy, column = self.snap(data)
        if copy is None:
            return column
        self.nodes[nid] = copy
        self.last[(nid, 1)] = (data, copy)
        gcopy, _ = self.snap(grad) if grad is not None else (None, 0.0)
        if gcopy is not None:
            if not gcopy.any():  # zeros (as most grads start): one copy for each shape
                gcopy = self.zeros.setdefault((gcopy.shape, gcopy.dtype), gcopy)
            self.grads[nid] = gcopy
            self.last[(nid, 0)] = (grad, gcopy)
        return column

    def write(self, nid: int, field: int, before: object, value: object) -> tuple[object, object]:
        """A write of `value` (not a float) over `before` into node `nid`'s field
        (`Field.code`: 0 grad, 1 data), about to be appended as a row (a `_backward`'s
        write while `records.stack` is not empty, else an event): (before, after) as the
        row holds them."""
        after_copy, after = self.snap(value)
        key = (nid, field)
        last = self.last.get(key)
        before_copy = None
        if last is not None and before is last[0]:
            before_copy, before = last[1], NAN
        elif before is not None and type(before) is not float and type(before) is not int:
            before_copy, before = self.snap(before)
        if after_copy is not None:
            self.last[key] = (value, after_copy)
        elif last is not None:
            del self.last[key]
        if before_copy is not None or after_copy is not None:
            records = self.records
            if records.stack:
                self.writes[records.write_count()] = [before_copy, after_copy]
            else:
                self.events[records.event_count()] = [before_copy, after_copy]
        return before, after

    def late_before(self, place: int, index: int, before: object) -> None:
        """A float was written over the array `before` (seen as its chunk is cut)."""
        copy, _ = self.snap(before)
        if copy is not None:
            table = self.writes if place == WRITE else self.events
            table.setdefault(index, [None, None])[0] = copy

    # -- taking back, cutting ----------------------------------------------------------------
    def forget_since(self, nodes: int, events: int, writes: int) -> None:
        for table, first in ((self.nodes, nodes), (self.grads, nodes), (self.events, events),
                             (self.writes, writes)):
            for k in [k for k in table if k >= first]:
                del table[k]

    def chunk(self, since, upto) -> ArrayChunk | None:
        """The arrays of the rows between two `Mark`s, as an `ArrayChunk` (None if none,
        and nothing new unrecorded). Copies shared by two rows (a write's after, the
        next one's before) become one `ArrayValue`."""
        if not self:
            return None
        # (The runner's child cuts chunks in another thread while the scenario records:
        # each table is copied first, in one C call, not iterated while it may grow.)
        found = []  # (place, index, side, copy)
        for place, table, lo, hi in ((NODE, self.nodes, since.nodes, upto.nodes),
                                     (GRAD, self.grads, since.nodes, upto.nodes)):
            found += [(place, k, 0, c) for k, c in list(table.items()) if lo <= k < hi]
        for place, table, lo, hi in ((EVENT, self.events, since.events, upto.events),
                                     (WRITE, self.writes, since.writes, upto.writes)):
            for k, pair in list(table.items()):
                if lo <= k < hi:
                    found += [(place, k, side, c) for side, c in enumerate(tuple(pair))
                              if c is not None]
        copies = list({id(entry[3]): entry[3] for entry in found}.values())  # each once
        values = dict(zip(map(id, copies), from_numpy_many(copies)))
        entries = [(entry[0], entry[1], entry[2], values[id(entry[3])]) for entry in found]
        unrecorded = dict(self.unrecorded)
        if not entries and unrecorded == self.told:
            return None
        self.told = unrecorded
        return ArrayChunk(tuple(entries), tuple(sorted(unrecorded.items())))
