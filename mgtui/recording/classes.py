"""The Value classes of one recording: which classes are instrumented, by which probe,
and which objects are nodes (`ValueClasses`).

A class whose `__init__` stores a number, a grad, its inputs and a backward callable,
whatever it calls them (`mgtui.recording.shapes.ShapeFinder`), is handed to the first
probe that takes it: the inlined recording (`mgtui.recording.inline.probe`), where its
fields go by micrograd's names and its code can be rewritten; else the `__slots__` or
the instance-dict hooks. A class that only looks like one is watched
(`mgtui.recording.shapes.Unrecorded`), so that a run that made its instances is not
shown as recorded. The recorder (`mgtui.recording.recorder`) holds one of these and
keeps only the lifecycle.
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING

from mgtui.recording.probes import ClassProbe, maybe_with_values, without_values
from mgtui.recording.shapes import FieldMap, ShapeFinder, Unrecorded
from mgtui.recording.slots_hooks import keeps_fields_in_slots
from mgtui.recording.torch_watch import torch_module

if TYPE_CHECKING:
    from mgtui.recording.context import RecordingContext
    from mgtui.recording.dict_hooks import DictHooks
    from mgtui.recording.inline.probe import Inliner
    from mgtui.recording.slots_hooks import SlotsHooks


class ValueClasses:
    """The Value classes of one recording (see the module): `instrument` hands each to
    a probe, `adopt` records a node made without its class's `__init__`, `unrecorded`
    says why a run must not be shown. `shapes` tells a class's fields."""

    def __init__(self, context: RecordingContext, shapes: ShapeFinder,
                 inliner: Inliner | None, slots_hooks: SlotsHooks, dict_hooks: DictHooks
                 ) -> None:
        self.context = context
        self.shapes = shapes
        self.unseen = Unrecorded(shapes)
        self.inliner = inliner
        self.hooks = (slots_hooks, dict_hooks)  # the probes that take any Value class
        self.classes: list[type] = []  # the Value classes instrumented
        self.fields: dict[type, FieldMap] = {}  # each one's fields
        self.attached: dict[type, ClassProbe] = {}  # each one's probe, while it runs
        self._looked_at: dict[int, type] = {}  # the classes `instrument` was asked about

    def instrument(self, cls: type, defined_now: bool = False) -> None:
        """If `cls` is a Value class, hand it to the first probe that takes it (see the
        module). `defined_now`: the run is defining it."""
        if id(cls) in self._looked_at:
            return
        self._looked_at[id(cls)] = cls
        if torch_module(getattr(cls, "__module__", None) or ""):
            return
        if defined_now:
            self.unseen.defined.append(cls)
        if not self.shapes.may_be_value(cls):
            return
        fields = self.shapes.fields(cls)
        if fields is None:
            self.unseen.consider(cls)
            return
        self.classes.append(cls)
        self.fields[cls] = fields
        inliner = self.inliner
        inline = inliner is not None and not fields.renamed and inliner.attach(cls)
        if inline:
            self.attached[cls] = inliner
        self._class_came_in(cls)
        if not inline:
            if inliner is not None and fields.renamed:
                inliner.keep_hooks(cls)
            for probe in self.hooks:
                if probe.attach(cls, fields):
                    self.attached[cls] = probe
                    return

    def _class_came_in(self, cls: type) -> None:
        """The tables that know the classes' code learn `cls`'s (after the rewrite: its
        methods are its rewritten code from now on)."""
        context = self.context
        init_code = getattr(cls.__dict__["__init__"], "__code__", None)
        if init_code is not None:
            context.records.default_codes.update(
                c for c in init_code.co_consts if hasattr(c, "co_code"))
        context.lines.class_came_in(cls)
        if self.inliner is not None:
            self.inliner.forget_lines()

    def instrument_loaded(self) -> None:
        """Instrument Value-like classes that were imported before the run started."""
        may_be_value = self.shapes.may_be_value
        with warnings.catch_warnings():  # (a library's deprecated names warn as they are read)
            warnings.simplefilter("ignore")
            for name, module in maybe_with_values(sys.modules):
                if without_values(name, module):  # (torch's thousands of classes, numpy's...)
                    continue
                for obj in list(getattr(module, "__dict__", {}).values()):
                    if isinstance(obj, type) and may_be_value(obj):
                        self.instrument(obj)

    def value_class(self, cls: type) -> type | None:
        """The Value class whose `__init__` makes the instances of `cls` (it or a base)."""
        return next((k for k in cls.__mro__ if k in self.fields or (
            id(k) not in self._looked_at and self.shapes.fields(k) is not None)), None)

    def is_node(self, obj: object) -> bool:
        return self.value_class(type(obj)) is not None

    def adopt(self, node: object) -> None:
        """Record `node`, an instance made without its class's `__init__` (a copy of a
        node, for `mgtui.show`), as a node made now: its children must be adopted first."""
        cls = type(node)
        klass = self.value_class(cls)
        if klass is not None and klass not in self.classes:
            self.instrument(klass)
        fields = self.fields.get(klass) if klass is not None else None
        slots_hooks, dict_hooks = self.hooks
        probe = (slots_hooks if fields is not None and keeps_fields_in_slots(cls, fields)
                 else dict_hooks)
        probe.node_made(node)

    def unrecorded(self) -> str | None:
        """Why this run, which has ended, must not be shown as recorded (no node was
        recorded, or classes that look like autograd values were made but not recorded),
        naming the classes and the fields looked for; None if it may be."""
        return self.unseen.message(self.context.records.node_count())

    def restore(self) -> None:
        """Put back what watching the look-alike classes changed."""
        self.unseen.restore()
