"""numpy arrays as the trace keeps them (`mgtui.trace.arrays.ArrayValue`): taken whole
up to `WHOLE_LIMIT` elements, else summarised (min, max, mean, norm, nonfinite) in their
own dtype, from what they hold: a broadcast or expanded view from its storage, a huge
array from a strided sample. Called only where numpy is loaded (an array in hand);
`mgtui.trace.arrays` re-exports these."""

from __future__ import annotations

import math
import sys
from array import array

from mgtui.trace.array_summary import summary_of
from mgtui.trace.arrays import SAMPLE, WHOLE_LIMIT, ArrayValue

_DTYPE_NAMES: dict = {}  # numpy dtype -> its name (`str(dtype)` runs Python code: ~10 µs)


JOINED_LIMIT = 64  # elements an array may have and be converted in a joined buffer


def from_numpy_many(arrays: list) -> list[ArrayValue]:
    """`from_numpy` of each of many numpy arrays at once (a recording takes each array
    as it comes instead, with `snapshot`: no copy kept to convert later). The small
    ones (`JOINED_LIMIT`) are joined into one float64 buffer, flattened and cast by one
    `concatenate`, and each takes its slice: a few microseconds an array less. A bigger
    one is copied into its own buffer straight from its bytes (one copy, none for the
    cast of a float64 one): a joined buffer of big arrays is copied three times, and as
    it outgrows the allocator's heap, each copy faults in fresh pages (a chunk of the
    tensor lesson's 140 arrays took 2 ms joined, 0.1 ms so)."""
    np = sys.modules["numpy"]
    f64, contiguous = np.float64, np.ascontiguousarray
    sizes = [a.size for a in arrays]
    small = [a for a, n in zip(arrays, sizes) if n <= JOINED_LIMIT]
    flat = array("d")
    if small:
        joined = np.concatenate(small, axis=None, dtype=f64)
        flat.frombytes(memoryview(joined).cast("B"))  # (its bytes in place: no copy more)
    names = _DTYPE_NAMES
    out: list[ArrayValue] = []
    append, at = out.append, 0
    for a, n in zip(arrays, sizes):
        if n > WHOLE_LIMIT:
            append(from_numpy(a))
            continue
        dtype = a.dtype
        name = names.get(dtype)
        if name is None:
            name = names[dtype] = str(dtype)
        if n > JOINED_LIMIT:
            values = array("d")
            values.frombytes(memoryview(contiguous(a, dtype=f64)).cast("B"))
        else:
            end = at + n
            values = flat[at:end]
            at = end
        append(ArrayValue(a.shape, name, values))
    return out


# Whether a recording's big array is copied and summarised later (by the runner's flusher
# thread, as its chunk is cut) rather than summarised as it is taken. Off: measured in CPU
# time, the copy costs more than the summary it moves (the tensor lesson with arrays 100x
# as big, a step: 2.38x plain with it, 1.9x without), the summary being a few passes in
# the array's own dtype. (In wall time a flusher on another core would hide the summary.)
DEFER = False


def snapshot(a) -> ArrayValue:
    """`from_numpy` of one array, as a recording takes it, on its hot path: the bytes of
    a float64 (or float32) one read once in C order (`tobytes`: any strides) into the
    `ArrayValue`'s own bytes, with no numpy array in between; another dtype cast first; a bigger one
    (`WHOLE_LIMIT`) copied as it is, to be summarised later (`summarised`: `pending`; a
    broadcast view's storage summarised now). About a microsecond for a small array."""
    dtype = a.dtype
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    if a.size > WHOLE_LIMIT:  # (a copy, summarised later; a view's storage summarised now)
        return summarised(a, name, defer=DEFER)
    if (name == "float64" or name == "float32") and dtype.isnative:  # (float32: its own
        return ArrayValue(a.shape, name, a.tobytes())  # bytes, as `ArrayValue` says)
    return ArrayValue(a.shape, name, a.astype(sys.modules["numpy"].float64).tobytes())


def from_numpy(a) -> ArrayValue:
    """An `ArrayValue` of a numpy array of numbers (its dtype kind in `NUMERIC_KINDS`),
    read through its own methods, at C speed: one copy as float64 (none more for one
    that is float64 already), and for a big one, its summary from numpy
    (`mgtui.trace.array_summary`)."""
    np = sys.modules["numpy"]  # (loaded: `a` is one of its arrays)
    dtype = a.dtype
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    shape = a.shape
    if a.size <= WHOLE_LIMIT:
        flat = array("d")
        flat.frombytes(np.ascontiguousarray(a, dtype=np.float64).tobytes())  # (native order)
        return ArrayValue(shape, name, flat)
    return summarised(a, name)


def summarised(a, name: str, defer: bool = False) -> ArrayValue:
    """An `ArrayValue` of a numpy array over `WHOLE_LIMIT` elements, its summary worked
    out in its own dtype, nothing materialised that it does not hold: a broadcast (or
    expanded) view, some stride 0, from its storage alone (exact: each stored element
    stands for the same number of elements); an array over `SUMMARY_LIMIT` elements (or
    a view's storage so big) from a strided sample, and says so (`basis`); else a copy
    taken, summarised now or, with `defer`, when read or cut into a chunk (`pending`)."""
    if a.flags.c_contiguous and a.size <= SUMMARY_LIMIT and not defer:  # (the common
        flat = a.reshape(-1)  # case, read where it is: its first elements a slice of it)
        return ArrayValue(a.shape, name, array("d", flat[:SAMPLE].tolist()), False,
                          summary_of(flat, flat.size))
    np = sys.modules["numpy"]
    shape = tuple(int(n) for n in a.shape)
    size = math.prod(shape)
    stored, basis = a, 0
    if a.ndim and 0 in a.strides:  # (the storage, as a view: one along each stride 0)
        stored = a[tuple(slice(0, 1) if k == 0 else slice(None) for k in a.strides)]
        basis = stored.size
    if stored.size > SUMMARY_LIMIT:
        flat = stored.flat[::-(-stored.size // SUMMARY_LIMIT)]  # (copies what it takes only)
        basis = -flat.size
    elif not basis and defer:
        return ArrayValue.pending(shape, name, np.array(a, order="C", copy=True))
    elif not basis:  # (read where it is, in the order of its memory: a view of a
        flat = a.ravel(order="K")  # contiguous one, a transpose's too; else one copy)
    else:
        flat = stored.reshape(-1)  # (the storage: small enough to copy where it must)
    given = summary_of(flat, size)
    if basis < 0:  # (a sample's min and max, and its nan or inf, told over every element)
        given = _extremes(stored, size, given)
    first = array("d", np.asarray(a.flat[:SAMPLE], dtype=np.float64).tolist())
    return ArrayValue(shape, name, first, False, given, basis)


SUMMARY_LIMIT = 1 << 24  # elements a summary reads; past it, a strided sample


def _extremes(stored, size: int, given: tuple) -> tuple[float, float, float, float, int]:
    """A sample's summary `given`, its min and max those of every element of `stored`
    (a pass each, nothing copied), and its count of nan and inf exact where there are any
    (its min and max, then, the sample's finite ones)."""
    np = sys.modules["numpy"]
    low, high = stored.min(), stored.max()
    if math.isfinite(low) and math.isfinite(high):
        return (float(low), float(high), *given[2:4], 0)
    bad = (stored.size - int(np.count_nonzero(np.isfinite(stored)))) * (size // stored.size)
    return (*given[:4], bad)
