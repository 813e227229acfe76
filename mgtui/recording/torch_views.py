"""What the torch adapter (`mgtui.recording.torch_recorder`) keeps of a recorded leaf's
value for its next change in place (`p -= lr * p.grad`, an optimizer's `p.add_(...)`),
and how it tells that the leaf still holds it.

A change's before is the value the leaf has just before it. Where the leaf still holds
what its last snapshot was taken of, that snapshot is the before (the array support's
`last`, found by the array it was taken of, kept here): no copy of the leaf is taken, and
none compared. The leaf's version (`Tensor._version`) counts every change autograd sees,
in place or through a view; it does not count a change through memory handed out
uncounted (`t.data`, `t.numpy()`, `t.untyped_storage()`...), which the adapter's mode
sees handed out (`leak`): a storage so handed out is told by its bytes from then on (an
array over `WHOLE_LIMIT` elements, summarised rather than kept, by a copy taken).

A value over `WHOLE_LIMIT` elements is summarised (four passes over it), not kept; the
same memory is often summarised again unchanged: a weight's transpose inside `F.linear`
at each forward, a gradient passed on as its transpose (`TBackward0`) into a leaf, a grad
set aside by `zero_grad`. `big` gives the summary it made of that memory again where the
tensor's version says it has not changed since, and nothing handed it out uncounted.
"""

from __future__ import annotations

from array import array
from weakref import ref

from mgtui.recording.torch_backward import NUMPY_DTYPES, taken, value_now_copy, value_of
from mgtui.trace import Field
from mgtui.trace.array_numpy import snapshot
from mgtui.trace.arrays import SAMPLE, WHOLE_LIMIT, ArrayValue

DATA_FIELD = Field.DATA.code
LEAKED_LIMIT = 4096  # storages told apart as handed out; past it, every one is
KNOWN_LIMIT = 256  # big values remembered before those of tensors let go are pruned


class TensorViews:
    """Each recorded leaf's last value (node -> (the numpy array sharing its memory that
    the last snapshot was taken of, its data pointer, its version then)), and the
    storages handed out uncounted, by their data pointer (None: one that has none)."""

    def __init__(self, arrays) -> None:  # (the recording's `ArraySnapshots`)
        self.arrays = arrays
        self.kept: dict[int, tuple] = {}
        self.leaked: set = set()
        # id of a tensor not a view -> (a weak reference to it, its version, data pointer,
        # elements and dtype, an `ArrayValue` summarising it): `big`
        self.known: dict[int, tuple] = {}
        # a leaf's node -> (a weak reference to its grad, the grad's version, its value as
        # the trace has it), as a recorded `backward()` left it: `grad_now`
        self.grads_held: dict[int, tuple] = {}

    def keep(self, nid: int, t, data) -> None:
        """Keep `data`, an array sharing tensor `t`'s memory (node `nid`'s value, as the
        array snapshots were just given it), for `t`'s next change in place: its before
        is that snapshot if `t` still holds it, and its after this same array, not two
        more arrays made and copied."""
        if type(data) is not float and t.is_cpu and t.dtype in NUMPY_DTYPES:
            self.kept[nid] = (data, t.data_ptr(), t._version)
            self._taken(nid, t, data)

    def changed(self, nid: int, view: tuple, t) -> None:
        """Leaf `t` (node `nid`), `holding` `view`, was changed in place and its after
        taken of the same array."""
        a = view[0]
        self.kept[nid] = (a, view[1], t._version)
        if a.size > WHOLE_LIMIT:  # (a summarised one: `big` may give it again)
            self._taken(nid, t, a)

    def _taken(self, nid: int, t, a) -> None:
        """Leaf `t` (node `nid`), as numpy array `a`, was just summarised by the array
        snapshots (`last`): `big` may give that summary again."""
        last = self.arrays.held(nid, DATA_FIELD)
        if last is not None and not last[1].whole and last[0]() is a:
            flags = a.flags
            if flags.c_contiguous or flags.f_contiguous:
                base = t._base if t._base is not None else t
                self.remember(base, t._version, t.data_ptr(), a, last[1])

    def holding(self, nid: int, t) -> tuple | None:
        """What is kept of leaf `t` (node `nid`) if it still holds what its last snapshot
        was taken of, else None."""
        view = self.kept.get(nid)
        if view is None or view[1] != t.data_ptr():
            return None
        a = view[0]
        live = self.arrays.live(nid, DATA_FIELD)  # (not `held`: no value made of a raw copy)
        if live is None or live() is not a:
            return None
        if view[2] == t._version and not (self.leaked and self.leaked_now(t)):
            return view  # (its shape too: what changes it in place counts a version, and
            #             `t.data = u` lets go of what is kept: `TensorWrites.data_set`)
        if a.shape != t.shape:
            return None
        last = self.arrays.held(nid, DATA_FIELD)
        return view if still_holds(last, a) else None  # (`p.data.mul_(2)`)

    def big(self, t, a):
        """The `ArrayValue` of numpy array `a` over `WHOLE_LIMIT` elements of floats,
        all of tensor `t`'s memory in C or Fortran order (`t`, its transpose):
        summarised from where it lies (`snapshot`), or, where `t` (or a view of the
        same tensor) was summarised so since and its version says it has not changed,
        that summary again (it reads the memory in its own order: the same numbers, bit
        for bit), with `a`'s shape and first elements. Anything else: `snapshot`."""
        flags = a.flags
        if not (flags.c_contiguous or flags.f_contiguous) or a.size <= WHOLE_LIMIT:
            return snapshot(a)
        base = t._base if t._base is not None else t
        known = self.known.get(id(base))
        version, at = t._version, t.data_ptr()
        if (known is not None and known[0]() is base and known[1] == version
                and known[2] == at and known[3] == a.size and known[4] == a.dtype
                and not (self.leaked and self.leaked_now(t))):
            done = known[5]
            first = array("d", a.flat[:SAMPLE].astype("float64").tolist())
            return ArrayValue(tuple(a.shape), done.dtype, first, False, done.given, done.basis)
        value = snapshot(a)
        self.remember(base, version, at, a, value)
        return value

    def value_now(self, t):
        """`torch_backward.value_now`, a big one summarised as `big` does (a grad set
        aside)."""
        value = taken(t)
        if value is not None:
            return value
        a = value_of(t)
        if type(a) is not float and a.size > WHOLE_LIMIT and a.dtype.char in "fd":
            return self.big(t, a)
        return a

    def grad_now(self, nid: int, g, copy: bool = False):
        """`value_now` of leaf `nid`'s grad `g` as it is let go (`zero_grad`), or before
        it changes in place (`copy`: `value_now_copy`): the value the trace has of it
        already where `g` is the grad a recorded `backward()` left
        (`BackwardRun._accumulated`) and its version says it has not changed since, and
        no memory of it was handed out uncounted (`leak`)."""
        held = self.grads_held.pop(nid, None)
        if (held is not None and held[0]() is g and held[1] == g._version
                and not (self.leaked and self.leaked_now(g))):
            return held[2]
        return value_now_copy(g) if copy else self.value_now(g)

    def remember(self, base, version: int, at: int, a, value) -> None:
        if type(value) is not ArrayValue or value.whole or value.given is None:
            return
        known = self.known
        if len(known) >= KNOWN_LIMIT:
            for key in [k for k, entry in known.items() if entry[0]() is None]:
                del known[key]
            if len(known) >= KNOWN_LIMIT:
                known.clear()
        known[id(base)] = (ref(base), version, at, a.size, a.dtype, value)

    def copied(self, t, a, value) -> None:
        """Tensor `t` holds a copy of numpy array `a` (a leaf's grad, the gradient the
        engine gave it), which `big` summarised as `value`: if it lies in memory in the
        same order, `big` may give that summary again for it."""
        itemsize = a.itemsize
        if t.shape == a.shape and t.stride() == tuple(k // itemsize for k in a.strides):
            base = t._base if t._base is not None else t
            self.remember(base, t._version, t.data_ptr(), a, value)

    def leak(self, t) -> None:
        """The scenario has a handle on tensor `t`'s memory whose changes `t`'s version
        does not count (`t.data`, `t.numpy()`): its storage's changes are told by its
        bytes from now on (`holding`)."""
        leaked = self.leaked
        if None in leaked:
            return
        try:
            leaked.add(t.untyped_storage().data_ptr())
        except (RuntimeError, TypeError, AttributeError, NotImplementedError):
            leaked.add(None)  # (no storage to tell it by: every tensor's bytes)
        if len(leaked) > LEAKED_LIMIT:  # (a run that hands out memory at every step)
            leaked.add(None)

    def leaked_now(self, t) -> bool:
        """Was tensor `t`'s memory handed out uncounted (`leak`)?"""
        if None in self.leaked:
            return True
        try:
            return t.untyped_storage().data_ptr() in self.leaked
        except (RuntimeError, TypeError, AttributeError, NotImplementedError):
            return True


def still_holds(last: tuple | None, view) -> bool:
    """Whether a field's last snapshot (`ArraySnapshots.held`: a weak reference to the
    array it was taken of, and the `ArrayValue` taken) was taken of the numpy array
    `view`, and `view` still holds it bit for bit (as float64, as the snapshot does)."""
    if last is None or last[0]() is not view or not last[1].whole:
        return False
    raw = last[1]._values
    if type(raw) is bytes and len(raw) == view.nbytes:  # (taken of `view` in its dtype)
        return raw == view.tobytes()
    return last[1].values.tobytes() == view.astype("float64", copy=False).tobytes()
