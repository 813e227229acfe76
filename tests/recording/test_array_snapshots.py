"""The array snapshots' hot paths (`mgtui.recording.array_values`, issue 32): a node's
grad as made, `x.grad += g` written in place, and the last snapshot of each field
(`held`) kept, let go and put back."""

from __future__ import annotations

import gc

import numpy as np

from mgtui.recording.store import Records
from mgtui.trace.arrays import GRAD, NODE, WRITE, ArrayValue, raw_value

DATA, GRAD_FIELD = 1, 0  # `Field.code`


def fresh() -> Records:
    records = Records()
    records.arrays.snap(np.zeros(1))  # (numpy seen: the fast paths are taken from here)
    return records


def floats(value) -> list[float]:
    """A snapshot's elements: a value's, or a raw copy's as the trace makes it a value."""
    return list((value if isinstance(value, ArrayValue) else raw_value(value)).values)


def test_grad_written_in_place_keeps_each_step_and_shares_the_one_between():
    records = fresh()
    arrays = records.arrays
    data, grad = np.array([1.0, 2.0, 3.0]), np.zeros(3)
    arrays.made(7, data, grad)
    records.stack.append(7)  # (inside a `_backward`: writes, not events)
    for step in (1.0, 2.0):
        grad += step  # (`ndarray.__iadd__` first: the before a probe sees has changed)
        before, after = arrays.write(7, GRAD_FIELD, grad, grad)
        records.add_write((7, GRAD_FIELD, before, after, 0))
    keys, values = arrays.keys[WRITE], arrays.values[WRITE]
    assert keys == [0, 1, 2, 3]
    assert [floats(v) for v in values] == [[0.0] * 3, [1.0] * 3, [1.0] * 3, [3.0] * 3]
    assert values[1] is values[2]  # (one value for a write's after and the next's before)
    held = arrays.held(7, GRAD_FIELD)
    assert held is not None and held[0]() is grad and floats(held[1]) == floats(values[3])
    assert floats(arrays.held(7, DATA)[1]) == [1.0, 2.0, 3.0]


def test_a_grad_made_with_other_values_than_zeros_is_not_taken_for_zeros():
    records = fresh()
    arrays = records.arrays
    arrays.made(1, np.ones(4), np.zeros(4))  # (the zeros of shape (4,), kept for the next)
    arrays.made(2, np.ones(4), np.array([0.0, 0.0, 5.0, 0.0]))
    zeros = arrays.values[GRAD][0]
    floats(zeros)  # (read: its bytes become an array of floats)
    arrays.made(3, np.ones(4), np.zeros(4))
    arrays.made(4, np.ones(4), np.array([-0.0, 0.0, 0.0, 0.0]))  # (-0.0: other bits)
    grads = arrays.values[GRAD]
    assert [floats(v) for v in grads[:3]] == [[0.0] * 4, [0.0, 0.0, 5.0, 0.0], [0.0] * 4]
    assert grads[1] is not zeros
    assert np.signbit(grads[3].values[0]) and grads[3] is not grads[2]
    assert arrays.keys[NODE] == arrays.keys[GRAD] == [2, 4, 6, 8]


def test_last_snapshots_of_arrays_let_go_are_pruned_and_a_replay_puts_them_back():
    records = fresh()
    arrays = records.arrays
    kept, kept_grad = np.arange(3.0), np.zeros(3)
    arrays.made(1, kept, kept_grad)
    arrays.made(2, np.arange(3.0) * 2, np.zeros(3))  # (its arrays are let go at once)
    gc.collect()
    arrays.prune()
    assert set(arrays.last) == set(arrays.lives) == {2, 3}  # (node 1's grad and data)
    saved = arrays.kept_last()
    other = np.ones(3)
    arrays.write(1, DATA, kept, other)
    assert arrays.held(1, DATA)[0]() is other
    arrays.put_back(saved)
    assert arrays.held(1, DATA)[0]() is kept
    assert floats(arrays.held(1, DATA)[1]) == [0.0, 1.0, 2.0]
    assert arrays.held(2, DATA) is None
