"""A numpy array's summary (min, max, mean, L2 norm, nonfinite) as a trace keeps it for an
array too big to keep whole, worked out in the array's own dtype, a pass each at C speed
(issue 32: what a step of big arrays costs), and the check that tells a big grad of
zeros. Called only where numpy is loaded (an array in hand); needs nothing else of mgtui
(`mgtui.trace.arrays` settles a pending value with it, `array_numpy` takes values)."""

from __future__ import annotations

import math
import sys


def summary_of(flat, size: int) -> tuple[float, float, float, float, int]:
    """(min, max, mean, L2 norm, nonfinite) of the 1-d numpy array `flat`, which stands
    for `size` elements (each of its elements for as many: a view's storage, a sample),
    in its own dtype where it is a float (float16 read as float32): a pass each for min,
    max, sum and sum of squares, no float64 copy; over the finite elements. (The sum and
    the squares by `_sums`.)"""
    np = sys.modules["numpy"]
    kind = flat.dtype.kind
    if kind != "f":
        flat = flat.astype(np.float64)
    elif flat.dtype.itemsize < 4:
        flat = flat.astype(np.float32)
    n = flat.size
    scale = size / n if n else 1.0
    least, most = np.minimum.reduce, np.maximum.reduce  # (not `min()`: its Python layer)
    low, high = float(least(flat)), float(most(flat))
    bad = 0
    if not (math.isfinite(low) and math.isfinite(high)):
        ok = np.isfinite(flat)
        flat = flat[ok]
        bad = round((n - flat.size) * scale)
        if not flat.size:
            return (math.nan, math.nan, math.nan, math.nan, bad)
        low, high = float(least(flat)), float(most(flat))
    big = high if high > -low else -low
    bound = big * big * flat.size  # (of the sum of squares)
    if bound >= FLOAT32_MAX and flat.dtype.itemsize == 4:  # (past float32's range)
        flat = flat.astype(np.float64)
    total, squares = _sums(np, flat, bound)
    return (low, high, total / flat.size, math.sqrt(squares * scale), bad)


SQUARES_ROW = 4096  # elements one dot product of `_sums` reads
FLOAT32_MAX = 3.4028234663852886e38
_ONES: dict = {}  # dtype -> `SQUARES_ROW` ones of it


def _sums(np, flat, bound: float) -> tuple[float, float]:
    """The sum, and the sum of the squares, of the 1-d array `flat` (the squares' at most
    `bound`): `vecdot` (BLAS's dot) of rows of `SQUARES_ROW` elements with a row of ones
    and with themselves, each row short enough that OpenBLAS keeps it on this thread
    (one long vector goes to its threads, which on a busy machine took 40 times the CPU
    time). The squares in half `einsum`'s time, the sum in its time without its Python
    layer (~10 us a call). By `einsum` before numpy 2, and where the squares may pass
    float64's range (`vecdot` would warn of it; the sum cannot pass it otherwise)."""
    vecdot = getattr(np, "vecdot", None)
    if vecdot is None or bound >= sys.float_info.max:
        return float(np.einsum("i->", flat)), float(np.einsum("i,i->", flat, flat))
    ones = _ONES.get(flat.dtype)
    if ones is None:
        ones = _ONES[flat.dtype] = np.ones(SQUARES_ROW, flat.dtype)
    n = flat.size - flat.size % SQUARES_ROW
    rows, tail = flat[:n].reshape(-1, SQUARES_ROW), flat[n:]
    total = float(np.add.reduce(vecdot(rows, ones))) + float(vecdot(tail, ones[:tail.size]))
    return total, float(np.add.reduce(vecdot(rows, rows))) + float(vecdot(tail, tail))


_BITS = {2: "u2", 4: "u4", 8: "u8"}  # a float's size -> the unsigned int of its bits


def all_zero_bits(a) -> bool:
    """Is every element of the float array `a` +0.0 (every bit 0)? Read as unsigned
    ints of its size: one pass of an integer max, without `any`'s casts (a 200k-element
    float32 array: 8 µs, against 20). A -0.0 says no (a summary then tells the rest)."""
    bits = _BITS.get(a.dtype.itemsize)
    if bits is None:  # (a long double)
        return not a.any()
    return not a.size or not sys.modules["numpy"].maximum.reduce(a.view(bits), axis=None)
