"""A lesson's small arrays kept as raw copies as they are recorded, made values only when
read (issue 32): what the trace says of them is what it said when each was made a value
on the hot path, the collector has none of them to visit, and a value two rows share is
one value wherever it is read."""

from __future__ import annotations

import gc

import numpy as np

from mgtui.recording.store import Mark, Records
from mgtui.trace.arrays import EVENT, WRITE, ArrayChunk, ArrayTable, ArrayValue
from mgtui.trace.builder import TraceBuilder

GRAD_FIELD, DATA = 0, 1  # `Field.code`


def recorded() -> tuple[Records, np.ndarray]:
    """Node 0 made with data [1, 2, 3] (float64) and zeros; two `grad += g` inside a
    `_backward`, then a data update outside one (an event)."""
    records = Records()
    arrays = records.arrays
    arrays.snap(np.zeros(1))  # (numpy seen: the fast paths are taken from here)
    data, grad = np.array([1.0, 2.0, 3.0]), np.zeros(3)
    records.add_node((0, "", "x", arrays.made(0, data, grad), 1))
    records.add_event((0, 0, 0.0, 0.0, 1, -1, 0))  # (its creation)
    records.add_event((1, 0, 0.0, 0.0, 1, -1, 0))  # (a `_backward` call: its writes)
    records.stack.append(0)
    for step in (1.0, 2.0):
        grad += step
        before, after = arrays.write(0, GRAD_FIELD, grad, grad)
        records.add_write((0, GRAD_FIELD, before, after, 2))
    records.stack.pop()
    data -= np.float32(0.5)  # (in place, outside a `_backward`: a data event)
    before, after = arrays.write(0, DATA, data, data)
    records.add_event((3, 0, before, after, 3, -1, len(records.writes)))
    return records, data


def test_small_arrays_wait_as_copies_the_collector_does_not_track():
    records, data = recorded()
    waiting = [v for values in records.arrays.values for v in values]
    raw = [v for v in waiting if type(v) is not ArrayValue]
    assert len(raw) >= 4  # (the node's data, two grads written, the data written)
    assert not any(gc.is_tracked(v) for v in raw)
    data[:] = 99.0  # (the engine changes its array in place: the copy keeps what was)
    chunk = records.arrays.chunk(Mark(), records.mark())
    node_value = chunk.entries[0][3]
    assert isinstance(node_value, ArrayValue) and list(node_value.values) == [1.0, 2.0, 3.0]
    assert node_value.shape == (3,) and node_value.dtype == "float64" and node_value.whole


def test_a_trace_reads_the_copies_as_values_one_value_for_two_rows():
    records, _ = recorded()
    builder = TraceBuilder("x")
    for chunk in records.chunks(Mark(), records.mark()):
        builder.add(chunk)
    trace = builder.build()
    writes = trace.arrays.writes
    first_after, second_before = writes[1], writes[2]  # (write 0's after, write 1's before)
    assert isinstance(first_after, ArrayValue) and first_after is second_before
    assert list(first_after.values) == [1.0, 1.0, 1.0]
    assert list(writes[3].values) == [3.0, 3.0, 3.0]
    assert list(trace.arrays.nodes[0].values) == [1.0, 2.0, 3.0]
    after = trace.arrays.events[2 + 2 + 1]  # (event 2, the data write: its after)
    assert list(after.values) == [0.5, 1.5, 2.5]
    assert trace.arrays.events.shape(2 + 2 + 1) == (3,)


def test_a_chunk_written_out_shares_a_value_two_rows_hold():
    records, _ = recorded()
    chunk = records.arrays.chunk(Mark(), records.mark())
    by_place = {(place, index, side): v for place, index, side, v in chunk.entries}
    assert by_place[(WRITE, 0, 1)] is by_place[(WRITE, 1, 0)]
    table = ArrayTable()
    table.add(ArrayChunk(chunk.entries))  # (as a file's reader gives it: entry by entry)
    assert table.writes[1] is table.writes[2]
    assert ArrayTable.pair(table.events, 2)[1] is by_place[(EVENT, 2, 1)]


def test_zero_grad_of_raw_copies_is_told_from_their_bytes():
    table = ArrayTable()
    zeros, minus_zero, ones = np.zeros(4), np.array([-0.0, 0.0, 0.0, 0.0]), np.ones(4)
    table.add(ArrayChunk(columns=(([], []), ([], []), ([1, 3, 5], [zeros, minus_zero, ones]),
                                  ([], []))))
    assert table.zeros_written(0) and table.zeros_written(1)  # (-0.0 is a zero too)
    assert not table.zeros_written(2) and not table.zeros_written(3)


def test_a_chunk_of_raw_copies_is_written_as_the_same_bytes_as_its_values():
    """The runner's child writes a chunk's raw copies out as they are (not made values
    first): the record is the one its values would make, float32 ones included."""
    from mgtui.trace import array_records

    records, _ = recorded()
    arrays = records.arrays
    arrays.made(1, np.arange(4, dtype=np.float32), np.zeros(4, np.float32))
    records.add_node((0, "", "y", np.nan, 4))
    chunk = arrays.chunk(Mark(), records.mark())
    assert any(type(v) is not ArrayValue and v.dtype == np.float32
               for v in arrays.node_values)  # (a float32 raw copy among them)
    as_values = ArrayChunk(chunk.entries, chunk.unrecorded)
    assert array_records.payload(chunk) == array_records.payload(as_values)
