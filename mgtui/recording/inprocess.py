"""Recording in the caller's own process, for the in-code API (`mgtui.api`): a block of
code, a function, or a copy of a graph that exists already.

The command line and the app record a scenario file in a child process
(`mgtui.run.runner`); these record where the user's objects live instead, with the same
`Recorder` hooks and the same interpreter sandbox (`mgtui.recording.sandbox`), installed for the
length of the recording and removed after it. They also leave the user's objects as
they found them: the recorder's node ids are taken off again, and `record_graph` works
on a copy. What a recording is for (the gradient doctor's probe, its re-runs) comes in
as the recorder's hooks (`mgtui.doctor`). Headless: no textual or rich.
"""

from __future__ import annotations

import copy
import functools
import linecache
import random
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mgtui.memory import collector_paused
from mgtui.recording.probes import SHAPES, BeforeBackward, OnCreate, StopRecording
from mgtui.recording.store import ID
from mgtui.recording.recorder import Recorder
from mgtui.recording.sandbox import Isolation, RecordingError, in_process_recording, sandboxed
from mgtui.recording.scenario import Scenario
from mgtui.recording.shapes import FieldMap, NotAGraph, ShapeFinder, looked_for
from mgtui.trace import Trace, TraceError

__all__ = ["BlockRecorder", "NotAGraph", "RecordingError", "names_in", "record_call",
           "record_graph"]

NO_LIMIT = sys.maxsize  # nodes: the user's own process, the user's own memory
NO_FILE = "<mgtui.show>"  # the "scenario" of a copied graph: no line of it is known
KEYS_VIEW = type({0: 0}.keys())


# -- the hooks on and off ----------------------------------------------------------------


def instrumented(rec: Recorder) -> Any:
    """The recorder's hooks on every Value-like class loaded, and on each one defined
    meanwhile, until the block ends (`mgtui.recording.sandbox`). One in-process recording at a
    time: another one started inside raises `RecordingError`."""
    return sandboxed(rec, Isolation(in_process=True))


def in_process_recorder(scenario: Scenario, fields: dict[str, str] | None = None,
                        **hooks: Any) -> Recorder:
    """A `Recorder` for the caller's own process: no node limit (its memory is the
    user's own), its output left alone, and only hooks on the classes (the user's live
    objects and classes are never rewritten). `fields`: the user's names for the fields
    (`mgtui.recording.shapes`), by default those of the `pyproject.toml` above the caller's file."""
    return Recorder(scenario, max_nodes=NO_LIMIT, capture_output=False, inline=False,
                    fields=fields, **hooks)


def refuse_unseen(rec: Recorder, error: TraceError | None) -> None:
    """Raise `NotAGraph` for a recording that ended without an error but recorded no
    node, or made nodes of classes that look like autograd values but were not recorded
    (`Recorder.unrecorded`): what the command line refuses with exit code 2."""
    if error is None:
        message = rec.unrecorded()
        if message is not None:
            raise NotAGraph(message)


def scenario_of(filename: str, title: str, notes: str = "") -> Scenario:
    """A `Scenario` for code that is not a scenario file: lines are looked up in
    `filename` (a module, a test, a notebook cell), and nothing is run from it."""
    source = "".join(linecache.getlines(filename)) if not filename.startswith("<") else ""
    return Scenario(Path(filename), source, nothing_to_run(filename), title, notes)


def nothing_to_run(filename: str) -> types.CodeType:
    """The code of an in-process recording's `Scenario`: empty, for it is never run (the
    recorder's helpers that read a scenario's code find nothing in it)."""
    return compile("", filename, "exec")


def classes_seen_by(fn: object) -> list[type]:
    """The classes a function can name (its closure's and the globals its code reads):
    a class defined inside a test or a function is in no module, where the recorder
    looks for Value classes (`Recorder.instrument_loaded`)."""
    code = getattr(fn, "__code__", None)
    found: list[object] = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:
            pass
    glob = getattr(fn, "__globals__", None)
    if code is not None and isinstance(glob, dict):
        found += [glob[n] for n in code.co_names if n in glob]
    return [c for c in found if isinstance(c, type)]


def names_in(frame: types.FrameType | None) -> dict[str, object]:
    """The variables a frame sees, its locals first, to label nodes by: `w` for a node
    held in `w`, and `xs[0]` for the first of a short list `xs`."""
    names: dict[str, object] = {}
    if frame is None:
        return names
    for scope in (frame.f_locals, frame.f_globals):
        for name, value in list(scope.items()):
            if not name.startswith("_"):
                names.setdefault(name, value)
    for name, value in list(names.items()):  # a plain name first, an item of a list after
        if isinstance(value, (list, tuple)) and len(value) <= 100:
            for k, item in enumerate(value):
                names.setdefault(f"{name}[{k}]", item)
    return names


class MadeNodes:
    """An `on_create` hook that keeps each node the recording numbers, so that its id
    (and the recorder's ordered `_prev`) can be taken off it afterwards. Given the code
    of a function, it also keeps that function's frame, as the first node is made: its
    variables name the nodes once it has returned."""

    def __init__(self, then: Callable[[int, Any], None] | None = None,
                 code: types.CodeType | None = None) -> None:
        self.nodes: list[Any] = []
        self.then = then
        self.code = code
        self.frame: types.FrameType | None = None

    def __call__(self, nid: int, d: Any) -> None:
        self.nodes.append(d)
        if self.code is not None:
            self._find_frame()
        if self.then is not None:
            self.then(nid, d)

    def _find_frame(self) -> None:
        f: types.FrameType | None = sys._getframe(2)
        while f is not None and f.f_code is not self.code:
            f = f.f_back
        self.frame, self.code = f, None  # looked for once

    def forget(self) -> None:
        for d in self.nodes:
            if ID in d:
                d.pop(ID, None)
            prev = d.get("_prev")
            if isinstance(prev, KEYS_VIEW):  # a set the recorder put in a fixed order
                d["_prev"] = set(prev)
        self.nodes.clear()


def error_of(rec: Recorder, exc: BaseException) -> TraceError:
    if isinstance(exc, StopRecording):
        return rec.trace_error(exc, "Stopped", f"recording stopped: {exc}")
    return rec.trace_error(exc, type(exc).__name__, str(exc))


def build(rec: Recorder, error: TraceError | None, names: dict[str, object],
          node_id: Callable[[object], int | None] | None = None) -> Trace:
    """The recording's trace, with nodes labelled from `names` where they have none (by
    their path from one of them, for a parameter; `node_id`: see `Recorder.finish`)."""
    rec.globals = names
    try:
        return rec.finish(error, "", node_id)
    finally:
        rec.slots_ids.release()


# -- a block: `with mgtui.record():` -------------------------------------------------------


class BlockRecorder:
    """Records the code between `start()` and `stop()`, run by the caller's `frame`,
    with `before_backward` (the doctor's probe) around each `_backward` call."""

    def __init__(self, frame: types.FrameType, *,
                 before_backward: BeforeBackward | None = None,
                 fields: dict[str, str] | None = None) -> None:
        self.frame: types.FrameType | None = frame
        filename, line = frame.f_code.co_filename, frame.f_lineno
        self.made = MadeNodes()
        title = f"mgtui.record() in {Path(filename).name}, line {line}"
        self.rec = in_process_recorder(scenario_of(filename, title), fields,
                                       on_create=self.made, before_backward=before_backward)
        self.unseen: str | None = None  # why the block must not be checked, once stopped
        self.callers: list = []  # where each `backward()` was called from (`Records.callers`)
        self.rec.context.adopt_strangers = True
        self._hooks: Any = None

    def start(self) -> None:
        self._hooks = instrumented(self.rec)
        self._hooks.__enter__()
        if self.frame is not None:
            for scope in (self.frame.f_locals, self.frame.f_globals):
                for value in list(scope.values()):
                    if isinstance(value, type):
                        self.rec.instrument(value)

    def stop(self, exc: BaseException | None) -> Trace:
        error = None if exc is None else error_of(self.rec, exc)
        self._hooks.__exit__(None, None, None)
        self.unseen = self.rec.unrecorded() if error is None else None
        self.callers = list(self.rec.records.callers)
        try:
            return build(self.rec, error, names_in(self.frame))
        finally:
            self.made.forget()
            self.frame = None


# -- a function: `mgtui.check(fn)` ---------------------------------------------------------


def record_call(fn: Callable[[], object], *, seed: int = 0,
                on_create: OnCreate | None = None,
                before_backward: BeforeBackward | None = None,
                fields: dict[str, str] | None = None, refuse: bool = False,
                callers: list | None = None,
                on_function: Callable[[object], None] | None = None) -> Trace:
    """Call `fn()` under the recorder, with `random` seeded (and its state put back
    after), and the caller's hooks: its trace. An exception from `fn` is the trace's
    error, as is a hook's `StopRecording` (a re-run that has what it needs). `fields`
    names the Value class's fields (`Recorder`); `refuse`: raise `NotAGraph` if the call
    recorded nothing (`refuse_unseen`). `callers` is given where each `backward()` was
    called from (`Records.callers`), for the doctor; `on_function` each custom torch
    Function's backward call (`Hooks.on_function`)."""
    code = getattr(fn, "__code__", None)
    filename = code.co_filename if code is not None else NO_FILE
    name = getattr(fn, "__qualname__", None) or repr(fn)
    made = MadeNodes(on_create, code)
    rec = in_process_recorder(scenario_of(filename, f"{name}()", inspect_doc(fn)), fields,
                              on_create=made, before_backward=before_backward,
                              on_function=on_function)
    state = random.getstate()
    error = None
    try:
        with instrumented(rec):
            for cls in classes_seen_by(fn):
                rec.instrument(cls)
            random.seed(seed)
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - the function's error is data
                error = error_of(rec, exc)
            except StopRecording as exc:  # a re-run that has what it needs
                error = error_of(rec, exc)
        if refuse:
            refuse_unseen(rec, error)
        if callers is not None:
            callers.extend(rec.records.callers)
        names = names_in(made.frame) if made.frame is not None else {}
        return build(rec, error, names)
    finally:
        random.setstate(state)
        made.forget()
        made.frame = None


def inspect_doc(fn: Callable) -> str:
    doc = getattr(fn, "__doc__", None)
    return doc.strip() if isinstance(doc, str) else ""


# -- a graph that exists: `mgtui.show(root)` -----------------------------------------------


def graph_of(root: object, shapes: ShapeFinder = SHAPES) -> list[object]:
    """The nodes behind `root`, each after its children (an iterative depth-first
    walk, as `backward()` builds its order, so a deep chain needs no recursion)."""
    order: list[object] = []
    seen: set[int] = set()
    stack: list[tuple[object, bool]] = [(root, False)]
    while stack:
        v, done = stack.pop()
        if done:
            order.append(v)
            continue
        if id(v) in seen:
            continue
        seen.add(id(v))
        stack.append((v, True))
        inputs = node_fields(v, shapes).inputs  # type: ignore[union-attr]
        stack.extend((c, False) for c in reversed(list(getattr(v, inputs, ()) or ()))
                     if is_node(c, shapes))
    return order


def node_fields(obj: object, shapes: ShapeFinder = SHAPES) -> FieldMap | None:
    """The fields of a micrograd-style node (its class's `__init__`, or one it inherits,
    stores them, `mgtui.recording.shapes`; also while the recorder's hooks wrap that `__init__`),
    None for anything else."""
    cls = type(obj)
    key = (cls, shapes)
    try:
        return _NODE_CLASSES[key]
    except KeyError:
        pass
    found = next((f for f in map(shapes.fields, cls.__mro__) if f is not None), None)
    if len(_NODE_CLASSES) > 1024:
        _NODE_CLASSES.clear()
    _NODE_CLASSES[key] = found
    return found


def is_node(obj: object, shapes: ShapeFinder = SHAPES) -> bool:
    return node_fields(obj, shapes) is not None


_NODE_CLASSES: dict[tuple[type, ShapeFinder], FieldMap | None] = {}


@dataclass
class GraphCopy:
    """Fresh instances of a graph's nodes, with their `_prev` and their `_backward`
    closures pointing at each other instead of at the user's objects."""

    originals: list[object]
    shapes: ShapeFinder = SHAPES  # (its nodes' fields)
    copies: dict[int, object] = field(default_factory=dict)  # id(original) -> copy
    named: list[object] = field(default_factory=list)  # global nodes a closure names
    _functions: dict[int, object] = field(default_factory=dict)
    _codes_seen: set = field(default_factory=set)

    def __post_init__(self) -> None:
        for v in self.originals:
            self.copies[id(v)] = shallow_copy(v)
        for v in self.originals:
            c = self.copies[id(v)]
            d = getattr(c, "__dict__", None)
            if isinstance(d, dict):
                d.pop(ID, None)  # a node from a `mgtui.record()` block is not yet numbered
            f = node_fields(v, self.shapes)
            assert f is not None
            prev = getattr(v, f.inputs, ()) or ()
            kids = [self.copies.get(id(p), p) for p in prev]
            kind = type(prev)
            setattr(c, f.inputs, set(kids) if kind is set else frozenset(kids)
                    if kind is frozenset else kids if kind is list else tuple(kids))
            setattr(c, f.grad, 0)
            setattr(c, f.backward, self.remap(getattr(v, f.backward)))

    def of(self, original: object) -> object:
        return self.copies[id(original)]

    def remap(self, obj: Any) -> Any:
        """`obj` with every node of the graph in it replaced by its copy: a closure is
        made anew over new cells; a node outside the graph becomes a lone copy, so
        nothing the replay does can reach the user's objects."""
        found = self.copies.get(id(obj))
        if found is not None:
            return found
        if isinstance(obj, types.FunctionType):
            return self._function(obj)
        if isinstance(obj, types.MethodType):
            return types.MethodType(self.remap(obj.__func__), self.remap(obj.__self__))
        if isinstance(obj, functools.partial):
            return functools.partial(self.remap(obj.func), *map(self.remap, obj.args),
                                     **{k: self.remap(v) for k, v in obj.keywords.items()})
        if type(obj) in (list, tuple):
            return type(obj)(self.remap(x) for x in obj)
        if type(obj) is dict:
            return {k: self.remap(v) for k, v in obj.items()}
        if is_node(obj, self.shapes):  # captured, but not in the graph: copied alone
            self.copies[id(obj)] = lone = copy.copy(obj)
            return lone
        return obj

    def _function(self, fn: types.FunctionType) -> types.FunctionType:
        code = fn.__code__
        if code not in self._codes_seen:  # a global node cannot be copied: it is put back
            self._codes_seen.add(code)
            glob = fn.__globals__
            self.named.extend(glob[n] for n in code.co_names
                              if is_node(glob.get(n), self.shapes))
        if not fn.__closure__:
            return fn
        done = self._functions.get(id(fn))
        if done is not None:
            return done  # type: ignore[return-value]
        cells = tuple(types.CellType() for _ in fn.__closure__)
        new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                 cells)
        new.__kwdefaults__ = fn.__kwdefaults__
        new.__qualname__ = fn.__qualname__
        new.__dict__.update(fn.__dict__)
        self._functions[id(fn)] = new  # before the cells: a closure may hold itself
        for old, cell in zip(fn.__closure__, cells):
            try:
                cell.cell_contents = self.remap(old.cell_contents)
            except ValueError:  # an empty cell stays empty
                pass
        return new


def shallow_copy(v: object) -> object:
    """`copy.copy(v)`, with a quick way for the usual node: a plain class whose fields
    are all in its instance dict."""
    cls = type(v)
    plain = _PLAIN_CLASSES.get(cls)
    if plain is None:
        plain = _PLAIN_CLASSES[cls] = plain_class(cls)
    if plain:
        new = object.__new__(cls)
        new.__dict__.update(v.__dict__)
        return new
    return copy.copy(v)


_PLAIN_CLASSES: dict[type, bool] = {}


def plain_class(cls: type) -> bool:
    """Does `copy.copy` of an instance of `cls` just copy its instance dict?"""
    return (cls.__new__ is object.__new__ and bool(cls.__dictoffset__)
            and not any("__slots__" in k.__dict__ for k in cls.__mro__)
            and cls.__reduce_ex__ is object.__reduce_ex__ and cls.__reduce__ is object.__reduce__
            and not hasattr(cls, "__copy__")
            and getattr(cls, "__getstate__", None) is getattr(object, "__getstate__", None))


def saved_state(nodes: list[object], shapes: ShapeFinder = SHAPES
                ) -> list[tuple[object, str, object, str, object]]:
    saved = []
    for v in nodes:
        f = node_fields(v, shapes) or FieldMap()
        saved.append((v, f.data, getattr(v, f.data, None), f.grad, getattr(v, f.grad, None)))
    return saved


def put_back(saved: list[tuple[object, str, object, str, object]]) -> None:
    """Every data and grad as it was (a closure may name a global node of the user's)."""
    for v, data_name, data, grad_name, grad in saved:
        if getattr(v, data_name, None) is not data:
            setattr(v, data_name, data)
        if getattr(v, grad_name, None) is not grad:
            setattr(v, grad_name, grad)


def record_graph(root: object, names: dict[str, object], title: str, notes: str,
                 fields: dict[str, str] | None = None) -> Trace:
    """The trace of the graph behind `root`: each node made, children first, then its
    backward pass (`root.backward()`, or micrograd's loop where there is none), replayed
    on a copy from zero grads. The user's nodes are left exactly as they were. `fields`
    names the fields of `root`'s class where they cannot be told (`mgtui.recording.shapes`)."""
    if in_process_recording():
        raise RecordingError("mgtui.show inside a mgtui.record() block (or a check): show "
                             "after the block, one at a time")
    shapes = ShapeFinder(fields) if fields else SHAPES
    if not is_node(root, shapes):
        raise NotAGraph(not_a_node(root, shapes))
    with collector_paused():  # many new objects, and no garbage until the copy is dropped
        return _record_graph(root, names, title, notes, shapes)


def not_a_node(obj: object, shapes: ShapeFinder) -> str:
    """Why `mgtui.show` refuses `obj`: the class, why it is not a Value class if it
    looks like one, and the fields looked for."""
    cls = type(obj)
    if any(c.__module__.split(".")[0] == "torch" for c in cls.__mro__):
        return (f"mgtui.show does not take a PyTorch {cls.__qualname__}: a torch graph is "
                f"recorded as it is made and its backward() runs, not found afterwards. "
                f"Record the code that makes it: `with mgtui.record() as r:` around it, then "
                f"`r.show()`; or run the script with `mgtui script.py`")
    why = next((w for w in map(shapes.why_not, cls.__mro__) if w), None)
    how = f" ({why})" if why else ""
    return (f"mgtui.show needs a micrograd-style Value, not {cls.__qualname__}{how}: mgtui "
            f"looks for a class whose __init__ stores a number, a gradient, its inputs and "
            f"a backward callable, by these names: {looked_for()} (an op field is "
            f"optional); name the fields with mgtui.show(..., fields={{...}}) or in the "
            f"pyproject.toml above your code ([tool.mgtui] fields)")


def _record_graph(root: object, names: dict[str, object], title: str, notes: str,
                  shapes: ShapeFinder) -> Trace:
    originals = graph_of(root, shapes)
    saved = saved_state(originals, shapes)
    graph = GraphCopy(originals, shapes)
    saved += saved_state(graph.named, shapes)
    rec = in_process_recorder(Scenario(Path(NO_FILE), "", nothing_to_run(NO_FILE), title,
                                       notes), shapes.given)
    error = None
    try:
        with instrumented(rec):
            for v in originals:
                rec.value_classes.adopt(graph.of(v))
            try:
                run_backward(graph.of(root), shapes)
            except Exception as exc:  # noqa: BLE001 - the user's backward's error is data
                error = error_of(rec, exc)
        # the caller's names reach the user's own nodes: each is named as its copy
        numbered = {id(v): rec.node_id(graph.of(v)) for v in originals}
        return build(rec, error, names, lambda obj: numbered.get(id(obj)))
    finally:
        put_back(saved)


def run_backward(root: Any, shapes: ShapeFinder = SHAPES) -> None:
    backward = getattr(root, "backward", None)
    if callable(backward):
        backward()
        return
    topo: list[Any] = graph_of(root, shapes)  # the lecture's loop, for a class with no backward()
    f = node_fields(root, shapes) or FieldMap()
    setattr(root, f.grad, 1.0)
    for v in reversed(topo):
        fn = getattr(v, f.backward, None)
        if callable(fn):
            fn()
