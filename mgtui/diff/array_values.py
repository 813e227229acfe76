"""The array engine's part of a comparison (`mgtui diff`): the values a comparison
holds, a float or an array (`ArrayValue`, from a tensor engine or torch: its `shape` and
its elements, all of them or, for a big one, the first few and a summary), compared
element by element under a tolerance (`mgtui.diff.values.Tolerance`), added up and
shown. A float compares as a number: the scalar engine's values are numbers, and a
scalar run can be compared with an array or torch one."""

from __future__ import annotations

import math
from array import array
from typing import Any

from mgtui.trace.arrays import unravel

Value = Any  # a float, or an `ArrayValue` (`mgtui.trace.arrays`, read by duck typing)


def is_array(v: Value) -> bool:
    return hasattr(v, "shape") and hasattr(v, "values")


def apart(tol, a: Value, b: Value) -> int | None:
    """Where two values differ under `tol` (`mgtui.diff.values.Tolerance`): None if
    they agree; for arrays the C-order index of the first element that differs (-1:
    their shapes do; or, for arrays kept only in part, their summaries); 0 for two
    numbers that differ."""
    if not is_array(a) and not is_array(b):
        return None if tol.close(a, b) else 0
    a, b = _as_array(a), _as_array(b)
    if tuple(a.shape) != tuple(b.shape) and not (_one(a) and _one(b)):
        return -1  # (one number each, a float, a () or a (1, 1) array: compared as numbers)
    for k, (x, y) in enumerate(zip(a.values, b.values)):
        if not tol.close(x, y):
            return k
    if not (a.whole and b.whole) and not all(
            tol.close(x, y) for x, y in zip(a.summary[:4], b.summary[:4])):
        return -1
    return None


def numbers(*values: Value) -> bool:
    """Are all of `values` numbers (no array among them)?"""
    return not any(is_array(v) for v in values)


def pick(va: Value, vb: Value, tol) -> dict:
    """What a Point shows of a value that differs: the number, or for arrays the first
    element that differs (its value, index and the array's shape)."""
    if not (is_array(va) or is_array(vb)):
        return {"value": va}
    k = apart(tol, va, vb) or 0
    shape = tuple(va.shape) if is_array(va) else ()
    if k < 0:  # their shapes differ (or their summaries, where kept in part)
        return {"value": math.nan, "shape": shape}
    return {"value": element(va, k), "element": index_of(shape, k) if shape else None,
            "shape": shape}


class _Scalar:
    """A number as a one-element array, to compare with a one-element array."""

    shape = (1,)
    whole = True

    def __init__(self, v: float) -> None:
        self.values = array("d", [v])


def _one(v) -> bool:
    """Whether an array holds a single number (a scalar-shaped tensor reads as one)."""
    return math.prod(v.shape) == 1 and len(v.values) == 1


def _as_array(v: Value):
    return v if is_array(v) else _Scalar(v)


def unrecorded_against_array(a: Value, b: Value) -> bool:
    """A bare nan against an array: a value one side did not record (the value of a node
    torch made inside an op, `(h @ W).T`, is not known), so not a difference."""
    return is_array(a) != is_array(b) and any(not is_array(v) and math.isnan(v)
                                              for v in (a, b))


def probe(v: Value) -> float:
    """A number to sort values by, to look up the ones that may agree with another: the
    number itself, an array's first element (nan for an empty array)."""
    if not is_array(v):
        return v
    return v.values[0] if len(v.values) else math.nan


def element(v: Value, k: int) -> float:
    """Element `k` (C order) of an array, or the number itself; nan where not kept."""
    if not is_array(v):
        return v
    return v.values[k] if 0 <= k < len(v.values) else math.nan


def index_of(shape: tuple[int, ...], k: int) -> tuple[int, ...]:
    """The index of C-order element `k` of an array of `shape`: (2, 1)."""
    return unravel(k, shape)


def combine(a: Value, b: Value, sign: float) -> Value:
    """a + sign·b, element by element where either is an array (nan where an array was
    kept only in part, or the shapes differ)."""
    if not is_array(a) and not is_array(b):
        return a + sign * b
    if not is_array(a) and a == 0:
        a = _zeros_like(b)
    if not is_array(b) and b == 0:
        return a
    x, y = _as_array(a), _as_array(b)
    if tuple(x.shape) != tuple(y.shape) or not (x.whole and y.whole):
        return math.nan
    out = array("d", (p + sign * q for p, q in zip(x.values, y.values)))
    return type(x).of(out, x.shape, getattr(x, "dtype", "float64")) if hasattr(
        type(x), "of") else out[0]


def _zeros_like(v: Value):
    return type(v).of(array("d", bytes(8 * len(v.values))), v.shape,
                      getattr(v, "dtype", "float64"))
