"""Checks over whole int32 arrays at C speed, with no Python object per element.

A trace's columns hold hundreds of thousands of numbers, and `all(map(lt, x, y))` makes
two Python ints per element. Here an array's bytes are read as one big Python int
(`int.from_bytes`), in which each number is a *lane* of 32 bits, and a whole column is
compared with one subtraction and one mask, which C does a digit at a time.

The trick that makes a subtraction compare: with every lane of `y` and `x` in
[0, 2**31), `(y + 2**31) - x` per lane lies in [1, 2**32), so no lane borrows from the
next, and its top bit (the *guard*) is set exactly when `y >= x`. Numbers that may be
negative are first mapped to unsigned ones in the same order (the sign bit flipped) and
compared in 64-bit lanes (the even and odd numbers apart), where the guard is bit 32.

To compare each child with the node that owns it, the owners are laid out a lane per
child slot (`repeat_ids`): each node's id as many times as the most children any node
has, the copies beyond its own count marked, and the marked bytes deleted with
`bytes.translate`.

The work goes a block of lanes at a time: the ints stay small enough to be in the
cache, and their memory is reused instead of being fresh pages from the system (which
costs more than the arithmetic). Every function gives the exact answer for every input;
a caller that must name the first bad element finds it element by element, only once
a check here has failed.
"""

from __future__ import annotations

import sys
from array import array
from functools import lru_cache
from typing import Iterator

_ORDER = sys.byteorder
_SIGN = 1 << 31
_TOP = 3 if _ORDER == "little" else 0  # where a number's most significant byte is
_LOW = 3 - _TOP
_NON_NEGATIVE = bytes(range(0x80))  # the top bytes of the numbers in [0, 2**31)
_HIGH = bytes(range(0x80, 0x100))
_BLOCK = 8192  # numbers at a time


def _int(data: bytes | memoryview) -> int:
    return int.from_bytes(data, _ORDER)


@lru_cache(maxsize=16)
def _spread(value: int, lanes: int, width: int = 4) -> int:
    """An int with `value` (0 <= value < 2**(8 * width)) in each of `lanes` lanes of
    `width` bytes: the constants every block uses, kept (a few, as each is up to 64 kB);
    a value that changes from call to call is `_times` instead."""
    return value * _ones(lanes, width)


def _times(value: int, lanes: int, width: int = 4) -> int:
    """`_spread`, not kept."""
    return value * _ones(lanes, width)


@lru_cache(maxsize=4)
def _ones(lanes: int, width: int) -> int:
    return _int((1).to_bytes(width, _ORDER) * lanes)


def _view(column: array) -> memoryview:
    if column.itemsize != 4:
        raise TypeError(f"an array of 32-bit numbers, not {column.typecode!r}")
    return memoryview(column).cast("B")


def _blocks(data: memoryview | bytes, width: int = 4) -> Iterator[tuple[int, int]]:
    """(lanes, int) of each block of `data`, in lanes of `width` bytes."""
    step = width * _BLOCK
    for at in range(0, len(data), step):
        piece = data[at : at + step]
        yield len(piece) // width, _int(piece)


def negative(column: array) -> bool:
    """Does a 32-bit int array hold a negative number? (Its top byte has the sign bit.)"""
    _view(column)  # (32-bit numbers, or TypeError)
    return bool(column.tobytes()[_TOP::4].translate(None, _NON_NEGATIVE))


def ordered(x: array, y: array, strict: bool = True) -> bool:
    """Is x[k] < y[k] (or <=, not `strict`) for every k? Arrays of equal length."""
    if len(x) != len(y):
        raise ValueError("arrays of different lengths")
    return _ordered(_view(x), _view(y), strict, negative(x) or negative(y))


def _ordered(xb: memoryview | bytes, yb: memoryview | bytes, strict: bool,
             signed: bool) -> bool:
    if not signed:
        for (m, x), (_, y) in zip(_blocks(xb), _blocks(yb)):
            guard = _spread(_SIGN, m)
            # per lane: 2**31 - strict + y - x, in [0, 2**32)
            if (y + _spread(_SIGN - strict, m) - x) & guard != guard:
                return False
        return True
    # Signed: flip the sign bits (the order of unsigned numbers), then compare the even
    # and the odd lanes apart, each in 64-bit lanes with the guard at bit 32.
    if len(xb) % 8:
        xb, yb = bytes(xb) + bytes(4), bytes(yb) + (1).to_bytes(4, _ORDER)
    for (m, x), (_, y) in zip(_blocks(xb, 8), _blocks(yb, 8)):
        flip, low = _spread(_SIGN, 2 * m), _spread(0xFFFFFFFF, m, 8)
        guard, one = _spread(1 << 32, m, 8), _spread(strict, m, 8)
        x, y = x ^ flip, y ^ flip
        for shift in (0, 32):
            # per 64-bit lane: 2**32 - strict + y - x, in [0, 2**33)
            if ((((y >> shift) & low) | guard) - ((x >> shift) & low) - one) & guard != guard:
                return False
    return True


def nondecreasing(column: array) -> bool:
    """Is x[k] <= x[k + 1] for every k?"""
    if len(column) < 2:
        return True
    data = _view(column)
    if negative(column):
        return _ordered(data[:-4], data[4:], False, True)
    for m, x in _pairs(data):
        guard = _spread(_SIGN, m)
        # per lane: 2**31 + x[k + 1] - x[k] (the next lane shifted down onto this one)
        if ((x >> 32) + guard - (x & _spread(0xFFFFFFFF, m))) & guard != guard:
            return False
    return True


def _pairs(data: memoryview) -> Iterator[tuple[int, int]]:
    """(m, int) of blocks of m + 1 numbers, each block's last the next one's first: each
    number and the next in one int, for m numbers of `data` but the last."""
    step = 4 * _BLOCK
    for at in range(0, len(data) - 4, step):
        piece = data[at : at + step + 4]
        yield len(piece) // 4 - 1, _int(piece)


def below(column: array, hi: int) -> bool:
    """Is 0 <= x < hi for every x of the array? (0 <= hi <= 2**31.)"""
    if not 0 <= hi <= _SIGN:
        raise ValueError(f"a bound of {hi}")
    if not column:
        return True
    if negative(column):
        return False
    for m, x in _blocks(_view(column)):
        guard = _spread(_SIGN, m)
        # per lane: 2**31 - 1 + hi - x, in [hi, 2**31 - 1 + hi]
        if (_times(_SIGN - 1 + hi, m) - x) & guard != guard:
            return False
    return True


def within(column: array, lo: int, hi: int) -> bool:
    """Is lo <= x < hi for every x of the array? (-2**31 <= lo <= hi <= 2**31.)"""
    if not column:
        return True
    if not negative(column):
        return (hi > 0 and (hi >= _SIGN or below(column, hi))
                and (lo <= 0 or _at_least(column, lo)))
    if lo >= 0:
        return False
    data: memoryview | bytes = _view(column)
    if len(data) % 8:
        data = bytes(data) + lo.to_bytes(4, _ORDER, signed=True)
    for m, x in _blocks(data, 8):
        low, guard = _spread(0xFFFFFFFF, m, 8), _spread(1 << 32, m, 8)
        floor = _times(lo + _SIGN, m, 8)
        ceiling = _times((1 << 32) + hi + _SIGN - 1, m, 8)
        x ^= _spread(_SIGN, 2 * m)
        for shift in (0, 32):
            xs = (x >> shift) & low  # each number + 2**31, in 64-bit lanes
            if ((xs | guard) - floor) & guard != guard or (ceiling - xs) & guard != guard:
                return False
    return True


def _at_least(column: array, lo: int) -> bool:
    """Is x >= lo for every x of an array of numbers in [0, 2**31)? (0 < lo.)"""
    for m, x in _blocks(_view(column)):
        guard = _spread(_SIGN, m)
        if (x + _times(_SIGN - lo, m)) & guard != guard:
            return False
    return True


def steps(column: array) -> bytes | None:
    """x[k + 1] - x[k] for every k, a byte each, if every one is below 256; else None
    (also when a number is negative). The array must be nondecreasing
    (`nondecreasing`)."""
    if negative(column):
        return None
    out = []
    for m, x in _pairs(_view(column)):
        try:
            step = ((x >> 32) - (x & _spread(0xFFFFFFFF, m))).to_bytes(4 * m, _ORDER)
        except OverflowError:  # (not nondecreasing)
            return None
        low = step[_LOW::4]
        if step.count(0) - low.count(0) != 3 * m:  # a step of 256 or more
            return None
        out.append(low)
    return b"".join(out)


def shifted(column: array, by: int) -> array | None:
    """array('i') of x + by for every x of the array, if every x is in [0, 2**31) and
    every sum in [0, 2**31) too; else None. (0 <= by.)"""
    if by < 0:
        raise ValueError(f"a shift of {by}")
    if by >= _SIGN or not below(column, _SIGN - by):
        return None
    out = array("i")
    for m, x in _blocks(_view(column)):
        out.frombytes((x + _times(by, m)).to_bytes(4 * m, _ORDER))
    return out


_RAMP_LANES = _BLOCK
_RAMP = _int(array("i", range(_RAMP_LANES)).tobytes())  # the lanes 0, 1, 2, ... of a block


def _ramp(start: int, m: int) -> int:
    """Lanes start, start + 1, ... start + m - 1 (m <= _BLOCK)."""
    lanes = _RAMP if m == _BLOCK == _RAMP_LANES else _RAMP & ((1 << 32 * m) - 1)
    return lanes + _times(start, m)


def iota(start: int, count: int) -> bytes:
    """The bytes of array('i', range(start, start + count)). (0 <= start, and
    start + count <= 2**31.)"""
    if not (0 <= start and start + max(count, 0) <= _SIGN):
        raise ValueError(f"numbers {start}…{start + count}")
    return b"".join(_ramp(start + at, min(_BLOCK, count - at)).to_bytes(
        4 * min(_BLOCK, count - at), _ORDER) for at in range(0, count, _BLOCK))


# Seven bits in each byte: a number < 2**28 spread so that every byte of it is < 0x80
# (the numbers in the same order), which leaves 0x80 and up free to mark the numbers
# that bytes.translate is to delete.
_SEVENS = tuple(0x7F << (7 * k) for k in range(4))
MAX_REPEATED = 1 << 28
_UPTO = tuple(bytes(range(k + 1)) for k in range(256))


def _sevens(ids: int, m: int) -> int:
    """m numbers (lanes of `ids`) in seven bits a byte."""
    seven = 0
    for k, mask in enumerate(_SEVENS):
        seven |= (ids & _spread(mask, m)) << k
    return seven


def repeat_ids(first: int, counts: bytes, most: int = 4) -> array | None:
    """array('i') of first + k, counts[k] times each, for every k, in order; None if a
    count is above `most` (the work grows with the largest count, so then the caller
    had better do it another way) or first + len(counts) is above 2**28.

    Each number is laid out as many times as the largest count, each copy beyond its
    own count marked in every byte, and the marked bytes deleted (`bytes.translate`)."""
    n = len(counts)
    if counts.translate(None, _UPTO[most]) or not 0 <= first <= MAX_REPEATED - n:
        return None
    out = array("i")
    for at in range(0, n, _BLOCK):
        some = counts[at : at + _BLOCK]
        m = len(some)
        widest = next(k for k in range(most + 1) if not some.translate(None, _UPTO[k]))
        if not widest:
            continue
        guard = _spread(_SIGN, m)
        wide = bytearray(4 * m)
        wide[_LOW::4] = some
        count = _int(wide)  # the counts, a lane each
        seven = _sevens(_ramp(first + at, m), m)
        laid = bytearray(4 * widest * m)
        lanes = memoryview(laid).cast("I")
        for k in range(widest):
            # 0x80 in every byte of the lanes whose count is k or less
            gone = (((_spread(_SIGN + k, m) - count) & guard) >> 24) * 0x01010101
            lanes[k::widest] = memoryview((seven | gone).to_bytes(4 * m, _ORDER)).cast("I")
        kept = laid.translate(None, _HIGH)
        s, j = _int(kept), len(kept) // 4
        number = s & _spread(_SEVENS[0], widest * m)  # (masks as long as laid: cached)
        for k, mask in enumerate(_SEVENS[1:], 1):
            number |= (s >> k) & _spread(mask, widest * m)
        out.frombytes(number.to_bytes(4 * j, _ORDER))
    return out
