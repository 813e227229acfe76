"""The torch calls of a scenario as the torch adapter (`mgtui.recording.torch_recorder`)
sees them: one `TorchFunctionMode` (`CallMode`), on while the recording runs, which
sorts each call by its function (`kind_of`, worked out once a function) and hands the
adapter what it records: tensors made, changed in place, given `requires_grad`, or
their memory handed out.
"""

from __future__ import annotations

import sys
from functools import wraps

import torch
from torch.overrides import TorchFunctionMode

REQUIRES_GRAD = torch._C.TensorBase.requires_grad  # (its setter's `__self__`)
GRAD_ATTR = torch._C.TensorBase.grad  # (the same: `p.grad = None` in `zero_grad`)
DATA_ATTR = torch._C.TensorBase.data  # (`t.data`'s getter's)
TENSORS = (torch.Tensor, torch.nn.Parameter)
TENSOR = torch.Tensor


class CallMode(TorchFunctionMode):
    """Every torch call of the scenario, while the recording runs."""

    def __init__(self, adapter) -> None:  # (a `TorchRecorder`)
        super().__init__()
        self.adapter = adapter

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # (The hot path of a recording: each torch call, property reads included, comes
        # here. A call that makes nothing autograd tracks does a dict lookup and two
        # checks; what a node needs past its line is left to `TorchRecorder.made`.)
        kind = KINDS.get(func)
        if kind is None:
            kind = KINDS[func] = kind_of(func)
        adapter = self.adapter
        if kind is READ:
            return func(*args, **kwargs) if kwargs else func(*args)
        if kind is LEAK:  # (a custom backward's too)
            if args and isinstance(args[0], TENSOR):
                adapter.views.leak(args[0])
            return func(*args, **kwargs) if kwargs else func(*args)
        if adapter.paused:
            return func(*args, **kwargs) if kwargs else func(*args)
        if kind is CALL:
            out = func(*args, **kwargs) if kwargs else func(*args)
            t = type(out)
            if t is TENSOR:
                if out.requires_grad:
                    adapter.made_tensor(out, sys._getframe(1))
            elif t is tuple or t is list or isinstance(out, torch.Tensor):
                adapter.made(out, sys._getframe(1))
            return out
        if kind is HOOK:
            adapter.hooked = True
            return func(*args, **kwargs) if kwargs else func(*args)
        if kind is GRAD_SET or (kind is IN_PLACE and args and type(args[0]) in TENSORS):
            return adapter.changed(func, args, kwargs, kind is GRAD_SET)
        if kind is IN_PLACE_EACH and args and type(args[0]) in (list, tuple):
            line = adapter.scenario_line(sys._getframe(1))
            return adapter.writes.changed_each(func, args, kwargs, line)
        if kind is DATA_SET and args and type(args[0]) in TENSORS:
            line = adapter.scenario_line(sys._getframe(1))
            return adapter.writes.data_set(func, args, kwargs, line)
        out = func(*args, **kwargs) if kwargs else func(*args)
        if kind is REQUIRES_GRAD_SET:
            t = args[0]
            if t.requires_grad and t.grad_fn is None and adapter.nid_of(t) is None:
                adapter.tensor(t, adapter.scenario_line(sys._getframe(1)))
            return out
        if isinstance(out, (torch.Tensor, tuple, list)):
            adapter.made(out, sys._getframe(1))
        return out


# What a torch call is to the recording (`kind_of`), by the function, worked out once.
CALL, READ, GRAD_SET, IN_PLACE = "call", "read", "grad=", "in place"
REQUIRES_GRAD_SET = "requires_grad="
DATA_SET = "data="  # `t.data = u`: `t` given other memory (perhaps another shape and dtype)
IN_PLACE_EACH = "in place, each"  # `torch._foreach_add_(params, grads)`, `_fused_adam_`
HOOK = "hook"  # `t.register_hook(h)`: a hook that may write into the gradient it is given
LEAK = "leak"  # `t.data`, `t.numpy()`: `t`'s memory handed out, its changes uncounted
LEAKS = frozenset(("numpy", "__array__", "untyped_storage", "storage", "_typed_storage",
                   "__dlpack__", "data_ptr"))
KINDS: dict = {}


def kind_of(func) -> str:
    name = getattr(func, "__name__", "")
    owner = getattr(func, "__self__", None)
    if name == "__get__":  # a property read (`p.grad`): nothing to record; `t.data`'s
        return LEAK if owner is DATA_ATTR else READ  # memory is changed uncounted
    if name in LEAKS:
        return LEAK
    if name in ("register_hook", "register_post_accumulate_grad_hook"):
        return HOOK
    if name == "__set__":
        return (GRAD_SET if owner is GRAD_ATTR else REQUIRES_GRAD_SET
                if owner is REQUIRES_GRAD else DATA_SET if owner is DATA_ATTR else CALL)
    if name.startswith(("_foreach_", "_fused_")) and name.endswith("_"):
        return IN_PLACE_EACH  # (an optimizer's with `foreach=True` or `fused=True`)
    if (name.endswith("_") and not name.startswith("_")) or name.startswith("__i"):
        return IN_PLACE  # `p.sub_(g)`, `p -= g`
    return CALL


def not_followed(unrecorded: dict, name: str, fn):
    """`fn`, counted in `unrecorded` (`ArraySnapshots.unrecorded`) as `name` at each call:
    the trace says it ran and that its work was not recorded (`arrays.NOT_FOLLOWED`)."""
    inside = [0]

    @wraps(fn)
    def counted(*args, **kwargs):
        if not inside[0]:  # (torch's override mode calls it again, by its module's name)
            unrecorded[name] = unrecorded.get(name, 0) + 1
        inside[0] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            inside[0] -= 1

    return counted
