"""What the doctor needs of values that are numpy arrays (a tensor engine's `data` and
`grad`), on both sides of a run: telling an array from a number without importing numpy,
copying an array into JSON and back (`encode`, `decode`), the seeded per-element
direction an array node is nudged along (`pattern`), and naming an element (`b[0, 2]`).

numpy is imported only once an array has shown up (`ndarray_type`): the doctor works
without it for scalar engines.
"""

from __future__ import annotations

import base64
import math
import sys

from mgtui.trace.arrays import ArrayValue, Value, brief

SMALL = 16  # an input of at most this many elements is checked element by element whole
FEW = 8  # of a bigger one, this many elements, seeded


def ndarray_type() -> type | None:
    """numpy's ndarray, if numpy has been imported here (else no value can be one)."""
    np = sys.modules.get("numpy")
    return getattr(np, "ndarray", None)


def is_array(x: object) -> bool:
    """Is `x` a numpy array (a 0-d one included; a numpy scalar is a number)?"""
    if type(x) is float or type(x) is int:
        return False
    nd = ndarray_type()
    return nd is not None and isinstance(x, nd)


def as_array(x: object):
    """`x` as a float64 array (a number as a 0-d one)."""
    import numpy as np

    return np.array(x, dtype=np.float64)


def encode(x: object) -> dict:
    """An array (or a number) as JSON: its shape and its float64 bytes in base64."""
    a = as_array(x)
    return {"s": list(a.shape), "b": base64.b64encode(a.tobytes()).decode("ascii")}


def decode(obj: dict):
    """`encode`'s array back."""
    import numpy as np

    flat = np.frombuffer(base64.b64decode(obj["b"]), dtype=np.float64)
    return flat.reshape(tuple(obj["s"])).copy()


def pattern(nid: int, shape: tuple):
    """The direction array node `nid` is nudged along: for each element a random sign
    times a random size between 0.5 and 1.5, seeded by the node's id (both sides of a
    run make the same one)."""
    import numpy as np

    rng = np.random.default_rng(7919 + nid)
    return rng.choice((-1.0, 1.0), size=shape) * rng.uniform(0.5, 1.5, size=shape)


def scale_of(x: object) -> float:
    """The size a nudge of `x` is relative to: its largest finite magnitude, at least 1."""
    import numpy as np

    a = np.abs(as_array(x))
    a = a[np.isfinite(a)]
    return max(1.0, float(a.max())) if a.size else 1.0


def nudged(data: object, nid: int, amount: float,
           element: int | tuple[int, int] | None = None):
    """`data` nudged by `amount` (times `pattern` and `scale_of`, or at one flat `element`
    only, times that element's size, or over the flat elements `lo` to `hi - 1` of an
    `element` (lo, hi), each times its size and the pattern): an array stays an array of
    its shape."""
    import numpy as np

    a = np.array(data, dtype=np.float64)
    if isinstance(element, tuple):
        flat = a.reshape(-1)
        lo, hi = element
        part = flat[lo:hi]
        size = np.where(np.isfinite(part), np.maximum(1.0, np.abs(part)), 1.0)
        flat[lo:hi] = part + amount * size * pattern(nid, a.shape).reshape(-1)[lo:hi]
        return a
    if element is not None:
        flat = a.reshape(-1)
        flat[element] += amount * max(1.0, abs(flat[element]) if math.isfinite(flat[element])
                                      else 1.0)
        return a
    return a + amount * scale_of(a) * pattern(nid, a.shape)


def element_text(shape: tuple, flat: int) -> str:
    """`[0, 2]` for flat element 2 of a (1, 3) array; `[]` for a 0-d one."""
    return "[" + ", ".join(map(str, element_index(shape, flat))) + "]"


def element_index(shape: tuple, flat: int) -> tuple[int, ...]:
    """The index of element `flat` (C order) of an array of `shape`."""
    index = []
    for n in reversed(shape):
        flat, k = divmod(flat, n) if n else (flat, 0)
        index.append(int(k))
    return tuple(reversed(index))


def sample_elements(size: int, seed: int) -> list[int]:
    """The flat elements of an input checked one by one: all of a small one (`SMALL`),
    else `FEW` of them, seeded, with the first and the last."""
    if size <= SMALL:
        return list(range(size))
    import random

    rng = random.Random(seed)
    middle = sorted(rng.sample(range(1, size - 1), FEW - 2))
    return [0, *middle, size - 1]


# -- a value in a finding (the trace's: a float, or `mgtui.trace.arrays.ArrayValue`) -------


def shown(value: Value) -> str:
    """A value in a finding: a number to 6 digits, an array as its shape and summary."""
    return brief(value) if isinstance(value, ArrayValue) else f"{value:.6g}"


def bad_element(value: Value) -> tuple[float, str, tuple[int, ...] | None]:
    """A non-finite value as a finding names it: (the number, `[0, 2]` or "", the
    element's index): an array's first element that is nan or inf, where it was kept
    (of a big array, only the first few are: then `` (3 of its elements)``)."""
    if not isinstance(value, ArrayValue):
        return value, "", None
    k = value.first_non_finite()
    if k is None:
        return math.nan, f" (of shape {value.shape}: {value.summary[4]} elements)", None
    element = element_index(value.shape, k)
    return value.values[k], "[" + ", ".join(map(str, element)) + "]", element


def is_zero(value: Value) -> bool:
    """Is a value 0: a number, or every element of an array?"""
    if isinstance(value, ArrayValue):
        low, high, _, _, bad = value.summary
        return not bad and low == 0 and high == 0
    return value == 0


# -- live values, as the `=`-for-`+=` probe meets them (`mgtui.doctor.overwrite_check`) -------------


def any_array(*xs: object) -> bool:
    """Is any of `xs` a numpy array (the array engine's live values)?"""
    return any(is_array(x) for x in xs)


def grad_shape(grad: object, data: object) -> tuple | None:
    """The shape an input's grad is replayed with: its grad's if that is an array, else
    its data's if that is one; None for a scalar."""
    for x in (grad, data):
        if is_array(x):
            return tuple(x.shape)  # type: ignore[attr-defined]
    return None


class ArrayWatch:
    """An `on_create` hook: the shape of every node made with an array for its data, and
    the dtypes other than float64 among them. A node whose data is a float costs one
    type test."""

    def __init__(self) -> None:
        self.shapes: dict[int, tuple] = {}
        self.dtypes: set[str] = set()  # the float dtypes of array data other than float64
        self.constants: set[int] = set()  # integer data, or `requires_grad` False

    def __call__(self, nid: int, d) -> None:
        data = d.get("data")
        if type(data) is float or not is_array(data):
            return
        self.note(nid, data)
        if nid >= 0 and own_dict(d).get("requires_grad", True) is False:
            self.constants.add(nid)

    def note(self, nid: int, data) -> None:
        """Node `nid` holds `data`: its shape (and dtype) if it is an array. Integer data
        (labels, indices, `Tensor(1)`) has no gradient: a constant, not a float to nudge."""
        if is_array(data):
            if nid >= 0:
                self.shapes.setdefault(nid, tuple(data.shape))
            if data.dtype.kind in "biu":
                if nid >= 0:
                    self.constants.add(nid)
            elif data.dtype.name != "float64":
                self.dtypes.add(data.dtype.name)


def own_dict(d) -> dict:
    """A node's own instance dict (`d`, or the one a `MappedNode` view reads)."""
    inner = getattr(d, "d", d)
    return inner if isinstance(inner, dict) else {}
