"""Array values as columns (issue 32 point 2): a version 5 A record holds them as
columns, each value once; a loaded trace keeps the columns and makes a value only when
it is read; an old (version 4) file still opens; a hostile record is refused by name."""

from __future__ import annotations

import io
import json
import struct
import zlib
from array import array
from pathlib import Path

import pytest

from mgtui.recording.recorder import record
from mgtui.trace import TraceFormatError, export, table
from mgtui.trace import binary as tracefile
from mgtui.trace.arrays import ArrayValue

from tests.conftest import SCENARIOS

V4_NEURON = Path(__file__).parent.parent / "data" / "tensor-neuron-v4.mgtrace"  # by mgtui 459fef2


def flat(v) -> list[float]:
    assert isinstance(v, ArrayValue), v
    return list(v.values)


def lecture_neuron(t) -> None:
    """The lecture's neuron: x1.grad -1.5, x2.grad 0.5, w1.grad 1.0, w2.grad 0.0, b.grad
    0.5, o = tanh(n) = 0.7071."""
    (x,), (w,), (b,), (o,) = (t.find(label) for label in ("x", "w", "b", "o"))
    assert flat(t.values.final_value(x, True)) == pytest.approx([-1.5, 0.5], abs=1e-12)
    assert flat(t.values.final_value(w, True)) == pytest.approx([1.0, 0.0], abs=1e-12)
    assert flat(t.values.final_value(b, True)) == pytest.approx([0.5], abs=1e-12)
    assert flat(t.values.final_value(o, False)) == pytest.approx([0.7071067811865476], abs=1e-12)


def test_a_version_4_file_still_opens():
    assert V4_NEURON.read_bytes()[8:10] == b"\x04\x00"
    lecture_neuron(export.load(V4_NEURON))


def test_a_version_5_file_keeps_columns_and_makes_values_as_read():
    t = record(SCENARIOS / "tensor_neuron.py")
    data = tracefile.dumpb(t)
    assert data[8:10] == b"\x05\x00"
    back = tracefile.loadb(data)
    assert not back.arrays.nodes.made and back.arrays.nodes.segments  # nothing made yet
    lecture_neuron(back)
    assert back.arrays.nodes.made  # (made as read, and kept)
    again = list(back.arrays.entries())
    assert [(p, i, s) for p, i, s, _ in again] == [(p, i, s) for p, i, s, _ in t.arrays.entries()]
    assert all(v.same(w) for (_, _, _, v), (_, _, _, w) in zip(again, t.arrays.entries()))


def test_a_value_shared_by_many_entries_is_stored_once():
    t = record(SCENARIOS / "tensor_mlp.py")
    (payload,) = [p for tag, p in tracefile.records(io.BytesIO(tracefile.dumpb(t)))
                  if tag == table.ARRAYS]
    *places, m, _s, _e = struct.unpack("<IIIIIII", zlib.decompress(payload)[:28])
    n = sum(places)
    assert n == len(list(t.arrays.entries())) and m < n


def columns_record(entries: list[tuple], values: list[tuple], shapes: list, dtypes: list,
                   flat_values: list[float], stats=(), counts=()) -> bytes:
    """An A record of version 5 from its columns: entries (place, side, index, row),
    values (shape code, dtype code, kept, whole)."""
    def col(code, xs):
        return array(code, xs).tobytes()
    keys: list[list[int]] = [[], [], [], []]
    rows: list[list[int]] = [[], [], [], []]
    for place, side, index, row in entries:  # (in the order given, within each place)
        keys[place].append(index * 2 + side if place >= 2 else index)
        rows[place].append(row)
    sc, dc, kept, whole = (list(c) for c in zip(*values)) if values else ([],) * 4
    body = (struct.pack("<IIIIIII", *map(len, keys), len(values), len(stats) // 4,
                        len(flat_values))
            + b"".join(col("i", k) for k in keys) + b"".join(col("i", r) for r in rows)
            + col("i", sc) + col("H", dc) + col("i", kept) + bytes(whole)
            + col("d", stats) + col("q", counts) + col("d", flat_values)
            + json.dumps({"shapes": shapes, "dtypes": dtypes, "unrecorded": []}).encode())
    return table._record(table.ARRAYS, zlib.compress(body))


def with_record(record_: bytes) -> bytes:
    data = tracefile.dumpb(record(SCENARIOS / "tensor_neuron.py"))
    records = list(tracefile.records(io.BytesIO(data)))
    body = b"".join(table._record(tag, p) for tag, p in records[:-1])
    return data[:table.HEAD_SIZE] + body + record_ + table._record(*records[-1])


GOOD = dict(entries=[(0, 0, 0, 0)], values=[(0, 0, 2, 1)], shapes=[[2]], dtypes=["float64"],
            flat_values=[1.0, 2.0])
HOSTILE = {
    "a value that does not fill its shape": (dict(values=[(0, 0, 1, 1)], flat_values=[1.0]),
                                             "do not fill"),
    "a shape that is not there": (dict(values=[(5, 0, 2, 1)]), "shape that is not there"),
    "markup for a dtype": (dict(dtypes=["[red]x"]), "dtype"),
    "a node that is not there": (dict(entries=[(0, 0, 999, 0)]), "not there"),
    "an entry to a value that is not there": (dict(entries=[(0, 0, 0, 7)]), "not there"),
    "an event that is no write": (dict(entries=[(2, 0, 0, 0)]), "not a grad or data write"),
    "entries out of order": (dict(entries=[(0, 0, 1, 0), (0, 0, 0, 0)]), "out of order"),
    "too many dimensions": (dict(shapes=[[1] * 40]), "not a shape"),
    "a summary that keeps too much": (
        dict(values=[(0, 0, 9, 0)], shapes=[[100000]], stats=[0.0, 1.0, 0.5, 1.0],
             counts=[0, 0], flat_values=[0.0] * 9), "at most"),
    "a basis past the size": (
        dict(values=[(0, 0, 2, 0)], shapes=[[100000]], stats=[0.0, 1.0, 0.5, 1.0],
             counts=[0, -200000]), "basis"),
    "a negative key": (dict(entries=[(0, 0, -3, 0)]), "out of order"),
    "elements cut short": (dict(flat_values=[1.0]), "elements"),
}


def test_a_good_columns_record_reads():
    t = tracefile.loadb(with_record(columns_record(**GOOD)))
    assert flat(t.values.created_value(0)) == [1.0, 2.0]


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_columns_record_is_refused_by_name(case):
    change, says = HOSTILE[case]
    data = with_record(columns_record(**{**GOOD, **change}))
    with pytest.raises(TraceFormatError) as raised:
        tracefile.loadb(data)
    assert says in str(raised.value)
