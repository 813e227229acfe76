"""The A record of version 5 on: array values as columns (`mgtui.trace.array_columns`),
written from an `ArrayChunk` and read back, checked, into a `StoredChunk` that a
`TraceBuilder` takes whole, with no Python object a value (`mgtui.trace.table` frames
and compresses it; versions 3 and 4 wrote JSON entries, still read there).

    u32 entries of each place (node data, node grad, event, write: n in all), u32
    values m, u32 summaries s, u32 elements e
    key i32[n], value row i32[n]: each place's, in turn, keys increasing (the index;
    for events and writes index * 2 + side, 0 the before, 1 the after)
    shape code i32[m], dtype code u16[m], kept i32[m], whole u8[m]
    stats f64[4s] (min, max, mean, norm), counts i64[2s] (nonfinite, basis)
    elements f64[e] (each value's kept ones in turn)
    JSON {"shapes": [[...], ...], "dtypes": [...], "unrecorded": [[type, count], ...]}
"""

from __future__ import annotations

import json
import struct
import sys
from array import array
from itertools import compress
from typing import NamedTuple

from mgtui.trace import TraceFormatError, fields, lanes
from mgtui.trace.array_columns import StoredArrays
from mgtui.safe import inert_line
from mgtui.trace.arrays import (
    EVENT,
    MAX_DIMS,
    PLACE_NAMES,
    SAMPLE,
    WHOLE_LIMIT,
    ArrayChunk,
    joined_values,
    raw_parts,
)
from mgtui.trace.records import _DATA, _GRAD
from mgtui.trace.load_limits import LoadLimits

_HEAD = struct.Struct("<IIIIIII")
_BIG = sys.byteorder == "big"
_FLIP = bytes([1, 0]) + bytes(254)
WHERE = "record A"
WRITE_KINDS = frozenset((_GRAD, _DATA))  # the events an array may stand beside


class StoredChunk(NamedTuple):
    """A version 5 A record, read: its values, and for each place (keys, value rows)."""

    store: StoredArrays
    places: list[tuple[array, array]]
    unrecorded: tuple[tuple[str, int], ...]


def _le(a: array) -> bytes:
    if _BIG:
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def payload(chunk: ArrayChunk) -> bytes:
    """An A record's payload (uncompressed): each value once (by identity)."""
    rows_of: dict[int, int] = {}
    unique: list = []
    keys: list[array] = [array("i") for _ in PLACE_NAMES]
    rows: list[array] = [array("i") for _ in PLACE_NAMES]
    for place, index, side, v in sorted(chunk.raw_entries, key=_order):  # (raw copies too)
        row = rows_of.get(id(v))
        if row is None:
            row = rows_of[id(v)] = len(unique)
            unique.append(v)
        keys[place].append(index + index + side if place >= EVENT else index)
        rows[place].append(row)
    shapes: dict = {}
    dtypes: dict = {}
    shape_codes, dtype_codes, kept = array("i"), array("H"), array("i")
    whole, stats, counts = bytearray(), array("d"), array("q")
    values = joined_values(unique)  # (settles any big value's summary first)
    for v in unique:
        shape, dtype, n, is_whole = raw_parts(v)
        shape_codes.append(shapes.setdefault(tuple(shape), len(shapes)))
        dtype_codes.append(dtypes.setdefault(dtype, len(dtypes)))
        kept.append(n)
        whole.append(1 if is_whole else 0)
        if not is_whole:
            low, high, mean, norm, bad = v.summary
            stats.extend((low, high, mean, norm))
            counts.extend((int(bad), int(v.basis)))
    meta = json.dumps({"shapes": [list(s) for s in shapes], "dtypes": list(dtypes),
                       "unrecorded": [list(p) for p in chunk.unrecorded]},
                      ensure_ascii=True, allow_nan=False).encode()
    return b"".join((_HEAD.pack(*map(len, keys), len(unique), len(stats) // 4, len(values)),
                     *map(_le, keys), *map(_le, rows), _le(shape_codes), _le(dtype_codes),
                     _le(kept), bytes(whole), _le(stats), _le(counts), _le(values), meta))


def _order(entry: tuple) -> tuple[int, int]:
    return entry[0], entry[1] + entry[1] + entry[2]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = memoryview(data), 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.at + n > len(self.data):
            raise TraceFormatError(WHERE, "ends too soon")
        piece = self.data[self.at:self.at + n]
        self.at += n
        return piece

    def column(self, typecode: str, count: int) -> array:
        a = array(typecode)
        a.frombytes(self.take(a.itemsize * count))
        if _BIG:
            a.byteswap()
        return a

    def rest(self) -> bytes:
        return bytes(self.take(len(self.data) - self.at))


def decode(raw: bytes, limits: LoadLimits | None = None) -> StoredChunk:
    """An A record's payload (inflated), every column checked (at C speed: no value is
    made here; `mgtui.trace.arrays.ArrayTable` makes each as it is read)."""
    r = _Reader(raw)
    *per_place, m, s, e = _HEAD.unpack(r.take(_HEAD.size))
    n = sum(per_place)
    if limits is not None:
        limits.take_arrays(0, e + (18 * m + 8 * n) // 8)
    keys, rows = r.column("i", n), r.column("i", n)
    shape_codes, dtype_codes, kept = r.column("i", m), r.column("H", m), r.column("i", m)
    whole = bytes(r.take(m))
    stats, counts, values = r.column("d", 4 * s), r.column("q", 2 * s), r.column("d", e)
    text = r.rest()
    if limits is not None:
        limits.take_text(len(text))
    try:
        meta = fields.obj(json.loads(str(text, "utf-8")), "arrays")
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise TraceFormatError(WHERE, f"not valid JSON ({exc})") from None
    shapes = [_shape(x, k) for k, x in enumerate(fields.seq(meta.get("shapes"), "arrays.shapes"))]
    dtypes = [_dtype(x, k) for k, x in enumerate(fields.seq(meta.get("dtypes"), "arrays.dtypes"))]
    if not lanes.below(rows, min(m, 1 << 31)):
        raise TraceFormatError(WHERE, "an entry refers to a value that is not there")
    _check_values(shapes, dtypes, shape_codes, dtype_codes, kept, whole, s, e)
    sizes = [_size(shape) for shape in shapes]
    summarised = list(map(sizes.__getitem__, compress(shape_codes, whole.translate(_FLIP))))
    if min(counts[0::2], default=0) < 0 or any(
            abs(b) > size for b, size in zip(counts[1::2], summarised)):
        raise TraceFormatError(WHERE, "a summary's nonfinite count or basis does not fit")
    unrecorded = []
    for k, pair in enumerate(fields.seq(meta.get("unrecorded", []), "arrays.unrecorded")):
        pair = fields.seq(pair, f"arrays.unrecorded[{k}]")
        if len(pair) != 2:
            raise TraceFormatError(f"arrays.unrecorded[{k}]", "must be [type, count]")
        unrecorded.append((fields.text(pair[0], f"arrays.unrecorded[{k}]")[:80],
                           fields.index(pair[1], f"arrays.unrecorded[{k}]")))
    by_place, at = [], 0
    for count in per_place:
        k = keys[at:at + count]
        if lanes.negative(k) or count > 1 and not lanes.ordered(k[:-1], k[1:]):
            raise TraceFormatError(WHERE, "entries out of order, or one given twice")
        if count > 1 and k[-1] - k[0] == count - 1:  # (every one in a run: a range,
            k = range(k[0], k[-1] + 1)  # as an array trace's nodes most often are)
        by_place.append((k, rows[at:at + count]))
        at += count
    store = StoredArrays(shapes, dtypes, shape_codes, dtype_codes, kept, whole, stats,
                         counts, values)
    return StoredChunk(store, by_place, tuple(unrecorded))


def add_to(builder, stored: StoredChunk) -> None:
    """Give a `TraceBuilder` a record's columns, each place's keys checked against the
    records it has (a stream and a file send arrays after the rows they stand beside)."""
    counts = (builder.node_count, builder.node_count, builder.event_count,
              len(builder.wr_node))
    for place, (keys, _rows) in enumerate(stored.places):
        if not keys:
            continue
        last = keys[-1] >> 1 if place >= EVENT else keys[-1]
        if last >= counts[place]:
            raise TraceFormatError(WHERE, "refers to a record that is not there "
                                   f"({PLACE_NAMES[place]} {last})")
        if place == EVENT and not WRITE_KINDS.issuperset(
                map(builder.ev_kind.__getitem__, map((1).__rrshift__, keys))):
            raise TraceFormatError(WHERE, "an event that is not a grad or data write")
    unrecorded = tuple((inert_line(name), n) for name, n in stored.unrecorded)
    builder.arrays.add_stored(stored.store, stored.places, unrecorded)


def _check_values(shapes: list, dtypes: list, shape_codes: array, dtype_codes: array,
                  kept: array, whole: bytes, s: int, e: int) -> None:
    if shape_codes and (min(shape_codes) < 0 or max(shape_codes) >= len(shapes)):
        raise TraceFormatError(WHERE, "a value refers to a shape that is not there")
    if dtype_codes and max(dtype_codes) >= len(dtypes):
        raise TraceFormatError(WHERE, "a value refers to a dtype that is not there")
    if whole and max(whole) > 1 or whole.count(0) != s:
        raise TraceFormatError(WHERE, f"{whole.count(0):,} values summarised, {s:,} summaries")
    if kept and min(kept) < 0 or sum(kept) != e:
        raise TraceFormatError(WHERE, f"values keep {sum(kept):,} elements, not {e:,}")
    sizes = [_size(shape) for shape in shapes]
    of_whole = list(map(sizes.__getitem__, compress(shape_codes, whole)))
    if max(of_whole, default=0) > WHOLE_LIMIT or of_whole != list(compress(kept, whole)):
        raise TraceFormatError(WHERE, "a whole value's elements do not fill its shape")
    flip = whole.translate(_FLIP)
    if any(k > min(SAMPLE, sizes[c]) for k, c in zip(compress(kept, flip),
                                                     compress(shape_codes, flip))):
        raise TraceFormatError(WHERE, f"a summary keeps at most {SAMPLE} elements")


def _shape(x: object, k: int) -> tuple[int, ...]:
    dims = fields.seq(x, f"arrays.shapes[{k}]")
    if len(dims) > MAX_DIMS or not all(type(n) is int and 0 <= n < 1 << 40 for n in dims):
        raise TraceFormatError(f"arrays.shapes[{k}]", "is not a shape")
    return tuple(dims)


def _dtype(x: object, k: int) -> str:
    name = fields.text(x, f"arrays.dtypes[{k}]")
    if not name or len(name) > 32 or not fields.DTYPE_CHARS.issuperset(name):
        raise TraceFormatError(f"arrays.dtypes[{k}]", f"{fields.shown(name)} is not a dtype")
    return name


def _size(shape: tuple[int, ...]) -> int:
    size = 1
    for n in shape:
        size *= n
    return size
