"""The hook probe for a Value class that keeps its fields in `__slots__`.

Such a node has no instance dict to read or to hold a node id, so it gets hooks of its
own: properties that wrap each slot's own descriptor (reads go to it at C speed), with
nodes numbered by address (`NodeIds`). The hooks given to a caller (`mgtui.recording.probes.Hooks`)
see such a node through a `SlotsNode`, a small mapping over its slots, keyed by
micrograd's names whatever the class calls its fields (`mgtui.recording.shapes.FieldMap`).
"""

from __future__ import annotations

import sys
import types
import weakref
from functools import partial
from typing import TYPE_CHECKING, Callable

from mgtui.recording.probes import (
    MISSING,
    WRITTEN,
    node_view,
    ordered,
    put_back,
    record_write,
    set_view,
)
from mgtui.recording.store import CREATE, ID, NODE_ROW
from mgtui.recording.shapes import MICROGRAD, FieldMap, op_of_maker

if TYPE_CHECKING:
    from mgtui.recording.context import RecordingContext



class SlotsHooks:
    """The hooks of one recording for `__slots__` classes: the same records as
    `mgtui.recording.dict_hooks.DictHooks`, for a class whose instances have no `__dict__`. Each
    hook wraps the field's own descriptor (a slot's `member_descriptor`), which still
    holds the value, and nodes are numbered by address in `ids` (the recorder's: it
    releases them once the trace is built)."""

    def __init__(self, context: RecordingContext, ids: NodeIds) -> None:
        self.context = context
        self.records = context.records
        self.ids = ids
        self._restore: list[tuple[type, str, object]] = []
        self._numbering: dict[FieldMap, Callable] = {}  # `node_made`, per field map
        self.attached: list[type] = []

    # -- the protocol ------------------------------------------------------------------------
    def attach(self, cls: type, fields: FieldMap = MICROGRAD) -> bool:
        if not keeps_fields_in_slots(cls, fields):
            return False
        self.ids.fields[cls] = fields
        for name, value in self._hooks(cls, cls.__dict__["__init__"], fields):
            self._restore.append((cls, name, cls.__dict__.get(name, MISSING)))
            setattr(cls, name, value)
        self.attached.append(cls)
        set_view(cls, self.ids.view)
        return True

    def detach(self) -> None:
        put_back(self._restore)
        for cls in self.attached:
            set_view(cls, None)
        self.attached.clear()

    def node_made(self, node: object) -> None:
        fields = self.ids.fields_of(type(node))
        numbering = self._numbering.get(fields)
        if numbering is None:
            numbering = self._numbering[fields] = self._init_wrapper(_made_already, fields)
        numbering(node)

    def backward_called(self, node: object, fn: Callable[[], object],
                        frame: types.FrameType) -> object:
        nid = self.ids.get(id(node))
        if nid is None:
            return fn()
        return self.context.calls.record_call(nid, self.ids.view(node), fn, frame)

    def field_written(self, node: object, name: str, before: object, value: object,
                      frame: types.FrameType) -> None:
        nid = self.ids.get(id(node))
        if nid is not None:
            record_write(self.records, self.context.lines.scenario_line, nid, name, before,
                         value, frame)

    # -- the hooks: the hot path (copies of the protocol's methods, see `DictHooks`) ---------
    def _hooks(self, cls: type, init, fields: FieldMap) -> list[tuple[str, object]]:
        """(attribute, hook) for each field `cls` can hold, and its wrapped `__init__`."""
        layout = self.ids.layout(cls)
        makers = (("grad", partial(self._write_hook, "grad")),
                  ("data", partial(self._write_hook, "data")),
                  ("_backward", self._backward_hook),
                  ("label", self._label_hook))
        hooks: list[tuple[str, object]] = [("__init__", self._init_wrapper(init, fields))]
        for key, make in makers:
            raw = layout.raw(key)
            if raw is not None:  # else no instance can hold it, hooked or not
                hooks.append((layout.names[key], make(raw)))
        return hooks

    def _write_hook(self, name: str, raw) -> SlotsField:
        """The `grad` or `data` hook for a slot: reads go to `raw` unrecorded."""
        field, kind = WRITTEN[name]
        records = self.records
        add_event, add_write = records.add_event, records.add_write
        writes, stack = records.writes, records.stack
        ids_get, scenario_line = self.ids.get, self.context.lines.scenario_line
        get, put = raw.__get__, raw.__set__
        getframe = sys._getframe
        array_write = records.arrays.write

        def write(obj, value):
            nid = ids_get(id(obj))
            if nid is None:
                put(obj, value)
                return
            try:
                before = get(obj)
            except AttributeError:
                before = 0.0
            put(obj, value)
            if type(value) is not float:  # an array, an int... (`array_values`)
                before, value = array_write(nid, field, before, value)
            if stack:
                add_write((nid, field, before, value, getframe(1).f_lineno))
            else:
                add_event((kind, nid, before, value, scenario_line(getframe(1)),
                           -1, len(writes)))

        return SlotsField(get, write, raw, self.ids)

    def _backward_hook(self, raw) -> SlotsField:
        """The `_backward` hook for a slot: a read returns the closure bound to
        `run_backward` (`BackwardCalls`) with the node's `SlotsNode`."""
        run_backward, ids = self.context.calls.run_backward, self.ids
        ids_get, layout_of, get = ids.get, ids.layout, raw.__get__

        def read(obj):
            fn = get(obj)
            if not callable(fn):  # (`backward_fn = None` for a leaf): as it is
                return fn
            node = SlotsNode(obj, layout_of(type(obj)), ids_get(id(obj)))
            return partial(run_backward, node, fn)

        return SlotsField(read, raw.__set__, raw, ids)

    def _label_hook(self, raw) -> SlotsField:
        """The `label` hook for a slot."""
        late_labels, ids_get, put = self.records.late_labels, self.ids.get, raw.__set__

        def write(obj, value):
            put(obj, value)
            nid = ids_get(id(obj))
            if nid is not None:
                late_labels[nid] = value

        return SlotsField(raw.__get__, write, raw, self.ids)

    def _init_wrapper(self, orig_init, fields: FieldMap = MICROGRAD):
        """`orig_init` wrapped to number each new node and record it (`node_made`,
        inlined): the node is read through a `SlotsNode` and numbered in `ids`. One whose
        class has no op field gets the op of the method that made it (`op_of_maker`)."""
        context, records = self.context, self.records
        infer_op, class_codes = fields.op is None, context.lines.class_codes
        init_code = getattr(orig_init, "__code__", None)
        keyword = (init_code.co_varnames[2] if init_code is not None
                   and init_code.co_argcount > 2 else "_children")
        nodes, kids, add_node, add_event = records.nodes, records.kids, records.add_node, records.add_event
        writes, stack, made_inside = records.writes, records.stack, records.made_inside
        max_nodes, (on_create, _, _, on_progress, _) = context.max_nodes, context.hooks
        ids, scenario_line, named = self.ids, context.lines.scenario_line, context.namer.made
        packed = records.id_base  # (the nodes packed: ids go on from there)
        ids_get, layout_of = ids.get, ids.layout
        getframe = sys._getframe
        array_made = records.arrays.made

        def node_id(c) -> int:
            nid = ids_get(id(c))
            return getattr(c, ID, -1) if nid is None else nid

        def __init__(self, *args, **kwargs):
            orig_init(self, *args, **kwargs)
            if id(self) in ids:  # a subclass's __init__ already chained up through this one
                return
            nid = len(nodes) // NODE_ROW + packed[0]
            if nid >= max_nodes or context.stop_reason:
                context.over_limit()
            if on_progress is not None and not nid & 0x3FFF:  # (the store packs: before
                on_progress(nid)  # this node's rows begin, as the inlined probe does)
                nid = len(nodes) // NODE_ROW + packed[0]
            layout = layout_of(type(self))
            d = SlotsNode(self, layout, None)
            prev = d.get("_prev") or ()
            if isinstance(prev, (set, frozenset)) and len(prev) > 1:  # (see `ordered`)
                prev = d["_prev"] = ordered(prev, args, kwargs, node_id, keyword)
            kids.extend(map(node_id, prev))
            if on_create is not None:
                on_create(nid, d)
            ids.add(self, nid, layout.weak)
            d.nid = nid
            caller = getframe(1)
            op = d.get("_op", "") if not infer_op else (
                op_of_maker(caller, class_codes) if prev else "")
            data = d["data"]
            if type(data) is not float:  # an array, an int... (`array_values`)
                data = array_made(nid, data, d.get("grad"))
            add_node((len(kids), op, d.get("label"), data, scenario_line(caller)))
            named(nid, caller, self)
            if stack:  # made inside a `_backward`: its step follows that call's writes
                made_inside.append(nid)
            else:
                add_event((CREATE, nid, 0.0, 0.0, 0, -1, len(writes)))

        __init__.__wrapped__ = orig_init
        return __init__


def _made_already(node: object) -> None:
    """The `__init__` of a node recorded by `node_made`: it is made already."""


# -- nodes of `__slots__` classes ----------------------------------------------------------


def class_attribute(cls: type, name: str) -> object:
    """`name` as `cls` or its bases define it (no descriptor called), with the recorder's
    own `SlotsField` taken off; `MISSING` if none does."""
    for klass in cls.__mro__:
        value = klass.__dict__.get(name, MISSING)
        if value is not MISSING:
            return value.original if isinstance(value, SlotsField) else value
    return MISSING


def keeps_fields_in_slots(cls: type, fields: FieldMap = MICROGRAD) -> bool:
    """Do the instances of `cls` lack a `__dict__`, or keep a hooked field (named as
    `fields` says) in a slot? Then the recorder gives it its `__slots__` hooks."""
    return not cls.__dictoffset__ or any(
        isinstance(class_attribute(cls, name), types.MemberDescriptorType)
        for name in fields.hooked)


def node_dict(obj: object):
    """A node as the recorder's hooks see it: its instance dict, or the view its class
    is read through (a `SlotsNode` for an instrumented `__slots__` class, a
    `mgtui.recording.dict_hooks.MappedNode` for renamed fields); None for anything else."""
    return node_view(obj)


class SlotsField(property):
    """The recorder's descriptor for a field of a `__slots__` class. It wraps the class's
    own descriptor for the field (`original`, which `detach()` puts back): a read is
    `original.__get__`, called from C, and `fset` records a write and passes it on."""

    def __init__(self, fget, fset, original, ids: NodeIds) -> None:
        super().__init__(fget, fset, original.__delete__, "a field the recorder observes")
        self.original = original
        self.ids = ids


class InstanceDictField:
    """A field kept in the instance `__dict__` of a class that keeps others in slots, read
    and written like a slot's descriptor."""

    __slots__ = ("name", "default")

    def __init__(self, name: str, default: object) -> None:
        self.name = name
        self.default = default  # what the class itself defines under the name, if anything

    def __get__(self, obj, owner=None):
        try:
            return obj.__dict__[self.name]
        except KeyError:
            if self.default is MISSING:
                raise AttributeError(self.name) from None
            get = getattr(type(self.default), "__get__", None)
            return self.default if get is None else get(self.default, obj, type(obj))

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.name] = value

    def __delete__(self, obj) -> None:
        try:
            del obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None


class SlotsLayout:
    """Where the instances of a class keep each field: behind a data descriptor of the
    class (a slot's `member_descriptor`, or a property), else in their `__dict__`.
    Fields are asked for by micrograd's names, and found under the class's own
    (`fields`)."""

    def __init__(self, cls: type, fields: FieldMap = MICROGRAD) -> None:
        self.cls = cls
        self.weak = bool(cls.__weakrefoffset__)  # its instances take weak references
        self.names = fields.keys  # micrograd's name -> the class's
        self._raw: dict[str, object] = {}

    def raw(self, key: str):
        """The descriptor that reads and writes the field `key` (by micrograd's name)
        past the recorder's hooks, or None if no instance can hold it."""
        try:
            return self._raw[key]
        except KeyError:
            pass
        name = self.names.get(key)
        if name is None:  # a field the class does not have (its op, its label)
            self._raw[key] = None
            return None
        found = class_attribute(self.cls, name)
        if hasattr(type(found), "__set__"):
            raw = found
        elif self.cls.__dictoffset__:
            raw = InstanceDictField(name, found)
        else:
            raw = None
        self._raw[key] = raw
        return raw


class SlotsNode:
    """A node without a `__dict__` as the hooks see a node dict: `get`, `[]`, `in` and
    `pop` read and write its fields through its class's own descriptors (past the
    recorder's), and `ID` gives its node id (absent until it is numbered)."""

    __slots__ = ("node", "layout", "nid")

    def __init__(self, node: object, layout: SlotsLayout, nid: int | None) -> None:
        self.node = node
        self.layout = layout
        self.nid = nid

    def get(self, key: str, default=None):
        if key == ID:
            return default if self.nid is None else self.nid
        raw = self.layout.raw(key)
        if raw is None:
            return default
        try:
            return raw.__get__(self.node)
        except AttributeError:
            return default

    def __getitem__(self, key: str):
        value = self.get(key, MISSING)
        if value is MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: str) -> bool:
        return self.get(key, MISSING) is not MISSING

    def __setitem__(self, key: str, value) -> None:
        raw = None if key == ID else self.layout.raw(key)
        if raw is None:
            raise KeyError(key)
        raw.__set__(self.node, value)

    def pop(self, key: str, default=MISSING):
        value = self.get(key, MISSING)
        if value is MISSING or key == ID:
            if default is MISSING:
                raise KeyError(key)
            return default
        self.layout.raw(key).__delete__(self.node)
        return value

    @property
    def key(self) -> int:
        """One key per node (the view is made anew each time)."""
        return id(self.node)

    def __repr__(self) -> str:
        return f"SlotsNode(#{self.nid} {type(self.node).__name__})"


class NodeIds(dict):
    """Node ids by address (`id(node)`) for nodes without a `__dict__` to hold one, and
    the `SlotsLayout` of each of their classes.

    An address may only be reused once its node is gone. A node whose class takes weak
    references is forgotten as it dies, so the nodes a scenario drops are freed as in
    the dict case; any other node is kept alive until the run ends (`release()`).
    """

    def __init__(self) -> None:
        super().__init__()
        self.kept: list = []
        self.refs: dict[int, weakref.ref] = {}
        self.layouts: dict[type, SlotsLayout] = {}
        self.fields: dict[type, FieldMap] = {}  # each class attached, its fields

    def fields_of(self, cls: type) -> FieldMap:
        return next((self.fields[k] for k in cls.__mro__ if k in self.fields), MICROGRAD)

    def layout(self, cls: type) -> SlotsLayout:
        layout = self.layouts.get(cls)
        if layout is None:
            layout = self.layouts[cls] = SlotsLayout(cls, self.fields_of(cls))
        return layout

    def add(self, node: object, nid: int, weak: bool) -> None:
        addr = id(node)
        if weak:
            self.refs[addr] = weakref.ref(node, partial(self.forget, addr))
        else:
            self.kept.append(node)
        self[addr] = nid

    def forget(self, addr: int, _ref: object = None) -> None:
        self.pop(addr, None)
        self.refs.pop(addr, None)

    def view(self, node: object) -> SlotsNode:
        return SlotsNode(node, self.layout(type(node)), self.get(id(node)))

    def release(self) -> None:
        self.clear()
        self.kept.clear()
        self.refs.clear()
        self.layouts.clear()
        self.fields.clear()


