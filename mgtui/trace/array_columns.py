"""Array values kept as columns (issue 32): what a version 5 A record holds and what a
trace loaded from one keeps, with no Python object a value until a reader asks for it.

A record's arrays are two tables. The *values*, each array once (a recording shares one
value between a write's after and the next write's before, and one float64 zeros for
each shape): a code into `shapes` and one into `dtypes`, how many elements it keeps
(`kept`: all of them if whole, else its first few), whether it is whole, where its
elements start in `values` (one float64 buffer), and for a summarised one its row of
`stats` (min, max, mean, norm) and `counts` (nonfinite, basis). The *entries*: for each
place (node data, node grad, event, write), its keys in order (the index, or index * 2 +
side for events and writes, as `mgtui.trace.arrays.ArrayTable` keys them) and the value
row of each. `LazyValues` serves a place's entries as a mapping, making an
`ArrayValue` of a row when it is first read (`make`, given by `mgtui.trace.arrays`).

This module needs neither numpy nor `mgtui.trace.arrays`: the checks run over `array`
columns at C speed.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from itertools import accumulate
from typing import Callable, Iterator

PLACES = 4


class StoredArrays:
    """The values table of one record (see the module's docstring), checked by
    `mgtui.trace.table.decode_arrays` before it is made."""

    __slots__ = ("shapes", "dtypes", "shape_codes", "dtype_codes", "kept", "whole",
                 "_starts", "_stat_rows", "stats", "counts", "values", "made")

    def __init__(self, shapes: list[tuple[int, ...]], dtypes: list[str], shape_codes: array,
                 dtype_codes: array, kept: array, whole: bytes, stats: array, counts: array,
                 values: array) -> None:
        self.shapes, self.dtypes = shapes, dtypes
        self.shape_codes, self.dtype_codes, self.kept, self.whole = (
            shape_codes, dtype_codes, kept, whole)
        self.stats, self.counts, self.values = stats, counts, values
        self._starts: array | None = None  # (worked out when first needed)
        self._stat_rows: array | None = None
        self.made: dict = {}  # row -> its value, once made (two keys share a row's)

    @property
    def starts(self) -> array:
        """Where each value's elements start in `values`."""
        if self._starts is None:
            self._starts = array("q", accumulate(self.kept, initial=0))
        return self._starts

    @property
    def stat_rows(self) -> array:
        """Each value's row of `stats` (a summarised one's)."""
        if self._stat_rows is None:
            self._stat_rows = array("q", accumulate(self.whole.translate(_FLIP), initial=0))
        return self._stat_rows

    def __len__(self) -> int:
        return len(self.kept)

    def parts(self, row: int) -> tuple:
        """(shape, dtype, elements kept, whole, summary or None, basis) of value `row`."""
        start = self.starts[row]
        flat = self.values[start:start + self.kept[row]]
        shape, dtype = self.shapes[self.shape_codes[row]], self.dtypes[self.dtype_codes[row]]
        if self.whole[row]:
            return shape, dtype, flat, True, None, 0
        s = self.stat_rows[row]
        low, high, mean, norm = self.stats[4 * s:4 * s + 4]
        bad, basis = self.counts[2 * s:2 * s + 2]
        return shape, dtype, flat, False, (low, high, mean, norm, bad), basis

    def shape(self, row: int) -> tuple[int, ...]:
        return self.shapes[self.shape_codes[row]]


_FLIP = bytes([1, 0]) + bytes(254)  # whole (1) -> 0, summarised (0) -> 1
_HALF = (1).__rrshift__  # k -> k >> 1: a node place's key from a recording's, in a `map`


class LazyValues:
    """One place's arrays by key, as a mapping: those given one by one (`update`), those
    given as a recording's columns (`add_given`: its keys and values, taken in whole),
    and those of stored records (`add_stored`), each made into a value as it is first
    read and kept. Where two give the same key, the last given wins.

    A segment is (keys, rows, store): a stored record's keys and value rows (`store` a
    `StoredArrays`); or a recording's keys, in order, its values as `store` (a list)
    and as `rows` the factor its keys are scaled by (2 for a node's place, whose keys
    are the id times two, 1 for the others). A recording's value may be a raw copy of
    the array (`mgtui.recording.array_values`): `given` makes it a value as it is read
    (None: read as it is)."""

    __slots__ = ("made", "segments", "make", "gone", "given")

    def __init__(self, make: Callable | None = None, given: Callable | None = None) -> None:
        self.made: dict = {}
        self.segments: list[tuple] = []  # (keys: an array or a range, rows, store)
        self.make = make
        self.gone: set[int] = set()  # stored keys taken out (a stream cut short)
        self.given = given

    def add_stored(self, keys: array, rows: array, store: StoredArrays) -> None:
        if keys:
            if self.made:  # (given again: the stored one wins)
                for key in self.made.keys() & set(keys):
                    del self.made[key]
            if self.gone:
                self.gone.difference_update(keys)
            self.segments.append((keys, rows, store))

    def add_given(self, keys: list, values: list, scale: int) -> None:
        """A recording's keys (in order, each `scale` times this table's key) and the
        values beside them, kept as they are: no work a value."""
        if keys:
            if self.made:  # (given again: these win)
                for key in self.made.keys() & set(map(_HALF, keys) if scale == 2 else keys):
                    del self.made[key]
            if self.gone:
                self.gone.difference_update(map(_HALF, keys) if scale == 2 else keys)
            self.segments.append((keys, scale, values))

    def _find(self, key: int) -> tuple[StoredArrays | list, int] | None:
        if key in self.gone:
            return None
        for keys, rows, store in reversed(self.segments):
            if type(store) is list:  # (a recording's: `add_given`; a node place's keys,
                low = key * rows  # `key` * 2 plus a side: the last one given wins)
                if keys[0] <= low + rows - 1 and low <= keys[-1]:
                    k = bisect_right(keys, low + rows - 1) - 1
                    if k >= 0 and keys[k] >= low:
                        return store, k
            elif keys[0] <= key <= keys[-1]:
                k = bisect_left(keys, key)
                if keys[k] == key:  # (keys and rows: array('i'), as a file gives them)
                    return store, rows[k]
        return None

    def get(self, key: int, default=None):
        value = self.made.get(key)
        if value is not None or not self.segments:
            return default if value is None else value
        found = self._find(key)
        if found is None:
            return default
        store, row = found
        if type(store) is list:
            return store[row] if self.given is None else self.given(store[row])
        value = self.made[key] = self.make(store, row)  # type: ignore[misc]
        return value

    def raw(self, key: int):
        """`get`, but a recording's raw copy as it is, not made a value (None if none)."""
        value = self.made.get(key)
        if value is not None or not self.segments:
            return value
        found = self._find(key)
        if found is None:
            return None
        store, row = found
        return store[row] if type(store) is list else self.get(key)

    def shape(self, key: int) -> tuple[int, ...] | None:
        """The shape of the value at `key`, without making the value."""
        value = self.made.get(key)
        if value is not None:
            return value.shape
        found = self._find(key) if self.segments else None
        if found is None:
            return None
        store, row = found
        return store[row].shape if type(store) is list else store.shape(row)

    def __getitem__(self, key: int):
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self.made or (bool(self.segments) and type(key) is int
                                    and self._find(key) is not None)

    def keys(self) -> list[int]:
        """Every key, in order."""
        if not self.segments:
            return sorted(self.made)
        found = set(self.made)
        for keys, rows, store in self.segments:
            found.update(map(_HALF, keys) if type(store) is list and rows == 2 else keys)
        return sorted(found - self.gone)

    def __iter__(self) -> Iterator[int]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys()) if self.segments else len(self.made)

    def __bool__(self) -> bool:
        return bool(self.made) or any(keys for keys, _rows, _store in self.segments)

    def items(self) -> Iterator[tuple[int, object]]:
        for key in self.keys():
            yield key, self[key]

    def update(self, pairs) -> None:
        made = self.made
        made.update(pairs)
        if self.gone:
            self.gone.difference_update(made)

    def __setitem__(self, key: int, value) -> None:
        self.made[key] = value
        self.gone.discard(key)

    def __delitem__(self, key: int) -> None:
        found = self.made.pop(key, None)
        if self.segments and self._find(key) is not None:
            self.gone.add(key)
        elif found is None:
            raise KeyError(key)

    def copy(self) -> LazyValues:
        out = LazyValues(self.make, self.given)
        out.made, out.segments, out.gone = dict(self.made), list(self.segments), set(self.gone)
        return out


class FieldIndex:
    """The writes (inside `_backward` calls) and lone writes (grad and data events) of
    each node, in columns sorted by node once, at C speed: a field's history is found
    when it is first asked for (`history`), not built for every field of a trace."""

    def __init__(self, wr_node: array, wr_field: array, starts: array, lone_at: array,
                 ev_node: array, ev_kind: array, grad_kind: int) -> None:
        self.wr_field, self.starts, self.ev_kind, self.grad_kind = (
            wr_field, starts, ev_kind, grad_kind)
        order = sorted(range(len(wr_node)), key=wr_node.__getitem__)  # (stable: in order)
        self.w_order, self.w_nodes = array("i", order), array("i", map(wr_node.__getitem__, order))
        lone_nodes = array("i", map(ev_node.__getitem__, lone_at))
        order = sorted(range(len(lone_at)), key=lone_nodes.__getitem__)
        self.l_events = array("i", map(lone_at.__getitem__, order))
        self.l_nodes = array("i", map(lone_nodes.__getitem__, order))

    def history(self, nid: int, grad: bool) -> tuple[list[int], list[int]]:
        """(the events that wrote node `nid`'s grad or data, in order; for each, where
        what it left is kept: a write's key in `ArrayTable.writes`, or ~ an event's key
        in `ArrayTable.events`)."""
        events: list[int] = []
        refs: list[int] = []
        a, b = bisect_left(self.w_nodes, nid), bisect_right(self.w_nodes, nid)
        starts, fields = self.starts, self.wr_field
        for w in self.w_order[a:b]:
            if (fields[w] == 0) == grad:
                events.append(bisect_right(starts, w) - 1)
                refs.append(w + w + 1)
        a, b = bisect_left(self.l_nodes, nid), bisect_right(self.l_nodes, nid)
        for index in self.l_events[a:b]:
            if (self.ev_kind[index] == self.grad_kind) == grad:
                k = bisect_right(events, index)
                events.insert(k, index)
                refs.insert(k, ~(index + index + 1))
        return events, refs
