"""mgtui.trace.lanes answers every question exactly as a plain loop over the numbers would,
for any 32-bit numbers, across the edges of its blocks (made small here)."""

from __future__ import annotations

from array import array
from operator import le, lt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mgtui.trace import lanes

INT32 = st.integers(-(2**31), 2**31 - 1)
EDGY = st.one_of(INT32, st.sampled_from([-(2**31), -2, -1, 0, 1, 2, 2**31 - 2, 2**31 - 1]),
                 st.integers(-3, 40))
COLUMN = st.lists(EDGY, max_size=40).map(lambda xs: array("i", xs))


@pytest.fixture(autouse=True, params=[3, 8192], ids=["blocks-of-3", "blocks-of-8192"])
def block(request, monkeypatch):
    monkeypatch.setattr(lanes, "_BLOCK", request.param)


def pairs_of(xs: array, ys: list[int]) -> tuple[array, array]:
    n = min(len(xs), len(ys))
    return xs[:n], array("i", ys[:n])


@settings(max_examples=300, deadline=None)
@given(COLUMN, st.lists(EDGY, max_size=40), st.booleans(), st.integers(0, 3))
def test_ordered_is_a_comparison_of_each_pair(xs, ys, strict, nudge):
    x, y = pairs_of(xs, ys)
    assert lanes.ordered(x, y, strict) == all(map(lt if strict else le, x, y))
    # and pairs that are mostly in order, where a single bad one must be found
    near = array("i", (min(v + nudge, 2**31 - 1) for v in x))
    assert lanes.ordered(x, near, strict) == all(map(lt if strict else le, x, near))


@settings(max_examples=300, deadline=None)
@given(COLUMN, st.integers(0, 2**31), st.integers(-(2**31), 2**31))
def test_below_and_within_are_bounds_on_each_number(x, hi, lo):
    assert lanes.below(x, hi) == all(0 <= v < hi for v in x)
    lo, hi2 = sorted((lo, hi))
    assert lanes.within(x, lo, hi2) == all(lo <= v < hi2 for v in x)
    assert lanes.within(x, -1, 5) == all(-1 <= v < 5 for v in x)
    assert lanes.negative(x) == any(v < 0 for v in x)


@settings(max_examples=300, deadline=None)
@given(COLUMN, st.booleans())
def test_nondecreasing_and_its_steps(x, sort):
    if sort:
        x = array("i", sorted(x))
    assert lanes.nondecreasing(x) == all(map(le, x[:-1], x[1:]))
    if lanes.nondecreasing(x):
        steps = [b - a for a, b in zip(x, x[1:])]
        small = all(s < 256 for s in steps) and all(v >= 0 for v in x)
        assert lanes.steps(x) == (bytes(steps) if small else None)


@settings(max_examples=200, deadline=None)
@given(COLUMN, st.sampled_from([0, 1, 7, 2**30, 2**31 - 1, 2**31]))
def test_shifted_adds_to_each_number_or_says_it_cannot(x, by):
    fits = by < 2**31 and all(0 <= v and v + by < 2**31 for v in x)
    assert lanes.shifted(x, by) == (array("i", (v + by for v in x)) if fits else None)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31), st.integers(0, 30))
def test_iota_counts_up(start, count):
    if start + count > 2**31:
        with pytest.raises(ValueError):
            lanes.iota(start, count)
    else:
        assert lanes.iota(start, count) == array("i", range(start, start + count)).tobytes()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([0, 1, 100, 2**28 - 50, 2**28 - 10]),
       st.lists(st.integers(0, 6), max_size=40))
def test_repeat_ids_repeats_each_id_its_count_of_times(first, counts):
    got = lanes.repeat_ids(first, bytes(counts))
    if max(counts, default=0) > 4 or first + len(counts) > lanes.MAX_REPEATED:
        assert got is None
    else:
        assert got == array("i", (first + k for k, c in enumerate(counts) for _ in range(c)))


def test_a_column_of_other_numbers_is_not_taken_for_32_bit_ones():
    with pytest.raises(TypeError):
        lanes.below(array("q", [1, 2]), 5)
