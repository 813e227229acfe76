"""The values of autograd's own nodes inside one torch call, which the scenario never saw
made (`mgtui.recording.torch_recorder` records them as nodes, with their line): a weight's
transpose inside `F.linear`, and the `view`, `expand`, `mm`, `bmm` and `addmm` that a
matrix product of 3-D tensors is inside torch (`x @ W`, an `nn.Linear` on a batch of
sequences, attention's `q @ k.transpose(-2, -1)`).

A value comes from where it is still to be had as the forward has just run: the leaf a
transpose reads; the output an op keeps for its backward (`_saved_result`); the input a
matrix product keeps (`_saved_self`, `_saved_mat2`...), for the node that made it; or the
value of the node that consumes it, shaped back, for a view, a reshape or an expand (`given`: the
consumer's `_fn_node` works out its children's before it records them). What none of
these gives is nan, counted among the values not recorded (`HIDDEN`), which the trace
says out loud.
"""

from __future__ import annotations

import math

import torch

from mgtui.recording.torch_backward import kept, value_of
from mgtui.trace.arrays import HIDDEN, WHOLE_LIMIT

NAN = math.nan
TRANSPOSES = ("TBackward0", "PermuteBackward0", "TransposeBackward0")
# a product's node: which of its inputs (by its place among the node's inputs) it keeps,
# by the name torch saves it under (where that input needs it: an input without grad
# keeps nothing for the other)
SAVED_INPUTS = {
    "MmBackward0": {0: "_saved_self", 1: "_saved_mat2"},
    "BmmBackward0": {0: "_saved_self", 1: "_saved_mat2"},
    "AddmmBackward0": {1: "_saved_mat1", 2: "_saved_mat2"},
    "BaddbmmBackward0": {1: "_saved_batch1", 2: "_saved_batch2"},
    "MulBackward0": {0: "_saved_self", 1: "_saved_other"},
    "DivBackward0": {0: "_saved_self", 1: "_saved_other"},
}
# a view or reshape's node: its input is its own value in the input's shape
RESHAPES = frozenset(("ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0"))


def given(consumer: tuple, node):
    """The value of autograd node `node`, input `i` of autograd node `fn`, `consumer` =
    (fn, i, what fn's own value is: its tensor, or the value worked out for it, or None),
    where `fn` keeps that input or is a view of it; else None. (A leaf's transpose is
    worked out from the leaf, `hidden_value`: a big one's summary is had again there.)"""
    if type(node).__name__ in TRANSPOSES:
        return None
    fn, i, source = consumer
    name = type(fn).__name__
    try:
        if name in SAVED_INPUTS:
            attr = SAVED_INPUTS[name].get(i)
            saved = getattr(fn, attr) if attr is not None else None
            return value_of(saved) if isinstance(saved, torch.Tensor) else None
        if source is None or name not in RESHAPES and name != "ExpandBackward0":
            return None
        own = value_of(source) if isinstance(source, torch.Tensor) else source
        if type(own) is float:
            return None if own != own else own  # (one element: its input's too; nan: unknown)
        sizes = tuple(fn._saved_self_sym_sizes)
        if name != "ExpandBackward0":
            return own.reshape(sizes)
        own = own[(0,) * (own.ndim - len(sizes))]  # (dims the expand put in front)
        return own[tuple(slice(0, 1) if n == 1 else slice(None) for n in sizes)]
    except (RuntimeError, ValueError, TypeError, AttributeError):  # (freed, not as expected)
        return None


def hidden_value(fn, nr: int, views, targets: list):
    """The value of output `nr` of autograd node `fn` that no consumer gave (`given`):
    a leaf's transpose worked out (`targets`: the node's inputs, as `_fn_node` found them;
    `views`: the adapter's `TensorViews`); an op's output it keeps (`_saved_result`: the
    log-softmax inside `F.cross_entropy`), read as it is now; else nan, counted."""
    name = type(fn).__name__
    if name in TRANSPOSES:  # (`W.T`, a property: no op the scenario's mode sees)
        target = targets[0] if len(targets) == 1 else None
        if target is not None and target[1] is not None:  # (a leaf's transpose)
            leaf = target[1]
            view = views.holding(target[0], leaf)  # (the array kept of its memory, if it
            value = value_of(leaf) if view is None else view[0]  # still says it all)
            if type(value) is float:
                return value
            try:
                value = _transposed(fn, name, value)  # (numpy's: a view, no op dispatched)
                if value.size > WHOLE_LIMIT and value.dtype.char in "fd":
                    return views.big(leaf, value)  # (the leaf's summary, if held)
                return kept(value)
            except (ValueError, TypeError, RuntimeError):  # (saved dims not as expected)
                pass
    elif nr == 0:
        try:
            saved = getattr(fn, "_saved_result", None)
        except RuntimeError:  # (freed by a backward already)
            saved = None
        if isinstance(saved, torch.Tensor):
            return value_of(saved)
    unrecorded = views.arrays.unrecorded
    unrecorded[HIDDEN] = unrecorded.get(HIDDEN, 0) + 1
    return NAN


def _transposed(fn, name: str, value):
    """A leaf's value as transposed by autograd node `fn` (of `TRANSPOSES`)."""
    if name == "TBackward0":
        return value.T
    if name == "PermuteBackward0":
        return value.transpose([_signed(d) for d in fn._saved_dims])
    return value.swapaxes(_signed(fn._saved_dim0), _signed(fn._saved_dim1))


def _signed(d: int) -> int:
    """A saved dim as numpy takes it (torch gives -1 as 2**64 - 1)."""
    return d - (1 << 64) if d >= 1 << 63 else d
