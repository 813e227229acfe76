"""Writes the torch adapter (`mgtui.recording.torch_recorder`) sees outside autograd's
graph and outside a recorded tensor changed in place through itself:

- an in-place op on a recorded leaf's memory through another tensor: makemore's
  `p.data += -lr * p.grad`, `p.data.sub_(...)`, `p.detach().mul_(...)`. Each is a data
  event of the leaf, as `p -= lr * p.grad` is;
- an in-place op on a recorded leaf's grad: the tutorial's `a.grad.zero_()`,
  `clip_grad_norm_`'s `g.mul_(coef)`, `p.grad.data.clamp_(-1, 1)`, a module's
  `zero_grad(set_to_none=False)`. Each is a grad event of the leaf, as `p.grad = None` is;
- `p.data = u` (the leaf given other memory, which no version counter sees): a data event;
- an in-place op on a list of tensors: what an optimizer made with `foreach=True` or
  `fused=True` runs (`torch._foreach_add_(params, grads, alpha=-lr)`,
  `torch._fused_adam_(params, ...)`), and `clip_grad_norm_` on its grads. Each recorded
  node of the first list is a data event, each leaf's grad a grad event, in its order.

A tensor that is no node is told to be a leaf's data or grad by its memory (`data_ptr`,
or its base's for a view such as `p.grad[0]`; `.data` and `detach()` share it), among the
recorded leaves' data and the grads a recorded `backward()` or `p.grad = g` gave them.
None of this is on the recording's hot path: a training step that changes only its own
parameters (`p -= lr * p.grad`) never asks.
"""

from __future__ import annotations

from weakref import ref

from mgtui.recording.store import DATA, GRAD
from mgtui.recording.torch_backward import GRAD_FIELD, value_of
from mgtui.trace import Field

DATA_FIELD = Field.DATA.code
# In-place methods that change no element: a tensor they are called on is not written.
NOT_WRITES = frozenset(("requires_grad_", "detach_", "share_memory_", "retain_grad"))


class TensorWrites:
    """The recorded leaves (node -> a weak reference), those that have had a grad, and
    the memory of both, made again when asked after it may have moved."""

    def __init__(self, adapter) -> None:  # (a `TorchRecorder`)
        self.adapter = adapter
        self.leaves: dict[int, ref] = {}
        self.graded: dict[int, ref] = {}
        # a data pointer -> (node, field, the leaf, the tensor there: the leaf or its
        # grad, weakly, and the pointer); None: to be made again (a leaf, a grad or
        # memory is new since)
        self.memory: dict[int, tuple] | None = None

    def leaf(self, nid: int, leaf) -> None:
        """Leaf `leaf` (node `nid`) was recorded."""
        self._add(self.leaves, nid, leaf)

    def grad_given(self, nid: int, leaf) -> None:
        """Leaf `leaf` (node `nid`) was given a grad, or another one."""
        self._add(self.graded, nid, leaf)

    def _add(self, leaves: dict, nid: int, leaf) -> None:
        if nid not in leaves:
            try:
                leaves[nid] = ref(leaf)
            except TypeError:
                return
        self.memory = None

    def owner(self, t, func) -> tuple | None:
        """(node, field, tensor) if tensor `t`, no node itself, is the memory of a
        recorded leaf's data or grad (or a view of it), and `func` may change its
        elements, else None."""
        if not self.leaves or getattr(func, "__name__", "") in NOT_WRITES:
            return None
        memory = self.memory
        if memory is None:
            memory = self.memory = self._by_memory()
        try:
            found = memory.get(t.data_ptr())
            if found is None and t._base is not None:
                found = memory.get(t._base.data_ptr())
        except (RuntimeError, TypeError, AttributeError):
            return None
        if found is None:
            return None
        nid, field, leaf, there = found[0], found[1], found[2](), found[3]()
        if leaf is None or there is None or (field == GRAD_FIELD and leaf.grad is not there):
            return None  # (a grad let go since: `zero_grad`, `p.grad = None`)
        if there.data_ptr() != found[4]:
            return None  # (a leaf given other memory since, `p.set_(u)`: not its memory now)
        return nid, field, there

    def _by_memory(self) -> dict[int, tuple]:
        memory: dict[int, tuple] = {}
        for field, leaves in ((DATA_FIELD, self.leaves), (GRAD_FIELD, self.graded)):
            for nid, leaf_ref in list(leaves.items()):
                leaf = leaf_ref()
                if leaf is None:
                    del leaves[nid]
                    continue
                there = leaf if field == DATA_FIELD else leaf.grad
                try:
                    if there is not None:
                        at = there.data_ptr()
                        memory[at] = (nid, field, leaf_ref, ref(there), at)
                except (RuntimeError, TypeError):
                    continue
        return memory

    def changed(self, owner: tuple, func, args, kwargs, line: int):
        """Run `func`, which changes a recorded leaf's data or grad in place through
        another tensor (`owner`: node, field, the leaf or its grad): an event."""
        nid, field, there = owner
        before = self._before(nid, field, there)
        out = func(*args, **kwargs) if kwargs else func(*args)
        self._after(nid, field, there, before, line)
        return out

    def changed_each(self, func, args, kwargs, line: int):
        """Run `func`, an in-place op on the list of tensors `args[0]` (`_foreach_*_`,
        `_fused_*_`): an event for each recorded node and each recorded leaf's grad in
        it, in its order."""
        adapter = self.adapter
        changing = []  # (node, field, tensor, before)
        for t in args[0]:
            nid = adapter.nid_of(t)
            owner = (nid, DATA_FIELD, t) if nid is not None else self.owner(t, func)
            if owner is not None:
                changing.append((*owner, self._before(*owner)))
        out = func(*args, **kwargs) if kwargs else func(*args)
        for nid, field, there, before in changing:
            self._after(nid, field, there, before, line)
        return out

    def data_set(self, func, args, kwargs, line: int):
        """Run `func`, `t.data = u` (`args`: t, u): other memory for `t`, which no version
        counter sees; on a recorded node, a data event."""
        t = args[0]
        nid = self.adapter.nid_of(t)
        if nid is not None and len(args) > 1 and same_memory(t, args[1]):
            nid = None  # (`p.data += u` ends `p.data = p.data`: written already, in place)
        if nid is not None:
            self.adapter.views.kept.pop(nid, None)  # (not its memory any more)
            before = self._before(nid, DATA_FIELD, t)
        out = func(*args, **kwargs) if kwargs else func(*args)
        self.memory = None
        if nid is not None:
            self._after(nid, DATA_FIELD, t, before, line)
        return out

    def _before(self, nid: int, field: int, there):
        """A copy of `there` (node `nid`'s data, or its grad) before it changes."""
        if field == DATA_FIELD:
            return value_of(there, True)
        return self.adapter.views.grad_now(nid, there, True)

    def _after(self, nid: int, field: int, there, before, line: int) -> None:
        adapter = self.adapter
        after = value_of(there)
        adapter.write(nid, field, DATA if field == DATA_FIELD else GRAD, before, after, line)
        if field == DATA_FIELD:
            adapter.views.keep(nid, there, after)


def same_memory(t, u) -> bool:
    """Do tensors `t` and `u` lie in the same memory the same way (`u` is `t.data`)?"""
    try:
        return (u.data_ptr() == t.data_ptr() and u.shape == t.shape and u.dtype == t.dtype
                and u.stride() == t.stride())
    except (RuntimeError, TypeError, AttributeError):
        return False
