"""A big array's summary as a recording takes it (issue 32, a step of big arrays): read
where it lies when it is C-contiguous, its squares summed by short dot products, and a
big zero grad told by its bits. The figures are checked against float64 sums worked out
here by numpy, element by element, not against the code's own output."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mgtui.recording.recorder import record
from mgtui.trace.array_numpy import snapshot
from mgtui.trace.array_summary import SQUARES_ROW, all_zero_bits, summary_of
from mgtui.trace.arrays import WHOLE_LIMIT


def exact(a: np.ndarray) -> tuple[float, float, float, float]:
    f = np.asarray(a, dtype=np.float64).ravel()
    return float(f.min()), float(f.max()), float(f.mean()), math.sqrt(float((f * f).sum()))


@pytest.mark.parametrize("n", [1, SQUARES_ROW - 1, SQUARES_ROW, SQUARES_ROW + 1,
                               3 * SQUARES_ROW + 5, 200_000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_summary_over_rows_of_dot_products_is_the_exact_one(n, dtype):
    a = np.random.default_rng(n).normal(size=n).astype(dtype)
    low, high, mean, norm, bad = summary_of(a, a.size)
    want = exact(a)
    rel = 1e-5 if dtype == np.float32 else 1e-12
    assert (low, high, bad) == (want[0], want[1], 0)
    assert mean == pytest.approx(want[2], rel=rel, abs=1e-6)
    assert norm == pytest.approx(want[3], rel=rel)


def test_a_summary_past_float32s_range_is_worked_in_float64_and_warns_of_nothing():
    a = np.full(SQUARES_ROW * 2 + 7, 3e30, dtype=np.float32)  # squares: 9e60, past float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a warning would reach the scenario's output)
        low, high, mean, norm, bad = summary_of(a, a.size)
        assert bad == 0 and norm == pytest.approx(3e30 * math.sqrt(a.size), rel=1e-6)
        huge = np.full(SQUARES_ROW + 1, 1e200)  # past float64's: an infinite norm, said so
        assert summary_of(huge, huge.size)[2:] == (pytest.approx(1e200), math.inf, 0)


@pytest.mark.parametrize("make", [
    lambda a: a,                                    # C-contiguous: read where it lies
    lambda a: np.asfortranarray(a),                 # not C order: its first elements in C order
    lambda a: a[:, ::2],                            # strided
    lambda a: a.astype(">f8"),                      # not native
], ids=["c", "fortran", "strided", "big-endian"])
def test_a_big_snapshot_keeps_c_order_first_elements_and_the_exact_summary(make):
    base = np.random.default_rng(7).normal(size=(600, 300))
    a = make(base)
    assert a.size > WHOLE_LIMIT
    v = snapshot(a)
    assert not v.whole and v.shape == a.shape and v.basis == 0
    assert list(v.values) == np.asarray(a, dtype=np.float64).ravel(order="C")[:8].tolist()
    low, high, mean, norm, bad = v.summary
    want = exact(a)
    assert (low, high, bad) == (want[0], want[1], 0)
    assert mean == pytest.approx(want[2], abs=1e-12) and norm == pytest.approx(want[3])


def test_a_c_contiguous_snapshot_is_taken_as_it_was_when_taken():
    a = np.ones(WHOLE_LIMIT * 2, dtype=np.float32)
    v = snapshot(a)
    a[:] = 5.0  # changed in place after: the summary was worked out already
    assert v.summary[:3] == (1.0, 1.0, 1.0) and list(v.values) == [1.0] * 8


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ">f4", np.longdouble])
def test_all_zero_bits_tells_zeros_from_anything_else(dtype):
    z = np.zeros((300, 400), dtype=dtype)
    assert all_zero_bits(z) and all_zero_bits(z[:, ::3]) and all_zero_bits(z[:0])
    tiny = z.copy()
    tiny[299, 399] = np.finfo(tiny.dtype).smallest_subnormal  # the last element, the least
    assert not all_zero_bits(tiny)
    nan = z.copy()
    nan[0, 0] = np.nan
    assert not all_zero_bits(nan)
    negative = z.copy()
    negative[5, 5] = -0.0  # a -0.0: not +0.0 bits (a long double reads it as 0)
    assert all_zero_bits(negative) == (np.dtype(dtype).itemsize not in (2, 4, 8))


BIG_GRADS = f'''
import numpy as np

class T:
    def __init__(self, data, grad=None, _children=(), _op=''):
        self.data = data
        self.grad = np.zeros_like(data) if grad is None else grad
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

n = {WHOLE_LIMIT * 3}
a = T(np.ones(n, np.float32))                      # zeros: shared, all 0
b = T(np.ones(n, np.float32))
tiny = np.zeros(n, np.float32)
tiny[-1] = np.float32(1e-45)                       # one subnormal, at the end
c = T(np.ones(n, np.float32), tiny)
d = T(np.ones(n, np.float32), -np.zeros(n, np.float32))   # all -0.0
'''


def test_big_zero_grads_are_shared_and_a_grad_almost_zero_is_not(tmp_path):
    path = tmp_path / "big_grads.py"
    path.write_text(BIG_GRADS)
    trace = record(path)
    grads = [trace.values.created_grad(node) for node in range(4)]
    assert all(g.shape == (WHOLE_LIMIT * 3,) and not g.whole for g in grads)
    assert grads[0] is grads[1] and grads[0].summary == (0.0, 0.0, 0.0, 0.0, 0)
    assert grads[2] is not grads[0] and grads[2].summary[1] == pytest.approx(1e-45, rel=0.5)
    assert grads[3] is not grads[0] and grads[3].summary[:2] == (0.0, 0.0)
