"""The probe protocol: what every way of seeing a scenario's nodes does, and the parts
of it they share.

A probe (coverage.py's tracer, for nodes) makes three records, each into the
recording's one `Records`: a node was made, a `_backward` call began and ended, a
field was written. The mechanisms are:

- `mgtui.recording.dict_hooks.DictHooks`: descriptors on a class's fields and a wrapped
  `__init__`, for a class whose nodes keep their fields in an instance dict;
- `mgtui.recording.slots_hooks.SlotsHooks`: the same for a class with `__slots__`;
- `mgtui.recording.inline.probe.Inliner`: the recording rewritten into the class's own code
  (`mgtui.recording.inline.rewrite`), with no hooks at all, where its source can be rewritten.

The in-process API (`mgtui.recording.inprocess`) records with the hooks, and `mgtui.show`'s copy of
a graph is adopted node by node through `Probe.node_made`. The `Recorder` keeps the
lifecycle (start, stop, limits, finish) and hands each Value class, with its fields
(`mgtui.recording.shapes.FieldMap`: which attribute holds the data, the grad, ...), to the first
probe that takes it. Whatever a class calls its fields, the hooks given to a caller see
a node through a view keyed by micrograd's own names (`node_view`).

Each probe's hot path (a descriptor's `__set__`, a wrapped `__init__`, the rewritten
code's helpers) is a closure over local names, or a function over globals, that makes
the same appends as the methods below: those copies are kept on purpose (a call saved
per record is a few per cent of a recording), and each names the method it copies.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import types
from typing import Callable, NamedTuple, Protocol

from mgtui.recording.store import DATA, GRAD, ID, Records
from mgtui.recording.shapes import MICROGRAD, FieldMap, ShapeFinder
from mgtui.trace import Field

REQUIRED = frozenset({"data", "grad", "_prev", "_op", "_backward"})  # micrograd's names
HOOKED = MICROGRAD.hooked  # the fields a hook probe observes, by micrograd's names
WRITTEN = {"grad": (Field.GRAD.code, GRAD), "data": (Field.DATA.code, DATA)}  # field, kind
CLASS_CODE, OTHER_CODE = "class", False  # (`LineFinder.code_kind`)


# the code of an expression of the code around it: what it makes, that code binds
COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})
# packages whose modules define no micrograd-style class, nor import one by name
_WITHOUT_VALUES = frozenset({"mgtui", "numpy", "torch"})
_STDLIB = tuple(sorted({os.path.join(sysconfig.get_paths()[key], "")
                        for key in ("stdlib", "platstdlib")}))


def without_values(name: str, module: object) -> bool:
    """Is `module` (named `name` in `sys.modules`) one whose names need not be scanned
    for Value classes: mgtui's, numpy's or torch's, or Python's own (built in, or read
    from the standard library's directory: a scenario's own `random.py` is scanned)?
    With numpy loaded, these are some 13,000 names of the 14,000 (the recorder's
    `instrument_loaded` and the inliner's `consider_modules` each read them all).
    A module found so is remembered (by name, as that very module: a scenario's own
    `random.py` later under the same name is another module, looked at afresh): the
    second scan of a run, and the imports during it, find it at once."""
    if _WITHOUT.get(name) is module:
        return True
    if _without_values(name, module):
        _WITHOUT[name] = module  # (Python's and the libraries': no scenario's data held)
        return True
    return False


_WITHOUT: dict[str, object] = {}  # name -> the module without values found under it


def maybe_with_values(modules: dict) -> list[tuple[str, object]]:
    """The (name, module) pairs of `modules` (`sys.modules`) not found without values
    before: most of them are, told here by a dict lookup each, with no call (a run scans
    the 300 modules numpy brings twice, and `without_values` is asked about the rest)."""
    found = _WITHOUT.get
    return [(name, module) for name, module in list(modules.items()) if found(name) is not module]


def _without_values(name: str, module: object) -> bool:
    top = name.partition(".")[0]
    if top in _WITHOUT_VALUES:
        return True
    if top not in sys.stdlib_module_names:
        return False
    filename = getattr(module, "__file__", None)
    return filename is None or (isinstance(filename, str) and filename.startswith(_STDLIB))


class FunctionSpots(dict):
    """The kind of a scenario's function's code (`LineFinder.code_kind`): its assignments'
    spots, as a module's own code has them (a plain dict), but a node made there may be
    bound by its caller too (`mgtui.recording.naming.Namer.made` looks)."""


OnCreate = Callable[[int, dict], None]
BeforeBackward = Callable[[dict, Callable[[], object]], None]
OnBackward = Callable[[object, Callable[[], object]], None]  # with a `skip` set


class StopRecording(BaseException):
    """Raised inside the scenario to end the run: a limit was hit or the user cancelled.

    A BaseException, so a scenario's own `except Exception` does not swallow it.
    """


class Hooks(NamedTuple):
    """What a caller (the gradient doctor, the runner's child) runs inside a recording,
    without the recorder knowing what for:

    - `on_create(nid, node_dict)` runs as each node gets its id, before its `data` is
      recorded: a change to `node_dict["data"]` is recorded as the node's value.
    - `before_backward(node_dict, fn)` runs just before each recorded `_backward` call,
      with the node's dict and the closure about to run. Whatever it records (it may
      call `fn`) is taken back (`Records.replay`), and raising `StopRecording` from it
      ends the run there.
    - `on_backward(op, fn)` only watches: it runs just before each recorded `_backward`
      call, with the node's `_op` and the closure about to run, unless `op` is in
      `on_backward.skip` (a set the hook may add to). It must not call `fn` nor change
      any node, so nothing is taken back after it (the runner's child reads custom
      ops' values this way, `mgtui.recording.call_values`). The call's event index is
      `records.event_count()`.
    - `on_progress(nodes)` now and then, as nodes are made.
    - `on_function(call)` only watches: the torch engine's probe gives it each custom
      `torch.autograd.Function`'s backward call as it is recorded
      (`mgtui.recording.torch_backward.FunctionCall`: the doctor checks those,
      `mgtui.doctor.torch_functions`).
    """

    on_create: OnCreate | None = None
    before_backward: BeforeBackward | None = None
    on_backward: OnBackward | None = None
    on_progress: Callable[[int], None] | None = None
    on_function: Callable[[object], None] | None = None


class Probe(Protocol):
    """One mechanism that sees what a scenario does to the nodes of the classes it
    attaches to, and writes it into `records`: the three below for micrograd-style
    classes (`ClassProbe`), and the torch engine's (`mgtui.recording.torch_watch`),
    which attaches to torch's `Tensor`."""

    records: Records

    def attach(self, cls: type, fields: FieldMap = MICROGRAD) -> bool:
        """Record the nodes of `cls`, whose fields are `fields`, from now on: False if
        this probe cannot."""

    def detach(self) -> None:
        """Put back every class and function it changed."""


class ClassProbe(Probe, Protocol):
    """A probe of micrograd-style classes (the scalar and array engines'): it is told of
    each node, `_backward` call and field write."""

    def node_made(self, node: object) -> None:
        """Number and record `node`, whose `__init__` has run (or that was made without
        it: a copy of a node, for `mgtui.show`)."""

    def backward_called(self, node: object, fn: Callable[[], object],
                        frame: types.FrameType) -> object:
        """Record the call of `fn`, `node`'s `_backward`, made from `frame`, and make it:
        the call began, its writes, the call ended."""

    def field_written(self, node: object, name: str, before: object, value: object,
                      frame: types.FrameType) -> None:
        """Record that `frame` wrote `value` over `before` into `node`'s `grad`, `data` or
        `label`."""


SHAPES = ShapeFinder()  # the detector with no mapping of the user's (`mgtui.recording.shapes`)


def looks_like_value(cls: type) -> bool:
    """True for a micrograd-style class: its own `__init__` stores a number, a grad, its
    inputs and a backward callable (`mgtui.recording.shapes.ShapeFinder`, by any of the names
    those go by)."""
    return SHAPES.fields(cls) is not None


# -- nodes as the hooks see them -----------------------------------------------------------------

# How a node of an instrumented class whose fields are not micrograd's names, or are kept in
# slots, is seen as a node dict: its class (or a base) -> the view it is read through.
# Set by the hook probes as they attach and detach (recordings take turns, as the hooks
# are class-wide); a class not here is read through its instance dict.
VIEWS: dict[type, Callable[[object], object]] = {}
_VIEW_OF: dict[type, Callable[[object], object] | None] = {}  # (by the node's own class)


def set_view(cls: type, view: Callable[[object], object] | None) -> None:
    """Read the nodes of `cls` (and of its subclasses) through `view` (None: no more)."""
    if view is None:
        VIEWS.pop(cls, None)
    else:
        VIEWS[cls] = view
    _VIEW_OF.clear()


def node_view(obj: object):
    """A node as the recorder's hooks see it, keyed by micrograd's names: its instance
    dict, or the view its class is read through (`set_view`); None for anything else."""
    cls = type(obj)
    try:
        view = _VIEW_OF[cls]
    except KeyError:
        view = _VIEW_OF[cls] = next((VIEWS[k] for k in cls.__mro__ if k in VIEWS), None)
    if view is not None:
        return view(obj)
    d = getattr(obj, "__dict__", None)
    return d if isinstance(d, dict) else None


def record_write(records: Records, scenario_line, nid: int, name: str, before: object,
                 value: object, frame: types.FrameType) -> None:
    """`Probe.field_written` once the node's id is known: a write inside a `_backward`
    call is one of that call's writes, any other write is an event of its own, and a
    label is a late label."""
    if name == "label":
        records.late_labels[nid] = value
        return
    field, kind = WRITTEN[name]
    if type(value) is not float:  # an array, an int... (`mgtui.recording.array_values`)
        before, value = records.arrays.write(nid, field, before, value)
    if records.stack:
        records.add_write((nid, field, before, value, frame.f_lineno))
    else:
        records.add_event((kind, nid, before, value, scenario_line(frame), -1,
                           len(records.writes)))


def ordered(prev, args: tuple, kwargs: dict, node_id: Callable[[object], int] | None = None,
            keyword: str = "_children"):
    """A set of children as a set-like keys view in a fixed order.

    A set iterates in address order, which changes from run to run; keep the order the
    children were passed to `__init__` (its second argument, or `keyword`), else sort
    them by node id (`node_id(child)`). (The recorder leaves a set of one child as it
    is: it has one order.)"""
    given = args[1] if len(args) > 1 else kwargs.get(keyword, ())
    try:
        keys = dict.fromkeys(given).keys()
        if keys == prev:  # the common case: the children given are the set
            return keys
        order = [c for c in keys if c in prev]
    except TypeError:
        order = []
    if len(order) != len(prev):
        order = sorted(prev, key=node_id or (lambda c: getattr(c, ID, -1)))
    return dict.fromkeys(order).keys()


# -- where a record was made -------------------------------------------------------------------


class LineFinder:
    """Which scenario line a record belongs to, shared by every probe of a recording.

    `scenario_line(frame)`: the innermost scenario line on the stack from `frame`,
    outside the Value classes' methods (0 if there is none). The frames below it on the
    last walk are remembered in `memo` (a frame held there cannot be mistaken for
    another), so the many nodes made inside one library call, like `model(x)`, each walk
    only up to the first frame they share; a walked frame that the scenario's own code
    called (a helper: `ops.sigmoid(z)`) is also kept in `direct`, where the namer looks.
    Both hold the library frames of the stack as the last walk that met a new one found
    it, and no others: a frame that has returned is let go at the next such walk (a
    `backward()`'s frame holds its whole graph, and a training loop makes one each step).
    The Value classes' own frames are never held: an op's is gone by the next record,
    and a `backward()`'s is one step from the frame that called it.
    `fresh_line(frame)` finds the same line without remembering the walk (for frames
    new at each call: the torch adapter's). `code_kind(code)` says what a code object is
    to the recording (`CLASS_CODE`, the scenario's assignments, or `OTHER_CODE`)."""

    def __init__(self, scenario_path: str, class_codes: dict[int, object], spots: dict,
                 direct: dict | None = None) -> None:
        self.scenario_path = scenario_path
        self.class_codes = class_codes  # code of the Value classes' methods, by id
        self.spots = spots  # the scenario's assignments, by code id (`Namer.spots`)
        # What the code a node is made from is, by its id (`code_kind`): CLASS_CODE, the
        # assignments of a scenario code (a dict, maybe empty), or OTHER_CODE.
        self.code_kinds: dict[int, object] = {}
        self._kind_codes: list = []  # (keeps the ids above theirs)
        self.last_frames: list[list] = []  # the inlined recording's caches of a frame
        self.memo: dict = {}  # the frames of the last walk, innermost first -> its line
        # A scenario code's line at an instruction, by `lasti << 64 | id(code)` (an id
        # fits in 64 bits; the codes are kept alive in `_kind_codes`): `frame.f_lineno`
        # decodes the code's line table from its start, thousands of instructions in a
        # long scenario, for each node made
        self.line_at: dict[int, int] = {}
        self.direct: dict = {} if direct is None else direct  # those the scenario's code
        #                                                          called -> True
        self.scenario_line, self.fresh_line = self._line_finder()

    def _line_finder(self) -> tuple[Callable[[types.FrameType], int],
                                    Callable[[types.FrameType], int]]:
        path, class_codes, memo, direct = self.scenario_path, self.class_codes, self.memo, self.direct
        line_at, kinds = self.line_at, self._kind_codes

        def line_in(f, code) -> int:
            """The line of `f`, a frame of the scenario's `code`, by its instruction."""
            key = f.f_lasti << 64 | id(code)
            line = line_at.get(key)
            if line is None:
                kinds.append(code)  # (kept alive: its id is in the key)
                line = line_at[key] = f.f_lineno
            return line

        def scenario_line(f) -> int:
            code = f.f_code
            if code.co_filename == path:  # made by the scenario's own line: the common case
                ident = id(code)
                if ident not in class_codes:  # (`line_in`, inline)
                    line = line_at.get(f.f_lasti << 64 | ident)
                    return line_in(f, code) if line is None else line
            walked = []
            while f is not None:
                line = memo.get(f)
                if line is not None:  # on the last walk's stack: the frames from it
                    if walked:  # out are still there (all with its line), none below
                        kept = list(memo)
                        kept = kept[kept.index(f):]
                        memo.clear()
                        memo.update(dict.fromkeys(walked, line))
                        memo.update(dict.fromkeys(kept, line))
                        if not (direct and kept[-1] in direct):
                            direct.clear()
                    return line
                code = f.f_code
                if id(code) in class_codes:  # a Value method's frame (an op's is gone by
                    f = f.f_back  # the next record): walked past, never remembered
                    continue
                if code.co_filename == path:  # (a `backward()` called from the
                    line = line_in(f, code)  # scenario walks here at each call)
                    break
                walked.append(f)
                f = f.f_back
            else:
                line = 0  # no scenario frame on the stack (remembered too: a graph copied
                #           for `mgtui.show` has no scenario lines, node after node)
            if walked:
                memo.clear()
                direct.clear()
                memo.update(dict.fromkeys(walked, line))
                if f is not None:  # the last frame walked: the scenario's code called it
                    direct[walked[-1]] = True
            return line

        def fresh_line(f) -> int:
            """`scenario_line`, walked without remembering the walk: for frames that are
            new at nearly every call (a torch op made inside a module's `forward`, under
            its `__call__`: the frames differ from op to op), where keeping the walk
            costs more than it saves (~5K instructions a node, issue 32)."""
            while f is not None:
                code = f.f_code
                if code.co_filename == path:
                    ident = id(code)
                    if ident not in class_codes:
                        line = line_at.get(f.f_lasti << 64 | ident)
                        return line_in(f, code) if line is None else line
                f = f.f_back
            return 0

        return scenario_line, fresh_line

    def code_kind(self, code) -> object:
        """What `code` is, worked out once (`code_kinds`): CLASS_CODE for a method of a
        Value class; for the scenario's own code, its assignments' spots (a dict by
        instruction offset, `mgtui.recording.naming`; empty if it has none; a `FunctionSpots` for
        a function's code); else OTHER_CODE."""
        cid = id(code)
        kind = self.code_kinds.get(cid)
        if kind is None:
            if cid in self.class_codes:
                kind = CLASS_CODE
            elif code.co_filename == self.scenario_path:
                kind = self.spots.get(cid) or {}
                if code.co_name != "<module>" and code.co_name not in COMPREHENSIONS:
                    kind = FunctionSpots(kind)
            else:
                kind = OTHER_CODE
            self.code_kinds[cid] = kind
            self._kind_codes.append(code)
        return kind

    def class_came_in(self, cls: type) -> None:
        """A Value class is recorded from now on: its methods' code is class code, and
        what was worked out before may be wrong now."""
        for klass in cls.__mro__:
            self.class_codes.update(
                (id(f.__code__), f.__code__) for f in vars(klass).values()
                if hasattr(f, "__code__"))
        self.code_kinds.clear()
        for last in self.last_frames:
            last[:] = [None] * len(last)


MISSING = object()  # a class attribute that was not there before a probe put one on


def put_back(restore: list[tuple[type, str, object]]) -> None:
    """Undo a probe's class attributes, last first: each `(cls, name, old)` gets `old`
    back, or loses the attribute where `old` is MISSING; `restore` is emptied."""
    for cls, name, old in reversed(restore):
        if old is MISSING:
            try:
                delattr(cls, name)
            except AttributeError:
                pass
        else:
            setattr(cls, name, old)
    restore.clear()
