"""Writes the torch adapter (`mgtui.recording.torch_recorder`) sees outside autograd's
graph and outside a tensor of its own changed in place:

- an in-place op on a recorded leaf's grad: the tutorial's `a.grad.zero_()`,
  `clip_grad_norm_`'s `g.mul_(coef)`, `p.grad.data.clamp_(-1, 1)`, a module's
  `zero_grad(set_to_none=False)`. Each is a grad event of the leaf, as `p.grad = None` is.
  A grad is found by its memory (`data_ptr`, or its base's for a view of it such as
  `p.grad[0]`; `.data` shares it), among the grads of the leaves a recorded `backward()`
  or `p.grad = g` gave a grad (`GradWrites.leaf`);
- an in-place op on a list of tensors: what an optimizer made with `foreach=True` or
  `fused=True` runs (`torch._foreach_add_(params, grads, alpha=-lr)`,
  `torch._fused_adam_(params, ...)`), and `clip_grad_norm_` on its grads. Each tensor of
  the first list that is a recorded node is a data event, each that is a leaf's grad a
  grad event, in the list's order.

Neither touches the recording's hot path: a training step that changes only its own
parameters (`p -= lr * p.grad`) never asks.
"""

from __future__ import annotations

from weakref import ref

from mgtui.recording.store import DATA, GRAD
from mgtui.recording.torch_backward import GRAD_FIELD, value_of
from mgtui.trace import Field

DATA_FIELD = Field.DATA.code
# In-place methods that change no element: a grad they are called on is not written.
NOT_WRITES = frozenset(("requires_grad_", "detach_", "share_memory_", "retain_grad"))


class GradWrites:
    """The recorded leaves that have had a grad (node -> a weak reference to the leaf),
    and their grads by memory, made again when asked after a grad may have changed."""

    def __init__(self, adapter) -> None:  # (a `TorchRecorder`)
        self.adapter = adapter
        self.leaves: dict[int, ref] = {}
        # a grad's data pointer -> (its leaf's node, the leaf, the grad), weakly; None:
        # to be made again (a backward pass ran, or a grad was set, since)
        self.memory: dict[int, tuple] | None = None

    def leaf(self, nid: int, leaf) -> None:
        """Leaf `leaf` (node `nid`) was given a grad, or another one."""
        if nid not in self.leaves:
            try:
                self.leaves[nid] = ref(leaf)
            except TypeError:
                return
        self.memory = None

    def owner(self, t, func) -> tuple | None:
        """(node, grad) if tensor `t` is the memory of a recorded leaf's grad (or a view
        of it) and `func` may change its elements, else None."""
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
        nid, leaf, grad = found[0], found[1](), found[2]()
        if leaf is None or grad is None or leaf.grad is not grad:
            return None  # (a grad let go since: `zero_grad`, `p.grad = None`)
        return nid, grad

    def _by_memory(self) -> dict[int, tuple]:
        memory: dict[int, tuple] = {}
        for nid, leaf_ref in list(self.leaves.items()):
            leaf = leaf_ref()
            if leaf is None:
                del self.leaves[nid]
                continue
            g = leaf.grad
            if g is None:
                continue
            try:
                memory[g.data_ptr()] = (nid, leaf_ref, ref(g))
            except (RuntimeError, TypeError):
                continue
        return memory

    def changed(self, owner: tuple, func, args, kwargs, line: int):
        """Run `func`, which changes a recorded leaf's grad in place (`owner`: node,
        grad): a grad event."""
        nid, grad = owner
        before = self.adapter.views.grad_now(nid, grad, True)
        out = func(*args, **kwargs) if kwargs else func(*args)
        self.adapter.write(nid, GRAD_FIELD, GRAD, before, value_of(grad), line)
        return out

    def changed_each(self, func, args, kwargs, line: int):
        """Run `func`, an in-place op on the list of tensors `args[0]` (`_foreach_*_`,
        `_fused_*_`): a data event for each recorded node in it, a grad event for each
        recorded leaf's grad, in its order."""
        adapter = self.adapter
        views = adapter.views
        changing = []  # (node, tensor, field, event kind, before)
        for t in args[0]:
            nid = adapter.nid_of(t)
            if nid is not None:
                changing.append((nid, t, DATA_FIELD, DATA, value_of(t, True)))
                continue
            owner = self.owner(t, func)
            if owner is not None:
                nid, grad = owner
                changing.append((nid, grad, GRAD_FIELD, GRAD, views.grad_now(nid, grad, True)))
        out = func(*args, **kwargs) if kwargs else func(*args)
        for nid, t, field, kind, before in changing:
            after = value_of(t)
            adapter.write(nid, field, kind, before, after, line)
            if field == DATA_FIELD:
                views.keep(nid, t, after)
        return out
