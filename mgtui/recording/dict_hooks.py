"""The hook probe for a Value class whose nodes keep their fields in an instance dict.

It observes from outside: the class's `__init__` is wrapped to number each new node,
and setter-only descriptors on `grad`, `data` and `label` see every write while reads
still go straight to the instance dict (a descriptor without `__get__` does not slow
reads down). A node's `_backward` is wrapped as it is read, so calls made by
`backward()` and calls made by hand are both seen. Nodes keep their id in the instance
dict, under `ID`. (`mgtui.recording.probes` describes the protocol; `mgtui.recording.inline.probe` records
such a class faster where its source can be rewritten.)

A class whose fields go by other names (`value`, `parents`, `backward_fn`: its
`mgtui.recording.shapes.FieldMap`) gets the same hooks on its own names, and the hooks given to a
caller see its nodes through a `MappedNode`, keyed by micrograd's names. (The inline
rewrite records micrograd's names only: such a class always has these hooks.)
"""

from __future__ import annotations

import sys
import types
from functools import partial
from operator import attrgetter
from typing import TYPE_CHECKING, Callable

from mgtui.recording.probes import (
    MISSING,
    WRITTEN,
    ordered,
    put_back,
    record_write,
    set_view,
)
from mgtui.recording.store import CREATE, ID, NODE_ROW
from mgtui.recording.shapes import MICROGRAD, FieldMap, op_of_maker

if TYPE_CHECKING:
    from mgtui.recording.context import RecordingContext



def made_already(node: object) -> None:
    """The `__init__` of a node recorded by `node_made`: it is made already."""


class DictHooks:
    """The hooks of one recording for classes with an instance dict (see the module's
    docstring). `context` is the recording's (`mgtui.recording.context`): its records,
    hooks, limits and line finder."""

    def __init__(self, context: RecordingContext) -> None:
        self.context = context
        self.records = context.records
        self._restore: list[tuple[type, str, object]] = []
        self._hooks: dict[FieldMap, tuple] = {}  # the field hooks, made once per field map
        self._numbering: dict[FieldMap, Callable] = {}  # `node_made`, per field map
        self.fields: dict[type, FieldMap] = {}  # each class attached, its fields

    # -- the protocol ------------------------------------------------------------------------
    def attach(self, cls: type, fields: FieldMap = MICROGRAD) -> bool:
        init = self._init_wrapper(cls.__dict__["__init__"], fields)
        hooks = [("__init__", init), *self._field_hooks(fields)]
        for name, value in hooks:
            self._restore.append((cls, name, cls.__dict__.get(name, MISSING)))
            setattr(cls, name, value)
        self.fields[cls] = fields
        if fields.renamed:
            keys = fields.keys
            set_view(cls, lambda node: MappedNode(node.__dict__, keys))
        return True

    def _field_hooks(self, fields: FieldMap) -> tuple:
        """(attribute, hook) for the grad, data, backward and label fields."""
        hooks = self._hooks.get(fields)
        if hooks is None:
            context = self.context
            scenario_line, run_backward = context.lines.scenario_line, context.calls.run_backward
            keys = fields.keys if fields.renamed else None
            hooks = self._hooks[fields] = tuple(
                (name, hook) for name, hook in (
                    (fields.grad, self._write_hook("grad", scenario_line, fields.grad)),
                    (fields.data, self._write_hook("data", scenario_line, fields.data)),
                    (fields.backward, self._backward_hook(run_backward, fields.backward, keys)),
                    (fields.label, self._label_hook(fields.label))) if name)
        return hooks

    def detach(self) -> None:
        put_back(self._restore)
        for cls in self.fields:
            set_view(cls, None)
        self.fields.clear()

    def fields_of(self, cls: type) -> FieldMap:
        return next((self.fields[k] for k in cls.__mro__ if k in self.fields), MICROGRAD)

    def view(self, node: object):
        """`node`'s dict as the hooks see it (a `MappedNode` if its fields are renamed)."""
        fields = self.fields_of(type(node))
        return MappedNode(node.__dict__, fields.keys) if fields.renamed else node.__dict__

    def node_made(self, node: object) -> None:
        fields = self.fields_of(type(node))
        numbering = self._numbering.get(fields)
        if numbering is None:
            numbering = self._numbering[fields] = self._init_wrapper(made_already, fields)
        numbering(node)

    def backward_called(self, node: object, fn: Callable[[], object],
                        frame: types.FrameType) -> object:
        d = self.view(node)
        nid = d.get(ID)
        if nid is None:
            return fn()
        return self.context.calls.record_call(nid, d, fn, frame)

    def field_written(self, node: object, name: str, before: object, value: object,
                      frame: types.FrameType) -> None:
        nid = node.__dict__.get(ID)
        if nid is not None:
            record_write(self.records, self.context.lines.scenario_line, nid, name, before,
                         value, frame)

    # -- the hooks: the hot path ---------------------------------------------------------------
    # Each hook is a closure over local names bound once (the record columns, the
    # recorder's options), and records are appended flat: copies, on purpose, of the
    # protocol's methods above.
    @staticmethod
    def _backward_hook(run_backward, name: str = "_backward", keys: dict | None = None):
        """The `_backward` descriptor (on the class's own name for it): a read returns the
        closure bound to `run_backward` (`BackwardCalls`), with the node's dict (a
        `MappedNode` over it if `keys` renames the fields)."""
        if keys is not None:
            return _MappedBackwardHook(run_backward, name, keys)

        class BackwardHook:
            """`_backward` reads return the closure bound to the recorder; writes store it."""

            __slots__ = ()

            def __set__(self, obj, fn):
                obj.__dict__["_backward"] = fn

            def __get__(self, obj, owner=None):
                if obj is None:
                    return self
                d = obj.__dict__
                try:
                    return partial(run_backward, d, d["_backward"])
                except KeyError:
                    raise AttributeError("_backward") from None

        return BackwardHook()

    def _write_hook(self, key: str, scenario_line, name: str | None = None):
        """A setter-only descriptor for the `grad` or `data` field (`key`), under the
        class's own `name` for it (`field_written`, inlined)."""
        field, kind = WRITTEN[key]
        name = name or key
        records = self.records
        add_event, add_write = records.add_event, records.add_write
        writes, stack = records.writes, records.stack
        array_write = records.arrays.write
        getframe = sys._getframe
        # the code the inline rewrite made, which records stores to micrograd's names itself
        inlined = self.context.inlined_codes if name == key else None

        class WriteHook:
            __slots__ = ()

            def __set__(self, obj, value):
                d = obj.__dict__
                nid = d.get(ID)
                if nid is None or (inlined is not None
                                   and id(getframe(1).f_code) in inlined):
                    d[name] = value  # (rewritten code records this write itself)
                    return
                before = d.get(name, 0.0)
                d[name] = value
                if type(value) is not float:  # an array, an int... (`array_values`)
                    before, value = array_write(nid, field, before, value)
                if stack:
                    add_write((nid, field, before, value, getframe(1).f_lineno))
                else:
                    add_event((kind, nid, before, value, scenario_line(getframe(1)),
                               -1, len(writes)))

        return WriteHook()

    def _label_hook(self, name: str = "label"):
        late_labels = self.records.late_labels

        class LabelHook:
            """Labels set after a node is made (`e = a*b; e.label = 'e'`)."""

            __slots__ = ()

            def __set__(self, obj, value):
                d = obj.__dict__
                d[name] = value
                nid = d.get(ID)
                if nid is not None:
                    late_labels[nid] = value

        return LabelHook()

    def _init_wrapper(self, orig_init, fields: FieldMap = MICROGRAD):
        """`orig_init` wrapped to number each new node and record it (and run
        `on_create` first): `node_made`, inlined. A node whose fields are renamed is
        read through a `MappedNode`; one whose class has no op field gets the op of the
        method that made it (`op_of_maker`)."""
        context, records = self.context, self.records
        mapped = fields.keys if fields.renamed else None  # (None: read the dict itself)
        infer_op, class_codes = fields.op is None, context.lines.class_codes
        init_code = getattr(orig_init, "__code__", None)
        keyword = (init_code.co_varnames[2] if init_code is not None
                   and init_code.co_argcount > 2 else "_children")
        nodes, kids, add_node, add_event = records.nodes, records.kids, records.add_node, records.add_event
        writes, stack, made_inside = records.writes, records.stack, records.made_inside
        max_nodes, (on_create, _, _, on_progress, _) = context.max_nodes, context.hooks
        scenario_line, named = context.lines.scenario_line, context.namer.made
        packed = records.id_base  # (the nodes packed: ids go on from there)
        getid = attrgetter(ID)
        getframe = sys._getframe
        array_made = records.arrays.made

        def __init__(self, *args, **kwargs):
            orig_init(self, *args, **kwargs)
            d = self.__dict__ if mapped is None else MappedNode(self.__dict__, mapped)
            if ID in d:  # a subclass's __init__ already chained up through this one
                return
            nid = len(nodes) // NODE_ROW + packed[0]
            if nid >= max_nodes or context.stop_reason:
                context.over_limit()
            if on_progress is not None and not nid & 0x3FFF:  # (the store packs: before
                on_progress(nid)  # this node's rows begin, as the inlined probe does)
                nid = len(nodes) // NODE_ROW + packed[0]
            prev = d.get("_prev") or ()
            if isinstance(prev, (set, frozenset)) and len(prev) > 1:  # (see `ordered`)
                prev = d["_prev"] = ordered(prev, args, kwargs, None, keyword)
            n_before = len(kids)
            try:
                kids.extend(map(getid, prev))
            except AttributeError:  # a child made before the recording started
                del kids[n_before:]
                if context.adopt_strangers:  # (an in-process block) recorded as made now
                    classes = context.value_classes
                    for c in prev:
                        if ID not in getattr(c, "__dict__", {ID: 0}) and classes.is_node(c):
                            classes.adopt(c)
                    nid, n_before = len(nodes) // NODE_ROW + packed[0], len(kids)
                kids.extend(getattr(c, ID, -1) for c in prev)
            if on_create is not None:
                on_create(nid, d)
            d[ID] = nid
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



class MappedNode:
    """A node whose fields go by other names (`mgtui.recording.shapes.FieldMap`), seen as a node
    dict keyed by micrograd's names: `get`, `[]`, `in`, `pop` and `[] =` read and write
    its instance dict `d` under the class's own names; `ID` is kept there as it is."""

    __slots__ = ("d", "names")

    def __init__(self, d: dict, names: dict[str, str]) -> None:
        self.d = d
        self.names = names  # micrograd's name -> the class's

    @property
    def key(self) -> int:
        """One key per node (the view is made anew each time)."""
        return id(self.d)

    def get(self, key: str, default=None):
        return self.d.get(self.names.get(key, key if key == ID else _NO_FIELD), default)

    def __getitem__(self, key: str):
        return self.d[self.names.get(key, key if key == ID else _NO_FIELD)]

    def __setitem__(self, key: str, value) -> None:
        name = self.names.get(key, key if key == ID else None)
        if name is None:
            raise KeyError(key)
        self.d[name] = value

    def __contains__(self, key: str) -> bool:
        return self.names.get(key, key if key == ID else _NO_FIELD) in self.d

    def pop(self, key: str, *default):
        return self.d.pop(self.names.get(key, key if key == ID else _NO_FIELD), *default)

    def __repr__(self) -> str:
        return f"MappedNode(#{self.d.get(ID)}: {', '.join(self.names.values())})"


_NO_FIELD = object()  # the name of a field the class does not have: in no dict


class _MappedBackwardHook:
    """The backward descriptor of a class whose fields are renamed: a read returns the
    closure bound to the recorder, with the node seen as a `MappedNode`; a field that
    holds no callable (`backward_fn = None` for a leaf) is returned as it is."""

    __slots__ = ("run_backward", "name", "keys")

    def __init__(self, run_backward, name: str, keys: dict[str, str]) -> None:
        self.run_backward, self.name, self.keys = run_backward, name, keys

    def __set__(self, obj, fn) -> None:
        obj.__dict__[self.name] = fn

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        d = obj.__dict__
        try:
            fn = d[self.name]
        except KeyError:
            raise AttributeError(self.name) from None
        if not callable(fn):
            return fn
        return partial(self.run_backward, MappedNode(d, self.keys), fn)
