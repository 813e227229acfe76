"""The hook probe for a Value class whose nodes keep their fields in an instance dict.

It observes from outside: the class's `__init__` is wrapped to number each new node,
and setter-only descriptors on `grad`, `data` and `label` see every write while reads
still go straight to the instance dict (a descriptor without `__get__` does not slow
reads down). A node's `_backward` is wrapped as it is read, so calls made by
`backward()` and calls made by hand are both seen. Nodes keep their id in the instance
dict, under `ID`. (`mgtui.recording.probes` describes the protocol; `mgtui.recording.inline.probe` records
such a class faster where its source can be rewritten.)
"""

from __future__ import annotations

import sys
import types
from functools import partial
from operator import attrgetter
from typing import Callable

from mgtui.recording.probes import WRITTEN, StopRecording, ordered, record_write
from mgtui.recording.store import CREATE, ID, NODE_ROW

_MISSING = object()


def made_already(node: object) -> None:
    """The `__init__` of a node recorded by `node_made`: it is made already."""


class DictHooks:
    """The hooks of one recording for classes with an instance dict (see the module's
    docstring). `rec` is the `Recorder`: its records, hooks, limits and line finder."""

    def __init__(self, rec) -> None:
        self.rec = rec
        self.records = rec.records
        self._restore: list[tuple[type, str, object]] = []
        scenario_line = rec.lines.scenario_line
        self._hooks = (("grad", self._write_hook("grad", scenario_line)),
                       ("data", self._write_hook("data", scenario_line)),
                       ("_backward", self._backward_hook(rec.calls.run_backward)),
                       ("label", self._label_hook()))
        self._numbering = self._init_wrapper(made_already)

    # -- the protocol ------------------------------------------------------------------------
    def attach(self, cls: type) -> bool:
        hooks = [("__init__", self._init_wrapper(cls.__dict__["__init__"])), *self._hooks]
        for name, value in hooks:
            self._restore.append((cls, name, cls.__dict__.get(name, _MISSING)))
            setattr(cls, name, value)
        return True

    def detach(self) -> None:
        for cls, name, old in reversed(self._restore):
            if old is _MISSING:
                try:
                    delattr(cls, name)
                except AttributeError:
                    pass
            else:
                setattr(cls, name, old)
        self._restore.clear()

    def node_made(self, node: object) -> None:
        self._numbering(node)

    def backward_called(self, node: object, fn: Callable[[], object],
                        frame: types.FrameType) -> object:
        d = node.__dict__
        nid = d.get(ID)
        if nid is None:
            return fn()
        return self.rec.calls.record_call(nid, d, fn, frame)

    def field_written(self, node: object, name: str, before: object, value: object,
                      frame: types.FrameType) -> None:
        nid = node.__dict__.get(ID)
        if nid is not None:
            record_write(self.records, self.rec.lines.scenario_line, nid, name, before,
                         value, frame)

    # -- the hooks: the hot path ---------------------------------------------------------------
    # Each hook is a closure over local names bound once (the record columns, the
    # recorder's options), and records are appended flat: copies, on purpose, of the
    # protocol's methods above.
    @staticmethod
    def _backward_hook(run_backward):
        """The `_backward` descriptor: a read returns the closure bound to `run_backward`
        (`BackwardCalls`)."""

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

    def _write_hook(self, name: str, scenario_line):
        """A setter-only descriptor for `grad` or `data` (`field_written`, inlined)."""
        field, kind = WRITTEN[name]
        records, rec = self.records, self.rec
        add_event, add_write = records.add_event, records.add_write
        writes, stack = records.writes, records.stack
        getframe = sys._getframe

        class WriteHook:
            __slots__ = ()

            def __set__(self, obj, value):
                d = obj.__dict__
                nid = d.get(ID)
                if nid is None or (rec.inliner is not None
                                   and id(getframe(1).f_code) in rec.inliner.codes):
                    d[name] = value  # (rewritten code records this write itself)
                    return
                before = d.get(name, 0.0)
                d[name] = value
                if stack:
                    add_write((nid, field, before, value, getframe(1).f_lineno))
                else:
                    add_event((kind, nid, before, value, scenario_line(getframe(1)),
                               -1, len(writes)))

        return WriteHook()

    def _label_hook(self):
        late_labels = self.records.late_labels

        class LabelHook:
            """Labels set after a node is made (`e = a*b; e.label = 'e'`)."""

            __slots__ = ()

            def __set__(self, obj, value):
                d = obj.__dict__
                d["label"] = value
                nid = d.get(ID)
                if nid is not None:
                    late_labels[nid] = value

        return LabelHook()

    def _init_wrapper(self, orig_init):
        """`orig_init` wrapped to number each new node and record it (and run
        `on_create` first): `node_made`, inlined."""
        rec, records = self.rec, self.records
        nodes, kids, add_node, add_event = records.nodes, records.kids, records.add_node, records.add_event
        writes, stack, made_inside = records.writes, records.stack, records.made_inside
        max_nodes, (on_create, _, _, on_progress) = rec.max_nodes, rec.hooks
        scenario_line, named = rec.lines.scenario_line, rec.namer.made
        getid = attrgetter(ID)
        getframe = sys._getframe

        def __init__(self, *args, **kwargs):
            orig_init(self, *args, **kwargs)
            d = self.__dict__
            if ID in d:  # a subclass's __init__ already chained up through this one
                return
            nid = len(nodes) // NODE_ROW
            if nid >= max_nodes or rec.stop_reason:
                if rec.stop_reason is None:
                    rec.stop_reason = f"more than {max_nodes:,} nodes (--max-nodes)"
                raise StopRecording(rec.stop_reason)
            prev = d.get("_prev", ())
            if isinstance(prev, (set, frozenset)) and len(prev) > 1:  # (see `ordered`)
                prev = d["_prev"] = ordered(prev, args, kwargs)
            n_before = len(kids)
            try:
                kids.extend(map(getid, prev))
            except AttributeError:  # a child made before the recording started
                del kids[n_before:]
                if rec.adopt_strangers:  # (an in-process block) recorded as made now
                    for c in prev:
                        if ID not in getattr(c, "__dict__", {ID: 0}) and hasattr(c, "_prev"):
                            rec.adopt(c)
                    nid, n_before = len(nodes) // NODE_ROW, len(kids)
                kids.extend(getattr(c, ID, -1) for c in prev)
            if on_create is not None:
                on_create(nid, d)
            d[ID] = nid
            caller = getframe(1)
            add_node((len(kids), d.get("_op", ""), d.get("label"), d["data"],
                      scenario_line(caller)))
            named(nid, caller, self)
            if stack:  # made inside a `_backward`: its step follows that call's writes
                made_inside.append(nid)
            else:
                add_event((CREATE, nid, 0.0, 0.0, 0, -1, len(writes)))
            if on_progress is not None and not nid & 0x3FFF:
                on_progress(nid)

        __init__.__wrapped__ = orig_init
        return __init__
