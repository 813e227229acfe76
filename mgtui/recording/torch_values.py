"""Tensors' values as the torch adapter records them: by reference, converted in bulk.

Reading a small tensor into the trace one at a time (`value_of`: `numpy()`, a cast, a
copy into an `ArrayValue`) cost more than the op that made it. So a value is taken as
a `TensorRef`: the tensor itself and its `_version`, nothing copied; the refs waiting
are converted all at once (`TensorValues.flush`: one `torch.stack` a shape and dtype,
one cast, one buffer that each value takes its slice of) when a chunk is cut
(`ArraySnapshots.resolve`), and before anything can change a tensor they hold:

- an in-place op the adapter sees (`p -= lr * p.grad`, `h.add_(1)`, `t[0] = 5`, an
  `out=`) on a tensor whose refs wait (by the tensor a view is of: `holds`), or on a
  tensor the adapter does not know (`p.data.mul_(2)`: `.data` has its own version);
- a `backward()` (the engine adds into a leaf's `.grad`), a custom Function's backward,
  and a torch function written in Python (`F.relu(x, inplace=True)`), which may change
  tensors where the adapter does not see it;
- `t.data = ...` (new memory under the same tensor);
- too many waiting (`MAX_WAITING`).

A tensor whose memory numpy or another library can reach (`t.numpy()`,
`torch.from_numpy`, `data_ptr`...) could change where nothing is seen: from the first
such call on, values are copied as they are taken (`eager`), as before. A ref whose
tensor's version moved before it was converted (a change none of the above saw: a
tensor hook writing into its gradient) is not recorded, and the trace says so
(`ArraySnapshots.unrecorded`). `unseen` counts the changes the versions cannot tell
(`.data`, unknown tensors): a leaf's last value is its value still only if its version
and `unseen` are both those it was taken at (`TorchProbe.changed`).
"""

from __future__ import annotations

import math
import threading
from array import array

import torch

from mgtui.recording.array_values import Deferred
from mgtui.recording.torch_backward import value_of
from mgtui.trace.arrays import WHOLE_LIMIT, ArrayValue, snapshot

MAX_WAITING = 4096  # refs waiting before they are converted anyway
MAX_ELEMENTS = 1 << 22  # elements in their tensors (32 MB of float64 when converted)
NAMES = {torch.float64: "float64", torch.float32: "float32", torch.float16: "float16",
         torch.int64: "int64", torch.int32: "int32", torch.int16: "int16",
         torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool"}
F64 = torch.float64


class TensorRef(Deferred):
    """A tensor's value taken by reference: the tensor (`t`, until converted: a copy of
    it once it was about to change), the version `t` must still have, the version the
    tensor had when taken (`taken`), whether the value is `t`'s transpose, and `unseen`
    then (`epoch`)."""

    __slots__ = ("t", "version", "taken", "transposed", "epoch")

    def __init__(self, t, version: int, transposed: bool, epoch: int) -> None:
        self.t, self.version, self.taken, self.transposed = t, version, version, transposed
        self.epoch, self.value = epoch, None

    def __call__(self):
        return self if self.t is not None else None


class TensorValues:
    """The refs of one recording (see the module), given to its `ArraySnapshots`."""

    def __init__(self, arrays) -> None:
        self.arrays = arrays
        self.waiting: list[TensorRef] = []
        self.elements = 0  # in the tensors of the refs waiting
        self.holds: dict[int, list] = {}  # id of a tensor (a view's base) -> its refs
        self.grads = False  # a ref of a leaf's `.grad` waits (the engine adds into it)
        self.eager = False  # values copied as taken (numpy has reached a tensor's memory)
        self.unseen = 0  # changes the versions do not count, so far
        self.lock = threading.Lock()  # (chunks are cut in another thread)
        self.owner = threading.get_ident()  # the recording's thread
        arrays.deferred = TensorRef
        arrays.resolve = self.flush
        arrays.deferred_note = "torch tensor changed in place before it was read"

    def take(self, t, copy: bool = False, transposed: bool = False, grad: bool = False):
        """Tensor `t`'s value as the trace takes it: a float (one element), a
        `TensorRef`, or (eagerly) as `value_of`; `transposed`: that of `t.t()`;
        `grad`: `t` is a leaf's `.grad`."""
        try:
            n = t.numel()
            if n == 1 or self.eager or n > WHOLE_LIMIT or not n or not t.is_cpu:
                return value_of(t.detach().t() if transposed else t, copy)
            dtype = t.dtype
            if dtype not in NAMES:
                return value_of(t.detach().t() if transposed else t, copy)
            ref = TensorRef(t, t._version, transposed, self.unseen)
            base = t._base
        except (RuntimeError, TypeError, ValueError):
            return math.nan
        self.waiting.append(ref)
        key = id(t) if base is None else id(base)
        held = self.holds.get(key)  # (a ref, or a list of them)
        if held is None:
            self.holds[key] = ref
        elif type(held) is list:
            held.append(ref)
        else:
            self.holds[key] = [held, ref]
        self.grads = self.grads or grad
        self.elements += n
        if self.elements > MAX_ELEMENTS or len(self.waiting) > MAX_WAITING:
            self.flush()
        return ref

    def before_change(self, t) -> None:
        """Tensor `t`, which the recording knows, is about to change in place: each ref
        waiting on it (or on what it is a view of) takes a copy of its tensor first."""
        holds = self.holds
        if not holds:
            return
        base = t._base
        refs = holds.pop(id(t), None) if base is None else holds.pop(id(base), None)
        if refs is None:
            return
        if type(refs) is not list:
            refs = (refs,)
        with self.lock:  # (a detached tensor's copy makes no autograd node)
            copies: dict = {}
            for ref in refs:
                held = ref.t
                if held is None:  # (converted already)
                    continue
                copy = copies.get(id(held))
                if copy is None:
                    copy = copies[id(held)] = held.detach().clone()
                ref.t, ref.version = copy, copy._version

    def before_backward(self) -> None:
        """A `backward()` starts: the engine adds into leaves' grads in place."""
        if self.grads:
            self.flush()

    def changing(self) -> None:
        """Something may change tensors where neither the adapter nor their versions
        see it (`t.data = x`, an unknown tensor changed in place)."""
        self.unseen += 1
        if self.waiting:
            self.flush()

    def expose(self) -> None:
        """numpy (or another library) may reach a tensor's memory from now on."""
        self.eager = True
        self.changing()

    def flush(self) -> None:
        """Convert every ref waiting (`TensorRef.value`), a group at a time."""
        with self.lock:
            if threading.get_ident() == self.owner:  # (what another thread converts
                self.holds.clear()                    # may have been given since)
                self.grads = False
                self.elements = 0
            waiting = self.waiting
            n = len(waiting)
            if not n:
                return
            batch = waiting[:n]
            del waiting[:n]
            with torch.no_grad(), torch._C.DisableTorchFunction():  # (not the mode's)
                for key, refs in _groups(batch).items():
                    try:
                        _convert(key, refs)
                    except (RuntimeError, TypeError, ValueError):
                        for ref in refs:
                            _one(ref)


def _groups(refs: list) -> dict:
    """The refs by what is converted together: shape, dtype, transposed."""
    groups: dict = {}
    for ref in refs:
        t = ref.t
        key = (t.shape, t.dtype, ref.transposed)
        group = groups.get(key)
        if group is None:
            groups[key] = [ref]
        else:
            group.append(ref)
    return groups


def _convert(key: tuple, refs: list) -> None:
    """Convert refs of one shape and dtype: one stack, one cast, one buffer."""
    shape, dtype, transposed = key
    stacked = torch.stack([ref.t for ref in refs]) if len(refs) > 1 else refs[0].t[None]
    if transposed and len(shape) == 2:
        stacked = stacked.transpose(1, 2)
        shape = (shape[1], shape[0])
    if dtype is not F64:
        stacked = stacked.to(F64)
    flat = array("d")
    flat.frombytes(memoryview(stacked.contiguous().numpy()).cast("B"))
    shape, name = tuple(shape), NAMES[dtype]
    size, at = math.prod(shape), 0
    for ref in refs:
        t = ref.t
        if t._version == ref.version:
            ref.value = ArrayValue(shape, name, flat[at:at + size])
        at += size
        ref.t = None


def _one(ref: TensorRef) -> None:
    t, ref.t = ref.t, None
    if t._version == ref.version:
        data = value_of(t.detach().t() if ref.transposed else t)
        ref.value = None if type(data) is float else snapshot(data)
