"""The torch adapter: a PyTorch scenario recorded into the same store as a micrograd one
(`mgtui.recording.store.Records`), so that its trace reads, and diffs, like one.

Imported only once a scenario has torch (`mgtui.recording.torch_watch`). What it records:

- **Forward.** A `TorchFunctionMode` sees every torch call the scenario makes. Each
  tensor an op makes that has a `grad_fn` becomes a node, at the scenario line that
  made it, with its op (`MulBackward0` reads `*`, `TanhBackward0` `tanh`,
  `AddmmBackward0` `Addmm`, a custom `Function` by its class name: `op_of`) and its
  inputs as children. A leaf becomes a node where it is given `requires_grad`
  (`x.requires_grad = True`, a factory's `requires_grad=True`), or where it is first
  used (a module's parameters). Autograd nodes the scenario never saw made (those
  inside `F.linear`, a 3-D matrix product's) are nodes too, at the line of the op that
  made them, with the values torch still holds of them (`torch_hidden`). Custom
  `Function.apply` calls go through the same. An in-place change of a recorded tensor
  outside autograd (`p -= lr * p.grad` under `no_grad`; through another tensor,
  `torch_writes`) is a data event, `p.grad = None` a grad event
  (a module's or an optimizer's `zero_grad` records its own, with torch functions off:
  `zero_grad_recorded`); an in-place op autograd records (`h.add_(1)`) is a node.
- **Backward.** `torch.autograd.backward` (which `loss.backward()` calls) is wrapped:
  the root's seed is a grad event (`o.grad = 1.0`). Every autograd node gets a hook
  once, as it is recorded (registering one costs more than running it: a hook per node
  per `backward()`, taken off after it, cost a training step more than the forward's
  ops), which only notes the node and the gradients it returned while a recorded
  `backward()` runs; the steps are made from those notes in one batch when the call
  returns (`BackwardRun.settle`). Each node the engine runs is one backward step, in the
  engine's order, on the tensor it made: the gradients it returns are `+=` writes into
  its inputs' grads (a leaf's too, as micrograd's `_backward` writes them). A leaf's `AccumulateGrad` is the leaf's own step, which
  writes only where the engine's sum of several gradients differs from the trace's
  (float32). The step's "closure" is the autograd node by name (`MulBackward0`, no
  source), or a custom Function's `backward`, whose writes carry the line it returned
  from. (That half is `mgtui.recording.torch_backward`.)
- **Names.** A tensor an assignment binds as it is made is named by its variable
  (`loss`, at every training step); at the end, the scenario's globals name the rest,
  a module's parameters by their path (`lin1.weight`).

A tensor with one element reads as a float, as a micrograd value; a bigger one is an
array (`mgtui.recording.array_values`). Nothing here changes a tensor, a gradient or the
engine's order: the hooks only read (and, on a graph kept after the recording, do
nothing), so the final gradients are those of the script without mgtui.
"""

from __future__ import annotations

import re
import sys
from functools import partial

import torch
from torch.autograd.function import BackwardCFunction, Function, _HookMixin

from mgtui.recording.context import RecordingContext
from mgtui.recording.store import CREATE, DATA, GRAD, NODE_ROW
from mgtui.recording.torch_backward import (
    ACCUMULATE,
    GRAD_FIELD,
    OTHERS,
    BackwardRun,
    StepClosures,
    custom_after,
    custom_before,
    grad_value,
    leaf_noted,
    noted,
    one_return,
    optimized,
    quick_register,
    taken,
    value_of,
    watch_returned,
    zero_grad_recorded,
)
from mgtui.recording.torch_backward import FunctionCall  # noqa: F401  (what the doctor is given)
from mgtui.recording.torch_hidden import given, hidden_value
from mgtui.recording.torch_mode import TENSOR, CallMode, not_followed
from mgtui.recording.torch_names import TensorNames
from mgtui.recording.torch_views import TensorViews
from mgtui.recording.torch_writes import TensorWrites
from mgtui.trace import Field
from mgtui.trace.arrays import WHOLE_LIMIT, ArrayValue

ATTR = "_mgtui_torch"  # (adapter token, node id) on a recorded tensor
SHAPES_LIMIT = 1 << 16  # op nodes' values kept as their gradients' shapes (`shapes`)
DATA_FIELD = Field.DATA.code
OPS = {  # autograd node -> the op as micrograd writes it, with the inputs it needs
    "MulBackward0": ("*", 2), "AddBackward0": ("+", 2), "SubBackward0": ("-", 2),
    "DivBackward0": ("/", 2), "TanhBackward0": ("tanh", 1), "ExpBackward0": ("exp", 1),
    "LogBackward0": ("log", 1), "ReluBackward0": ("relu", 1),
    "SigmoidBackward0": ("sigmoid", 1), "NegBackward0": ("neg", 1),
    "SumBackward0": ("sum", 1), "MeanBackward0": ("mean", 1), "MmBackward0": ("@", 2),
}
is_grad_enabled = torch.is_grad_enabled
BACKWARD_SUFFIX = re.compile(r"Backward\d*$")  # `AddmmBackward0` is the op `Addmm`


def op_of(fn, kids: int) -> str:
    """The op of autograd node `fn` with `kids` inputs (kept in `OP_NAMES` unless it
    depends on more than the node's class: a power's exponent)."""
    name = type(fn).__name__
    if isinstance(fn, BackwardCFunction):
        op = fn._forward_cls.__name__
    elif name == "PowBackward0" and kids == 1:  # (not kept: each its own exponent)
        e = getattr(fn, "_saved_exponent", None)
        if isinstance(e, (int, float)):
            return f"**{int(e) if float(e).is_integer() else e}"
        return "Pow"
    else:
        known = OPS.get(name)
        op = known[0] if known is not None and known[1] == kids else (
            BACKWARD_SUFFIX.sub("", name) or name)
    OP_NAMES[(type(fn), kids)] = op
    return op


OP_NAMES: dict[tuple[type, int], str] = {}  # (node class, inputs) -> op, as `op_of` said
BUILT_IN: set[type] = set()  # autograd node classes seen that are no custom Function's


class TorchRecorder:
    """The adapter of one recording (`context`, what a probe may read and write of it):
    see the module."""

    def __init__(self, context: RecordingContext, check=lambda: None) -> None:
        self.context = context
        self.check = check  # () -> the doctor's Function check, or None (`Hooks.on_function`)
        self.records = context.records
        self.naming = TensorNames(context.records, context.namer.spots, self.nid_of,
                                  context.lines.scenario_path)
        self.key = f"mgtui-{id(self)}-{id(context)}"
        self.path = context.lines.scenario_path
        self.scenario_line = context.lines.fresh_line  # (its ops' frames: new at each call)
        self.mode: CallMode | None = None
        self.saved: list = []
        self.paused = 0  # > 0 while the doctor's check runs a Function itself
        self.hooked = False  # the scenario registered a tensor's hook (`CallMode`)
        self.passes = 0  # backward calls recorded
        self.recorded = False  # a tensor was recorded: the run is the torch engine's
        self.closures = StepClosures(context.records)  # each backward step's closure index
        self.views = TensorViews(context.records.arrays)  # leaves' values, for their changes
        self.writes = TensorWrites(self)  # leaves' data and grads written through others
        self.live: list = [None, None, None]  # [the recorded `backward()` call running,
        #                       its `steps.append` (or `copied`), its `steps`], or Nones
        self.function_args: dict[int, tuple] = {}  # a custom Function's node -> its args,
        #                                             copied, while the doctor checks them
        # an op's node -> its value as made, a whole array `taken` (or `kept`): the shape
        # and dtype of the gradient a backward pass gives that node, until the pass has
        # run (`torch_backward.taken_like`)
        self.shapes: dict[int, ArrayValue] = {}

    # -- on and off --------------------------------------------------------------------
    def attach(self) -> None:
        import torch.autograd as autograd

        backward, apply = autograd.backward, Function.__dict__["apply"]
        register = _HookMixin.__dict__["_register_hook"]
        self.saved = [(autograd, "backward", backward), (Function, "apply", apply),
                      (_HookMixin, "_register_hook", register), (autograd, "grad", autograd.grad)]
        autograd.backward = self._backward_wrapper(backward)
        autograd.grad = not_followed(self.records.arrays.unrecorded, "torch.autograd.grad",
                                     autograd.grad)
        Function.apply = classmethod(self._apply_wrapper(apply.__func__))
        _HookMixin._register_hook = staticmethod(quick_register(register.__func__))
        for owner, params in ((torch.nn.Module, torch.nn.Module.parameters),
                              (torch.optim.Optimizer, optimized)):
            zero_grad = owner.__dict__["zero_grad"]
            self.saved.append((owner, "zero_grad", zero_grad))
            owner.zero_grad = zero_grad_recorded(self, zero_grad, params)
        self.mode = CallMode(self)
        self.mode.__enter__()

    def detach(self) -> None:
        if self.mode is not None:
            try:
                self.mode.__exit__(None, None, None)
            except (RuntimeError, IndexError):  # the scenario left a mode of its own on
                pass
            self.mode = None
        self.live[:] = [None, None, None]
        self.function_args.clear()
        self.views.grads_held.clear()
        for owner, name, old in reversed(self.saved):
            setattr(owner, name, old)
        self.saved = []

    # -- nodes ---------------------------------------------------------------------------
    def nid_of(self, t) -> int | None:
        mark = getattr(t, ATTR, None)
        return mark[1] if type(mark) is tuple and mark[0] == self.key else None

    def tensor(self, t, line: int) -> int:
        """The node of tensor `t`, recorded now (with its unrecorded inputs) if need be."""
        nid = self.nid_of(t)
        return nid if nid is not None else self._record(t, line)

    def _record(self, t, line: int) -> int:
        """The node of tensor `t`, not recorded yet, recorded now (`tensor`)."""
        fn = t.grad_fn
        if fn is None:
            data = value_of(t)
            nid = self._add((), "", data, line, self._leaf_label(t, line))
            self.views.keep(nid, t, data)
            self.writes.leaf(nid, t)
        else:
            nid = self._fn_node(fn, line, t)
        try:
            setattr(t, ATTR, (self.key, nid))
        except (AttributeError, TypeError):
            pass
        return nid

    def _fn_node(self, fn, line: int, t=None, nr: int | None = None,
                 consumer: tuple | None = None) -> int:
        """The node of output `nr` (of `t`) of autograd node `fn`; a node recorded for
        the first time gets its backward hook (`_hook`). One inside a call (`t` None)
        takes its value from its `consumer` where it can (`torch_hidden`)."""
        nr = t.output_nr if t is not None else (nr or 0)
        metadata, key = fn.metadata, self.key
        known = metadata.get(key)
        if known is not None and nr in known:
            return known[nr]
        own = t if t is not None else None if consumer is None else given(consumer, fn)
        targets: list = []  # (the node each gradient it returns goes to, the leaf or None)
        kids: list = []
        for nf, k in fn.next_functions:
            if nf is None:
                targets.append(None)
                continue
            if type(nf) is ACCUMULATE:
                leaf = nf.variable
                mark = getattr(leaf, ATTR, None)  # (`nid_of`, inline)
                kid = (mark[1] if type(mark) is tuple and mark[0] == key
                       else self.tensor(leaf, line))
                targets.append((kid, leaf))
                leaf_metadata = nf.metadata
                if key not in leaf_metadata:  # (a leaf's is new when its graph was)
                    leaf_metadata[key] = kid
                    self._leaf_hook(nf, kid, leaf)
            else:
                seen = nf.metadata.get(key)  # (most often the node of the op before)
                kid = seen.get(k) if seen is not None else None
                if kid is None:
                    kid = self._fn_node(nf, line, None, k, (fn, len(targets), own))
                targets.append((kid, None))
            kids.append(kid)
        if t is None:
            data = own if own is not None else hidden_value(fn, nr, self.views, targets)
        else:  # (`value_now`, inline)
            data = taken(t)
            if data is None:
                data = value_of(t)
                if (type(data) is not float and data.size > WHOLE_LIMIT
                        and data.dtype.char in "fd"):  # (a big one summarised where it lies)
                    data = self.views.big(t, data)
        cls = type(fn)
        op = OP_NAMES.get((cls, len(kids)))
        nid = self._add(kids, op_of(fn, len(kids)) if op is None else op, data, line, None)
        if type(data) is ArrayValue and data.whole and data.raw is None:
            shapes = self.shapes
            if len(shapes) >= SHAPES_LIMIT:  # (a run of forward passes with no backward)
                shapes.clear()
            shapes[nid] = data
        if known is not None:
            known[nr] = nid
            return nid
        metadata[key] = {nr: nid}
        if cls in BUILT_IN:  # (`_hook`, inline: most nodes' classes)
            fn.register_hook(partial(noted, self.live, (nid, targets, cls)))
        else:
            self._hook(fn, nid, targets)
        return nid

    def _leaf_hook(self, nf, nid: int, leaf) -> None:
        """A leaf's `AccumulateGrad` (`nf`)'s pre-hook, as `_hook` (`leaf_noted`)."""
        nf.register_prehook(partial(leaf_noted, self.live, nid, leaf))

    def _hook(self, fn, nid: int, targets: list) -> None:
        """Autograd node `fn`'s backward hook, on for as long as the node lives: it
        records a step only while a recorded `backward()` runs (`live`), so a node run
        by several calls (`retain_graph`, a leaf's `AccumulateGrad`) is one step in each.
        It holds neither `fn` nor the adapter (a graph kept after the run keeps neither)."""
        custom = isinstance(fn, BackwardCFunction)
        cls = fn._forward_cls if custom else type(fn)
        if not custom:  # (`quick_register` makes no handle for the adapter's own hooks)
            BUILT_IN.add(cls)
            fn.register_hook(partial(noted, self.live, (nid, targets, cls)))
            return
        fn.register_hook(partial(custom_after, self.live, nid, targets, cls))
        fn.register_prehook(partial(custom_before, self.live))
        if not one_return(cls.backward.__code__):
            fn.register_prehook(partial(watch_returned, self.live, cls.backward.__code__))

    def out_node(self, fn, line: int) -> int:
        """The node of autograd node `fn`'s first output recorded."""
        known = fn.metadata.get(self.key)
        return min(known.values()) if known else self._fn_node(fn, line, None, 0)

    def _add(self, kids, op: str, data, line: int, label: str | None) -> int:
        """A node: its children's ids, op, value (a float, or an array: `value_of`), line."""
        records, context = self.records, self.context
        nid = records.packed.nodes + len(records.nodes) // NODE_ROW  # (`node_count()`)
        if nid >= context.max_nodes or context.stop_reason:
            context.over_limit()
        if type(data) is ArrayValue:  # (`taken`'s)
            data = records.arrays.taken_node(nid, data)
        elif type(data) is not float:
            data = records.arrays.made(nid, data)
        records.kids.extend(kids)
        records.add_node((len(records.kids), op, label, data, line))
        records.add_event((CREATE, nid, 0.0, 0.0, 0, -1, len(records.writes)))
        self.recorded = True
        return nid

    def write(self, nid: int, field: int, kind: int, before, after, line: int) -> None:
        """A write of `after` over `before` into node `nid`'s grad or data: a backward
        step's (while `records.stack` holds the node whose step it is) or an event."""
        records = self.records
        if type(after) is ArrayValue or type(before) is ArrayValue:  # (`taken`'s)
            before, after = records.arrays.taken_write(before, after)
        elif type(after) is not float or type(before) is not float:
            before, after = records.arrays.write(nid, field, before, after)
        if records.stack:
            records.add_write((nid, field, before, after, line))
        else:
            records.add_event((kind, nid, before, after, line, -1, len(records.writes)))

    def _leaf_label(self, t, line: int) -> str | None:
        """The variable of the scenario's frame that holds leaf `t`, if any."""
        f = sys._getframe(1)
        while f is not None and f.f_code.co_filename != self.path:
            f = f.f_back
        if f is None:
            return None
        for name, v in list(f.f_locals.items()):
            if v is t and not name.startswith("_"):
                return name
        return None

    def made(self, out, frame) -> None:
        """Record the tensors a torch call returned, if autograd tracks them."""
        if type(out) is tuple or type(out) is list:
            for o in out:
                self.made(o, frame)
            return
        if isinstance(out, torch.Tensor) and out.requires_grad:
            self.made_tensor(out, frame)

    def made_tensor(self, out, frame) -> None:
        """`made` of one tensor that autograd tracks (the hot path of the forward: what
        `tensor` does, without asking twice whether it is recorded)."""
        mark = getattr(out, ATTR, None)
        if mark is not None and type(mark) is tuple and mark[0] == self.key:
            return  # (an op that gave back a tensor recorded already)
        fn = out.grad_fn
        if fn is None:
            nid = self._record(out, self.scenario_line(frame))
        else:  # (`_record`, inline: the common case)
            nid = self._fn_node(fn, self.scenario_line(frame), out)
            try:
                setattr(out, ATTR, (self.key, nid))
            except (AttributeError, TypeError):
                pass
        self.naming.made(frame, out, nid)

    def changed(self, func, args, kwargs, grad: bool):
        """Run `func`, which changes a tensor in place (`p -= lr * p.grad`) or sets a
        grad (`p.grad = None`): on a recorded node, a data or a grad event."""
        t = args[0]
        mark = getattr(t, ATTR, None) if isinstance(t, TENSOR) else None  # (`nid_of`)
        nid = mark[1] if type(mark) is tuple and mark[0] == self.key else None
        if nid is not None and not grad and is_grad_enabled() and t.requires_grad:
            out = func(*args, **(kwargs or {}))  # autograd's in-place op: a new node
            fn = t.grad_fn
            if fn is not None and self.key not in fn.metadata:
                setattr(t, ATTR, None)
                self.made(out, sys._getframe(2))
            return out
        if nid is None:
            owner = None if grad else self.writes.owner(t, func)
            if owner is not None:  # (`p.data += u`, `p.grad.zero_()`, `clip_grad_norm_`)
                line = self.scenario_line(sys._getframe(2))
                return self.writes.changed(owner, func, args, kwargs, line)
            out = func(*args, **(kwargs or {}))
            if not grad and isinstance(out, (torch.Tensor, tuple, list)):
                self.made(out, sys._getframe(2))
            return out
        line = self.scenario_line(sys._getframe(2))
        if grad:  # (a grad set aside is not changed: no copy of it is needed)
            had = t.grad
            out = func(*args, **kwargs) if kwargs else func(*args)
            if had is not None or t.grad is not None:  # (None over None writes nothing)
                self.writes.grad_given(nid, t)
                self.write(nid, GRAD_FIELD, GRAD, grad_value(had), grad_value(t.grad), line)
            return out
        view = self.views.holding(nid, t)
        if view is not None:
            before = view[0]  # (the array the last snapshot was taken of, unchanged since)
        else:  # (a copy: the tensor is about to change)
            before = view = value_of(t, True)
        out = func(*args, **kwargs) if kwargs else func(*args)
        if type(view) is tuple:  # (changed in place: the view kept still shares it; `write`,
            records = self.records  # inline: an array written over itself)
            before, after = records.arrays.write(nid, DATA_FIELD, before, before)
            if records.stack:
                records.add_write((nid, DATA_FIELD, before, after, line))
            else:
                records.add_event((DATA, nid, before, after, line, -1, len(records.writes)))
            self.views.changed(nid, view, t)
            return out
        after = value_of(t)
        self.write(nid, DATA_FIELD, DATA, before, after, line)
        self.views.keep(nid, t, after)
        return out

    # -- backward -------------------------------------------------------------------------
    def _apply_wrapper(self, apply):
        adapter = self

        def wrapped(cls, *args, **kwargs):
            out = apply(cls, *args, **kwargs)
            if not adapter.paused:
                adapter.made(out, sys._getframe(1))
                fn = getattr(out if isinstance(out, torch.Tensor) else out[0], "grad_fn", None)
                if fn is not None and adapter.check() is not None:
                    adapter.paused += 1  # (copies for the check are no nodes)
                    try:
                        adapter.function_args[adapter.out_node(fn, 0)] = tuple(
                            a.detach().clone().requires_grad_(a.requires_grad)
                            if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                            for a in args)
                    finally:
                        adapter.paused -= 1
            return out

        return wrapped

    def _backward_wrapper(self, backward):
        adapter, live = self, self.live

        def wrapped(tensors, grad_tensors=None, *args, **kwargs):
            if adapter.paused:
                return backward(tensors, grad_tensors, *args, **kwargs)
            frame = sys._getframe(1)
            line = adapter.scenario_line(frame)
            roots = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
            seeds = ([grad_tensors] if isinstance(grad_tensors, torch.Tensor)
                     else list(grad_tensors) if grad_tensors is not None else [None] * len(roots))
            run = BackwardRun(adapter, line)
            for root, seed in zip(roots, seeds):  # (each root's graph recorded, and hooked)
                run.seed(root, seed)
            note = run.copied if adapter.hooked or OTHERS[0] else run.steps.append
            outer, live[:] = live[:], [run, note, run.steps]
            adapter.paused += 1  # (the hooks' own torch calls, a Function's backward's)
            try:
                out = backward(tensors, grad_tensors, *args, **kwargs)
                run.done = True
                return out
            finally:
                try:
                    run.settle()  # (the steps the hooks noted)
                finally:
                    adapter.paused -= 1
                    live[:] = outer
                    if not outer[0]:  # (a graph run once, as most are: its shapes let go)
                        adapter.shapes.clear()
                if run.profile is not None:  # (a custom backward that raised)
                    sys.setprofile(run.profile[0])

        return wrapped

    # -- names -------------------------------------------------------------------------------
    def names(self, scope: dict) -> list[tuple[int, str]]:
        """(node, name) of every tensor named (`TensorNames.names`)."""
        return self.naming.names(scope)
