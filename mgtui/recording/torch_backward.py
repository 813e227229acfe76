"""The backward half of the torch adapter (`mgtui.recording.torch_recorder`): one recorded
`backward()` call (`BackwardRun`) and the hooks its autograd nodes carry (`noted`, `leaf_noted`, and a
custom Function's `custom_before` / `custom_after`), registered once per node as the
adapter records it, through `quick_register`; each step's closure index
(`StepClosures`); `zero_grad` recorded; and how a tensor's
value is read (`taken`, straight from its memory where it can be, else `value_of`).

A hook does the least it can while the engine runs: it notes its node and the
gradients it returned, held as they are (`steps`), and `settle` makes the steps from
the notes when `backward()` returns. The gradients held are as the engine passed them
on: the engine adds into a gradient in place only where nothing else holds it (with a
reference held, a leaf's `AccumulateGrad` copies the gradient into `.grad` rather than
taking it, and an input buffer adds out of place: the same sums, bit for bit). Where a
hook of the scenario's own may write into a gradient (a tensor's `register_hook`, a
node hook not the adapter's), the gradients are copied as they are noted (`copied`); a
custom Function's backward, which may write into the gradient it is given, runs after
the steps noted before it are made (`custom_before`).
"""

from __future__ import annotations

import math
import sys
from math import prod
from ctypes import c_char

from functools import partial, wraps
from typing import NamedTuple
from weakref import ref

import torch
from torch._C import DisableTorchFunction

from mgtui.recording.store import BACKWARD, EVENT_ROW, GRAD, WRITE_ROW
from mgtui.trace import Field
from mgtui.trace.arrays import WHOLE_LIMIT, WRITE, ArrayValue
from mgtui.trace.array_numpy import snapshot
from mgtui.trace.engine_kind import AUTOGRAD_FILE

GRAD_FIELD = Field.GRAD.code
NAN = math.nan
ZERO = 0.0  # (by identity: the grad of a node no gradient has reached yet)
NUMPY_DTYPES = {torch.float64, torch.float32, torch.float16, torch.int64, torch.int32,
                torch.int16, torch.int8, torch.uint8, torch.bool}
ITEMSIZES = {"float32": 4, "float64": 8}  # (`taken_like`: a value's bytes an element)
TAKEN_DTYPES = {torch.float32: ("float32", 4), torch.float64: ("float64", 8)}  # (`taken`:
#                                                               the name, bytes an element)
SETTLE_EVERY = 64  # steps noted before they are made while the pass runs (`noted`)
ACCUMULATE = type(torch.tensor(0.0, requires_grad=True).expand(1).grad_fn.next_functions[0][0])


class FunctionCall(NamedTuple):
    """A custom Function's backward call, as the doctor's check is given it
    (`mgtui.recording.probes.Hooks.on_function`)."""

    cls: type  # the Function
    args: tuple  # what its apply got (tensors detached and copied)
    grad_outputs: tuple  # the gradients the backward was given
    grad_inputs: tuple  # and what it returned, as the engine passed them on
    node: int  # the node of its output
    event: int  # its backward step's event index
    backward_pass: int  # counted from 1
    line: int  # the line of its backward that returned


def value_of(t, copy: bool = False):
    """A tensor's value as the trace takes it: one element reads as a float, as a
    micrograd value; a bigger tensor as a numpy array, for the array support
    (`mgtui.recording.array_values`, which copies it as it records it: `copy` for a
    value kept before an in-place change); nan if it cannot be read."""
    try:
        if t.numel() == 1:
            return float(t.item())
        if t.requires_grad:  # (a gradient seldom does: no detached tensor made for it;
            t = t.data  # `.data` rather than `detach()`: no op dispatched, half the cost)
        try:
            a = t.numpy()
        except TypeError:  # (a dtype numpy has not, a tensor on a GPU)
            if t.dtype not in NUMPY_DTYPES:
                t = t.to(torch.float64)
            a = t.cpu().numpy()
        return stored_copy(a) if copy else a
    except (RuntimeError, TypeError, ValueError, OverflowError):
        return NAN


def stored_copy(a):
    """A copy of a numpy array; of a broadcast (`expand`ed) view, some stride 0, a copy
    of its storage alone, broadcast again: never the elements it does not hold."""
    if a.ndim and 0 in a.strides:
        stored = a[tuple(slice(0, 1) if k == 0 else slice(None) for k in a.strides)]
        return sys.modules["numpy"].broadcast_to(stored.copy(), a.shape)
    return a.copy()


def taken(t):
    """A tensor's value as the trace keeps it, taken now (a copy: whatever the tensor
    does next): one element a float, as `value_of`; a CPU float32 or float64 tensor
    laid out in C order, of up to `WHOLE_LIMIT` elements, the `ArrayValue` the array
    support would make of `value_of(t)` (its bytes read straight from the tensor's
    memory by ctypes: no numpy array made, no detached tensor, one copy); None for any other
    tensor (then `value_of`, and the array support takes the array)."""
    try:
        shape = tuple(t.shape)
        n = prod(shape)  # (each read of a tensor is ~600 instructions: `numel` one more)
        if n == 1:
            return float(t.item())
        kind = TAKEN_DTYPES.get(t.dtype)
        if kind is None or not n or n > WHOLE_LIMIT or not t.is_cpu or t.is_neg():
            return None  # (a layout other than strided raises here or below: no read of it)
        if not t.is_contiguous():  # (a gradient passed on transposed or expanded: its
            if t.requires_grad:  # elements in C order, one copy; no detached tensor made)
                return None
            a = t.numpy()  # (a sparse one raises)
            return ArrayValue(a.shape, kind[0], a.tobytes())
        at = t.data_ptr()  # (mkldnn's raises)
        if not at:  # (a zero tensor autograd made without memory: `_efficientzerotensor`)
            return None
        size = n * kind[1]
        block = BLOCKS.get(size)
        if block is None:
            block = BLOCKS[size] = c_char * size
        return ArrayValue(shape, kind[0], block.from_address(at).raw)
    except (RuntimeError, TypeError, ValueError, OverflowError):
        return None


def taken_like(g, like: ArrayValue):
    """`taken` of gradient `g`, which the engine passed on to the op node whose value,
    taken as the op made it, is `like` (a whole one `taken` or `kept`: its bytes).
    Before it runs a node's hooks, the engine checks each gradient the node returned
    against the metadata of the tensor it goes to, as that tensor was made (its autograd
    node's `input_metadata`), summing a broadcast one down to that shape and casting it
    to that dtype (on that device), or raises. So `g` has `like`'s shape, dtype and
    device (whatever was done to the tensor since), and only its layout is read: five
    fewer reads of the tensor than `taken` (each ~600 instructions), for most of a
    backward pass's gradients (`TorchRecorder.shapes`)."""
    try:
        if g.is_neg():  # (a sparse one raises)
            return taken(g)
        if not g.is_contiguous():  # (passed on transposed or expanded: in C order, one
            if g.requires_grad:  # copy, as `taken`)
                return taken(g)
            return ArrayValue(like.shape, like.dtype, g.numpy().tobytes())
        at = g.data_ptr()
        itemsize = ITEMSIZES.get(like.dtype)
        if at and itemsize is not None:
            size = prod(like.shape) * itemsize
            block = BLOCKS.get(size)
            if block is None:
                block = BLOCKS[size] = c_char * size
            return ArrayValue(like.shape, like.dtype, block.from_address(at).raw)
    except (RuntimeError, TypeError, ValueError, OverflowError):
        return None
    return taken(g)


def value_now_copy(t):
    """`value_now`, an array copied too (the tensor is about to change in place)."""
    value = taken(t)
    return value if value is not None else value_of(t, True)


def value_now(t):
    """A tensor's value as the trace keeps it, a copy taken now: `taken`, else
    `value_of` (an array the array support copies as it records it)."""
    value = taken(t)
    return value if value is not None else value_of(t)


BLOCKS: dict[int, type] = {}  # bytes -> a ctypes array type of that many (`taken`: its
#                              `from_address(p).raw` copies them out of the tensor)


def kept(a):
    """A numpy array the adapter made (a sum of gradients) as `taken` would take it
    (one `ArrayValue`, kept for the next write's before, as the array support's `last`
    keeps it for a numpy engine); anything else as it is."""
    dtype = getattr(a, "dtype", None)
    if dtype is not None and 1 < a.size <= WHOLE_LIMIT and dtype.char in "fd":
        return ArrayValue(a.shape, "float32" if dtype.char == "f" else "float64", a.tobytes())
    return a


def array_of(v):
    """An `ArrayValue` the adapter took (`taken`, `kept`) as a numpy array again, to add
    a gradient to; anything else as it is."""
    if type(v) is not ArrayValue:
        return v
    import numpy as np

    raw = v._values
    if type(raw) is bytes:
        return np.frombuffer(raw, v.dtype).reshape(v.shape)
    return np.asarray(raw, "float64").astype(v.dtype).reshape(v.shape)


def same(a, b) -> bool:
    """Are two values the trace holds the same, bit for bit (nan equal to nan)?"""
    a, b = array_of(a), array_of(b)
    if type(a) is float and type(b) is float:
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)
    if type(a) is float or type(b) is float:
        return False
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def copies(grads) -> tuple:
    return tuple(g.detach().clone() if g is not None else None for g in grads)


class TorchNode:
    """What a backward step's closure index is kept by: an autograd node's class, with
    the code attributes `mgtui.recording.store.closure_source` reads (no source)."""

    def __init__(self, name: str) -> None:
        self.co_name = name
        self.co_filename = AUTOGRAD_FILE
        self.co_firstlineno = 0


class StepClosures:
    """The closure index of each kind of backward step, by the class that tells it
    (`indices`): a custom Function's `backward`, by its code; an autograd node's class
    by its name (a `TorchNode`, no source)."""

    def __init__(self, records) -> None:
        self.records = records
        self.indices: dict[type, int] = {}
        self.nodes: dict[str, TorchNode] = {}

    def index(self, cls: type, custom: bool) -> int:
        """The closure index of a step of `cls` (a custom Function's if `custom`)."""
        ci = self.indices.get(cls)
        if ci is None:
            ci = self.indices[cls] = self._index(cls, custom)
        return ci

    def _index(self, cls: type, custom: bool) -> int:
        if custom:
            code = getattr(cls.backward, "__code__", None)
            if code is not None:
                return self.records.closure_index(code)
        name = cls.__name__
        node = self.nodes.get(name)
        if node is None:
            node = self.nodes[name] = TorchNode(name)
        return self.records.closure_index(node)


RETURNS: dict = {}


def one_return(code) -> int:
    """The line of the one `return` statement of a function's code (0: not one)."""
    found = RETURNS.get(code)
    if found is None:
        import dis

        lines = {i.positions.lineno for i in dis.get_instructions(code)
                 if i.opname in ("RETURN_VALUE", "RETURN_CONST") and i.positions}
        found = RETURNS[code] = lines.pop() if len(lines) == 1 else 0
    return found


class BackwardRun:
    """One recorded `backward()` call: its seeds, and the steps its autograd nodes'
    hooks (`after_hook`, `accumulated_hook`) record while it runs."""

    def __init__(self, adapter, line: int) -> None:  # (a `TorchRecorder`)
        self.adapter = adapter
        self.steps: list[tuple] = []  # noted by the hooks, not made yet (`settle`)
        self.before_pass: dict[int, object] = {}  # a leaf's grad as the pass found it
        self.done = False  # the engine has returned (every leaf's pre-hook has run)
        self.line = line
        self.records = adapter.records
        self.grads: dict[int, float] = {}  # each node's grad so far, as the trace has it
        self.raw: dict[int, object] = {}  # and as a numpy array, where that is summarised
        # gradients added up into each leaf so far (0: it had a grad already), for its
        # AccumulateGrad: a sum of one gradient onto none is the engine's own value
        self.sums: dict[int, int] = {}
        adapter.passes += 1
        self.number = adapter.passes
        self.returned = 0  # the line a custom Function's backward returned from
        self.profile: tuple | None = None  # (the profile function put back after it)
        self.event = 0  # the last step's event index

    def grad_of(self, nid: int, t=None):
        g = self.grads.get(nid)
        if g is None:
            g = ZERO
            if t is not None and t.is_leaf and t.grad is not None:
                g = value_of(t.grad)
            self.grads[nid] = g
        return g

    def seed(self, root, seed) -> None:
        nid = self.adapter.tensor(root, self.line)
        before = self.grad_of(nid, root)
        after = value_of(seed) if seed is not None else 1.0
        self.grads[nid] = after
        self.adapter.write(nid, GRAD_FIELD, GRAD, before, after, self.line)

    def watch_return(self, code) -> None:
        """Note the line `code` (a custom Function's backward with several `return`s)
        returns from, as a profile function sees it leave."""
        self.returned = 0
        self.profile = (sys.getprofile(),)

        def profile(frame, event, arg):
            if event == "return" and frame.f_code is code:
                self.returned = frame.f_lineno
                sys.setprofile(self.profile[0])
                self.profile = None

        sys.setprofile(profile)

    def settle(self) -> None:
        """Make the steps the hooks noted (`noted`, `leaf_noted`) since the last call into
        records, in the order the engine ran them: each node's gradients (held as the
        engine passed them on: it adds into a gradient in place only where nothing else
        holds it, so they are as they were) `+=` into its inputs' grads; each leaf's
        `AccumulateGrad` its own step, which writes only where the engine's sum differs
        from the trace's (float32). Called when `backward()` returns (or raises), and
        before a custom Function's step, which is made as it runs (`after`)."""
        if self.steps:
            self._made(self.steps)

    def _made(self, steps: list, at: int = 0, custom: bool = False) -> None:
        """Make `steps` (`settle`'s) into records, and let them go: their writes at line
        `at` (a custom Function's backward's return), their closures `custom`'s."""
        adapter, records, line = self.adapter, self.records, self.line
        grads, sums = self.grads, self.sums
        indices, add_event, add_write = adapter.closures.indices, records.add_event, records.add_write
        writes, packed = records.writes, records.packed
        keys, values = records.arrays.keys[WRITE], records.arrays.values[WRITE]
        stack, shapes = records.stack, adapter.shapes
        stack.append(-1)  # (the writes are the steps')
        try:
            for key, got in steps:
                if type(key) is int:  # a leaf's AccumulateGrad (`got`: the leaf)
                    self._accumulated(key, got)
                    continue
                nid, targets, cls = key
                closure = indices.get(cls)
                add_event((BACKWARD, nid, 0.0, 0.0, line,
                           adapter.closures.index(cls, custom) if closure is None else closure,
                           len(writes)))
                for target, g in zip(targets, got):
                    if target is None or g is None:
                        continue
                    tid, t = target
                    before = grads.get(tid)
                    if before is None:
                        before = (ZERO if t is None else self.before_pass.get(tid, ZERO)
                                  if self.done else self.leaf_before(tid, t))  # (inline)
                    if before is ZERO:  # the first: the gradient itself
                        like = shapes.get(tid) if t is None else None
                        after = taken(g) if like is None else taken_like(g, like)
                        if after is None:
                            after = self.big(tid, value_of(g), g)
                    else:
                        after = self.big(tid, self.array(tid, before) + value_of(g))
                    if t is not None:  # (a leaf's: see `_accumulated`)
                        sums[tid] = sums[tid] + 1 if tid in sums else 1 if before is ZERO else 2
                    grads[tid] = after
                    if type(after) is float and type(before) is float:
                        add_write((tid, GRAD_FIELD, before, after, at))
                        continue
                    row = packed.writes + len(writes) // WRITE_ROW  # (`taken_write`, inline)
                    row += row
                    if type(before) is ArrayValue:
                        keys.append(row)
                        values.append(before)
                        before = NAN
                    elif type(before) is not float:
                        before = records.arrays.taken_write(before, NAN)[0]
                    if type(after) is ArrayValue:
                        keys.append(row + 1)
                        values.append(after)
                        after = NAN
                    elif type(after) is not float:
                        after = records.arrays.taken_write(NAN, after)[1]
                    add_write((tid, GRAD_FIELD, before, after, at))
        finally:
            stack.pop()
            steps.clear()
        if values:
            records.arrays.seen = True

    def big(self, tid: int, a, given=None):
        """Gradient `a` (node `tid`'s grad now: the engine's tensor `given`'s, else a
        sum the adapter made) as the trace keeps it (`kept`); one over `WHOLE_LIMIT`
        elements summarised now, from where it lies (a gradient held is not changed:
        see the module; `TensorViews.big`), and held as it is for a sum (`array`), not
        copied."""
        if type(a) is not float and a.size > WHOLE_LIMIT and a.dtype.char in "fd":
            self.raw[tid] = a
            return snapshot(a) if given is None else self.adapter.views.big(given, a)
        return kept(stored_copy(a) if given is not None and type(a) is not float else a)

    def array(self, tid: int, v):
        """Node `tid`'s grad `v` (as `big` kept it) as a numpy array, to add to."""
        if type(v) is ArrayValue and not v.whole:
            return self.raw[tid]
        return array_of(v)

    def copied(self, entry: tuple) -> None:
        """`steps.append`, the gradients of a node's entry copied first: what the
        hooks note while a hook of someone else's may write into a gradient after it
        was passed on (`TorchRecorder.hooked`: a tensor's `register_hook`, a node's)."""
        key, got = entry
        if type(key) is not int:  # (a leaf's entry holds the leaf)
            entry = key, tuple(g if g is None else g.detach().clone() for g in got)
        self.steps.append(entry)

    def leaf_before(self, nid: int, leaf):
        """The grad leaf `leaf` (node `nid`) had as this pass began: copied by its
        `AccumulateGrad`'s pre-hook (`leaf_noted`) if that has run (it has, for every
        leaf, once `backward()` has returned), else its grad now."""
        if self.done or any(key == nid for key, _ in self.steps):
            return self.before_pass.get(nid, ZERO)
        g = leaf.grad
        return ZERO if g is None else value_of(g)

    def _accumulated(self, nid: int, leaf) -> None:
        """A leaf's `AccumulateGrad` step (`settle`): the leaf's grad is as the engine
        left it (it is accumulated once a pass)."""
        adapter, records = self.adapter, self.records
        adapter.writes.grad_given(nid, leaf)  # (its grad, by memory: in-place ops on it)
        closure = adapter.closures.indices.get(ACCUMULATE)
        records.add_event((BACKWARD, nid, 0.0, 0.0, self.line,
                           adapter.closures.index(ACCUMULATE, False) if closure is None else closure,
                           len(records.writes)))
        if self.sums.get(nid) == 1:  # one gradient onto none: the engine's own value
            have = self.grads.get(nid)
            held = self.raw.get(nid)
            g = leaf.grad
            if held is not None and type(have) is ArrayValue and g is not None:
                adapter.views.copied(g, held, have)  # (summarised so)
            if self.done and g is not None:  # (the pass is over: the leaf's grad is final)
                adapter.views.grads_held[nid] = (ref(g), g._version, have)
            return
        real = value_of(leaf.grad) if leaf.grad is not None else 0.0
        have = self.grads.get(nid)
        if have is None:
            have = self.leaf_before(nid, leaf)
        if not same(real, self.array(nid, have)):
            records.stack.append(nid)
            try:
                adapter.write(nid, GRAD_FIELD, GRAD, have, real, 0)
            finally:
                records.stack.pop()
            self.grads[nid] = real

    def after(self, nid: int, targets: list, cls: type, grad_inputs, grad_outputs) -> None:
        """A custom Function's step, made as it runs (after the steps noted before it):
        the gradients its backward returned, each a `+=` into the grad of the input it
        goes to, at the line it returned from; then the doctor's check, if it is on."""
        self.settle()
        records = self.records
        self.event = records.packed.events + len(records.events) // EVENT_ROW  # (`event_count()`)
        at = one_return(cls.backward.__code__) or self.returned
        self._made([((nid, targets, cls), grad_inputs)], at, True)
        if self.adapter.check() is not None:
            self._check(cls, nid, grad_outputs, grad_inputs, at)

    def _check(self, cls: type, nid: int, grad_outputs, grad_inputs, line: int) -> None:
        adapter = self.adapter
        args = adapter.function_args.get(nid)
        if args is None:
            return
        call = FunctionCall(cls, args, copies(grad_outputs), copies(grad_inputs), nid,
                            self.event, self.number, line)
        adapter.paused += 1  # (what the check runs is not the scenario's)
        try:
            adapter.check()(call)
        finally:
            adapter.paused -= 1


def zero_grad_recorded(adapter, zero_grad, params):
    """`zero_grad` (a module's, or an optimizer's, whose parameters are `params(self)`)
    with the grads it sets to None (`p.grad = None`) recorded by `adapter` (a
    `TorchRecorder`) as grad events, as its mode records each one (`changed`), without
    passing each through the mode. (A module's is its own loop here, as torch writes
    it: one walk of its parameters.)"""
    module = params is not optimized

    @wraps(zero_grad)
    def wrapped(owner, set_to_none: bool = True):
        if adapter.paused or not set_to_none or adapter.mode is None or (
                module and getattr(owner, "_is_replica", False)):
            return zero_grad(owner, set_to_none)
        line = adapter.scenario_line(sys._getframe(1))
        with DisableTorchFunction():
            if module:
                out, held = None, []
                for p in params(owner):
                    g = p.grad
                    if g is not None:
                        p.grad = None
                        held.append((p, g))
            else:
                held = [(p, p.grad) for p in params(owner)]
                out = zero_grad(owner, set_to_none)
            for p, g in held:
                nid = adapter.nid_of(p) if g is not None else None
                if nid is not None:  # (a module's: set to None here, no read of it)
                    adapter.write(nid, GRAD_FIELD, GRAD, adapter.views.grad_now(nid, g),
                                  0.0 if module else grad_value(p.grad), line)
        return out

    return wrapped


def optimized(optimizer) -> list:
    """The parameters of `optimizer`, as its `zero_grad` goes through them."""
    return [p for group in optimizer.param_groups for p in group["params"]]


def grad_value(g):
    """A tensor's grad `g` as a grad event's value."""
    return value_now(g) if g is not None else 0.0


def noted(live: list, key: tuple, grad_inputs, grad_outputs) -> None:
    """The hook of a built-in autograd node, registered as `partial(noted, live, key)`
    (`TorchRecorder._hook`; a `partial` is made in C): while a recorded `backward()` runs
    (`live`: [the `BackwardRun`, its `steps.append`, its `steps`], else Nones), it notes
    the node's `key` (node id, targets, class) and the gradients it returned, as they
    are: the step is made when the call returns (`BackwardRun.settle`), or once
    `SETTLE_EVERY` steps wait (the gradients held meanwhile are not let go)."""
    note = live[1]
    if note is not None:
        note((key, grad_inputs))
        if len(live[2]) >= SETTLE_EVERY:
            live[0].settle()


def leaf_noted(live: list, nid: int, leaf, grad_outputs) -> None:
    """The pre-hook of a leaf's `AccumulateGrad` (as `noted`, a `partial`): notes its
    step; a grad the leaf had before this pass is copied now (the engine is about to add
    into it in place), its first write's before."""
    note = live[1]
    if note is not None:
        note((nid, leaf))
        g = leaf.grad
        if g is not None:
            live[0].before_pass[nid] = value_now_copy(g)


def custom_before(live: list, grad_outputs) -> None:
    """The pre-hook of a custom Function's node (a `partial`): the steps noted before it
    are made before its `backward` runs, which may write into the gradients it is given."""
    run = live[0]
    if run is not None:
        run.settle()


def custom_after(live: list, nid: int, targets: list, cls: type, grad_inputs,
                 grad_outputs) -> None:
    """The hook of a custom Function's node (as `noted`): its step is made as it runs
    (`BackwardRun.after`: the doctor checks it with the gradients it was given)."""
    run = live[0]
    if run is not None:
        run.after(nid, targets, cls, grad_inputs, grad_outputs)


def watch_returned(live: list, code, grad_outputs) -> None:
    """The pre-hook of a custom Function's node whose `backward` has several `return`s
    (a `partial`): the line it returns from is watched (`BackwardRun.watch_return`)."""
    run = live[0]
    if run is not None:
        run.watch_return(code)


class HookDict(dict):
    """The hooks of an autograd node the adapter registers first (`quick_register`): a
    dict that a `RemovableHandle` can hold weakly, as torch's `OrderedDict` (made and
    let go with every node: ~7K instructions a training step less)."""

    __slots__ = ("__weakref__",)


OTHERS = [0]  # hooks on autograd nodes registered by anyone but the adapter, so far
OWN = frozenset((noted, leaf_noted, custom_before, custom_after, watch_returned))
#      (the adapter's hooks: a `partial` of one of these; `quick_register`)


def quick_register(register):
    """torch's `_register_hook(hooks, hook)`, which `Node.register_hook` and
    `register_prehook` call: for the adapter's own hooks (`OWN`), without the
    `RemovableHandle` they never use (half the cost of a registration, made for every
    node); anyone else's as before."""

    def quick(hooks, hook):
        if type(hook) is not partial or hook.func not in OWN:
            OTHERS[0] += 1  # (a hook that may write into a gradient: `BackwardRun.note`)
            return register(hooks, hook)
        if hooks is None:  # (as torch's, but a plain dict's: a handle made later holds it
            hooks = HookDict()  # weakly)
        hooks[hook] = hook  # (not an int: a handle's key is its int id)
        return hooks, None

    return quick
