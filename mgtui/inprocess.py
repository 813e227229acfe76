"""Recording in the caller's own process, for the in-code API (`mgtui.api`): a block of
code, a function, or a copy of a graph that exists already.

The command line and the app record a scenario file in a child process
(`mgtui.runner`); these record where the user's objects live instead, with the same
`Recorder` hooks, installed for the length of the recording and removed after it. They
also leave the user's objects as they found them: the recorder's node ids are taken off
again, and `record_graph` works on a copy. Headless: no textual or rich.
"""

from __future__ import annotations

import builtins
import copy
import functools
import gc
import linecache
import random
import sys
import time
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, cast

from mgtui.recorder import (
    _ONE_AT_A_TIME,
    GC_GEN0_THRESHOLD,
    ID,
    Recorder,
    Scenario,
    StopRecording,
    REQUIRED,
    looks_like_value,
)
from mgtui.trace import Trace, TraceError

NO_LIMIT = sys.maxsize  # nodes: the user's own process, the user's own memory
NO_FILE = "<mgtui.show>"  # the "scenario" of a copied graph: no line of it is known
KEYS_VIEW = type({0: 0}.keys())


# -- the hooks on and off ----------------------------------------------------------------

_recording: list[Recorder] = []  # the in-process recording under way (one at a time)


class RecordingError(RuntimeError):
    """A recording started while another one was under way in this process."""



@contextmanager
def instrumented(rec: Recorder) -> Iterator[None]:
    """The recorder's hooks on every Value-like class loaded, and on each one defined
    meanwhile, until the block ends. Recordings take turns: the hooks are class-wide, so
    one cannot start inside another in the same thread."""
    with _ONE_AT_A_TIME:
        if _recording:
            raise RecordingError("mgtui is recording here already (a mgtui.record() block, "
                                 "or mgtui.check or mgtui.show running): record one at a "
                                 "time, e.g. show or check after the block")
        _recording.append(rec)
        build_class = builtins.__build_class__
        gc_threshold = gc.get_threshold()

        def build_and_instrument(*args: Any, **kwargs: Any) -> Any:
            cls = build_class(*args, **kwargs)
            if looks_like_value(cls):
                rec.instrument(cls)
            return cls

        try:
            rec.instrument_loaded()
            builtins.__build_class__ = build_and_instrument
            # as for a scenario (`Recorder._scenario_interpreter`): every node is in a
            # cycle with its closure, and a big graph makes the collector rescan the heap
            gc.set_threshold(max(gc_threshold[0], GC_GEN0_THRESHOLD), *gc_threshold[1:])
            yield
        finally:
            gc.set_threshold(*gc_threshold)
            builtins.__build_class__ = build_class
            rec.uninstrument()
            _recording.clear()


def in_process_recorder(scenario: Scenario, **hooks: Any) -> Recorder:
    """A `Recorder` for the caller's own process: no node limit (its memory is the
    user's own), its output left alone, and only hooks on the classes (the user's live
    objects and classes are never rewritten)."""
    return Recorder(scenario, max_nodes=NO_LIMIT, capture_output=False, inline=False, **hooks)


def scenario_of(filename: str, title: str, notes: str = "") -> Scenario:
    """A `Scenario` for code that is not a scenario file: lines are looked up in
    `filename` (a module, a test, a notebook cell), and nothing is run from it."""
    source = "".join(linecache.getlines(filename)) if not filename.startswith("<") else ""
    return Scenario(Path(filename), source, nothing_to_run(filename), title, notes)


def nothing_to_run(filename: str) -> types.CodeType:
    """The code of an in-process recording's `Scenario`: empty, for it is never run (the
    recorder's helpers that read a scenario's code find nothing in it)."""
    return compile("", filename, "exec")


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
            d.pop(ID, None)
            prev = d.get("_prev")
            if isinstance(prev, KEYS_VIEW):  # a set the recorder put in a fixed order
                d["_prev"] = set(prev)
        self.nodes.clear()


def error_of(rec: Recorder, exc: BaseException) -> TraceError:
    if isinstance(exc, StopRecording):
        return rec._error(exc, "Stopped", f"recording stopped: {exc}")
    return rec._error(exc, type(exc).__name__, str(exc))


def build(rec: Recorder, error: TraceError | None, names: dict[str, object]) -> Trace:
    """The recording's trace, with nodes labelled from `names` where they have none."""
    rec.globals = names
    try:
        return rec.finish(error, "")
    finally:
        rec.slots_ids.release()


# -- a block: `with mgtui.record():` -------------------------------------------------------


class BlockRecorder:
    """Records the code between `start()` and `stop()`, run by the caller's `frame`.

    `probe` runs the doctor's `=`-for-`+=` probe around each `_backward` call (it
    replays the closure twice and puts back every grad and data it touched)."""

    def __init__(self, frame: types.FrameType, *, probe: bool = True) -> None:
        from mgtui.doctor.probe import OverwriteProbe

        self.frame: types.FrameType | None = frame
        filename, line = frame.f_code.co_filename, frame.f_lineno
        self.probe = OverwriteProbe() if probe else None
        self.made = MadeNodes()
        title = f"mgtui.record() in {Path(filename).name}, line {line}"
        self.rec = in_process_recorder(scenario_of(filename, title), on_create=self.made,
                                       before_backward=self.probe)
        self.rec.adopt_strangers = True
        self._hooks: Any = None

    def start(self) -> None:
        self._hooks = instrumented(self.rec)
        self._hooks.__enter__()

    def stop(self, exc: BaseException | None) -> Trace:
        error = None if exc is None else error_of(self.rec, exc)
        self._hooks.__exit__(None, None, None)
        try:
            return build(self.rec, error, names_in(self.frame))
        finally:
            self.made.forget()
            self.frame = None

    @property
    def hits(self) -> list:
        return list(self.probe.hits) if self.probe is not None else []


# -- a function: `mgtui.check(fn)` ---------------------------------------------------------


def record_call(fn: Callable[[], object], *, seed: int = 0, probe: bool = False,
                on_create: Callable[[int, Any], None] | None = None,
                before_backward: Callable | None = None) -> tuple[Trace, list]:
    """Call `fn()` under the recorder, with `random` seeded (and its state put back
    after): its trace, and the `=`-for-`+=` probe's hits if `probe`. An exception from
    `fn` is the trace's error."""
    from mgtui.doctor.probe import OverwriteProbe

    code = getattr(fn, "__code__", None)
    filename = code.co_filename if code is not None else NO_FILE
    name = getattr(fn, "__qualname__", None) or repr(fn)
    probe_hook = OverwriteProbe() if probe else None
    made = MadeNodes(on_create, code)
    rec = in_process_recorder(scenario_of(filename, f"{name}()", inspect_doc(fn)),
                              on_create=made, before_backward=probe_hook or before_backward)
    state = random.getstate()
    error = None
    try:
        with instrumented(rec):
            random.seed(seed)
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - the function's error is data
                error = error_of(rec, exc)
            except StopRecording as exc:  # a re-run that has what it needs
                error = error_of(rec, exc)
        names = names_in(made.frame) if made.frame is not None else {}
        return build(rec, error, names), list(probe_hook.hits) if probe_hook else []
    finally:
        random.setstate(state)
        made.forget()
        made.frame = None


def inspect_doc(fn: Callable) -> str:
    doc = getattr(fn, "__doc__", None)
    return doc.strip() if isinstance(doc, str) else ""


@dataclass
class CallReruns:
    """The doctor's re-runs (`mgtui.doctor.reruns.Reruns`) of a function, in-process,
    with the same hooks a re-run's child process makes (`mgtui.doctor.jobs.rerun`)."""

    fn: Callable[[], object]
    seed: int
    count: int = 0

    def __call__(self, nudge: dict[int, float], stop_after: int,
                 on_progress: Callable[[int], None] | None = None) -> Trace:
        return self.pair((nudge,), stop_after, (on_progress,))[0]

    def pair(self, nudges: tuple[dict[int, float], ...], stop_after: int,
             on_progress: tuple[Callable[[int], None] | None, ...] = (),
             restore: dict[int, list[int]] | None = None) -> list[Trace]:
        return self.wait(self.start(nudges, stop_after, on_progress, restore))

    @staticmethod
    def wait(runs: list) -> list[Trace]:
        return list(runs)  # run as they were started: they are traces already

    @staticmethod
    def wait_quietly(runs: list) -> None:
        pass

    def start(self, nudges: tuple[dict[int, float], ...], stop_after: int,
              on_progress: tuple[Callable[[int], None] | None, ...] = (),
              restore: dict[int, list[int]] | None = None) -> list[Trace]:
        """One re-run per nudge, one after the other, at once (`Reruns.start`: the
        process's own function cannot run in a child)."""
        from mgtui.doctor import jobs

        traces = []
        for nudge in nudges:
            self.count += 1
            job_args: dict[str, Any] = {"nudge": {str(k): v for k, v in nudge.items()},
                                        "stop_after": stop_after}
            if restore:
                job_args["restore"] = {str(k): v for k, v in restore.items()}
            hooks, _ = jobs.rerun(**job_args)
            trace, _ = record_call(self.fn, seed=self.seed, on_create=hooks.get("on_create"),
                                   before_backward=hooks.get("before_backward"))
            traces.append(trace)
        return traces


def diagnose_call(fn: Callable[[], object], *, seed: int = 0, sample: int | None = None,
                  passes: Any = None, budget: float | None = None):
    """The doctor on a function that builds a graph and runs backward: every check of
    `mgtui.doctor.diagnose` (its `passes`, `sample` and `budget` too), each run a call of
    `fn` in this process."""
    from mgtui.doctor import Report
    from mgtui.doctor.context import CheckContext, collector_paused
    from mgtui.doctor.findings import one_per_line
    from mgtui.doctor.numerical import BUDGET, NumericalCheck
    from mgtui.doctor.probe import Overwrite
    from mgtui.doctor.reruns import Reruns
    from mgtui.doctor.trace_checks import TRACE_CHECKS

    started = time.perf_counter()
    trace, hits = record_call(fn, seed=seed, probe=True)
    ctx = CheckContext(trace, [Overwrite(*h) for h in hits])
    budget = BUDGET if budget is None else budget
    reruns = CallReruns(fn, seed)
    numerical = NumericalCheck(trace, ctx, cast(Reruns, reruns),  # the same calls
                               lambda done, total, phase: None, budget)
    seeds, *others = TRACE_CHECKS  # the missing-seed check first: it rules passes out
    with collector_paused():
        found = seeds(trace, ctx)
    numerical.begin(passes, sample)
    with collector_paused():
        found += [f for check in others for f in check(trace, ctx)]
    found = numerical.run(found)
    return Report(findings=one_per_line(found), trace=trace, error=trace.error,
                  checked_passes=numerical.checked, checkable_passes=len(numerical.checkable),
                  passes_asked="sampled" if passes is None else passes, budget=budget,
                  numerical_seconds=numerical.seconds, checked_nodes=numerical.checked_nodes,
                  checked_calls=numerical.checked_calls, runs=1 + reruns.count,
                  seconds=time.perf_counter() - started, notes=numerical.notes)


def diagnose_recorded(trace: Trace, hits: list):
    """The doctor's checks of a recorded block's trace. A block cannot be run again, so
    its gradients are not checked numerically (a function can be: `diagnose_call`)."""
    from mgtui.doctor import Report
    from mgtui.doctor.context import CheckContext, collector_paused
    from mgtui.doctor.findings import one_per_line
    from mgtui.doctor.probe import Overwrite
    from mgtui.doctor.trace_checks import TRACE_CHECKS

    started = time.perf_counter()
    ctx = CheckContext(trace, [Overwrite(*h) for h in hits])
    with collector_paused():
        found = [f for check in TRACE_CHECKS for f in check(trace, ctx)]
    note = ("a recorded block cannot be run again, so no gradient was checked numerically: "
            "give mgtui.check a function that builds the graph for that")
    return Report(findings=one_per_line(found), trace=trace, error=trace.error,
                  seconds=time.perf_counter() - started, notes=[note])


# -- a graph that exists: `mgtui.show(root)` -----------------------------------------------


class NotAGraph(TypeError):
    """`mgtui.show` was given something that is not a micrograd-style node."""


def graph_of(root: object) -> list[object]:
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
        stack.extend((c, False) for c in reversed(list(getattr(v, "_prev", ()) or ()))
                     if is_node(c))
    return order


def is_node(obj: object) -> bool:
    """Is `obj` a micrograd-style node (its class's `__init__`, or one it inherits, sets
    the autograd fields; also while the recorder's hooks wrap that `__init__`)?"""
    cls = type(obj)
    found = _NODE_CLASSES.get(cls)
    if found is None:
        found = _NODE_CLASSES[cls] = any(_sets_fields(k) for k in cls.__mro__)
    return found


_NODE_CLASSES: dict[type, bool] = {}


def _sets_fields(klass: type) -> bool:
    init = klass.__dict__.get("__init__")
    init = getattr(init, "__wrapped__", init)
    code = getattr(init, "__code__", None)
    return code is not None and REQUIRED <= set(code.co_names)


@dataclass
class GraphCopy:
    """Fresh instances of a graph's nodes, with their `_prev` and their `_backward`
    closures pointing at each other instead of at the user's objects."""

    originals: list[object]
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
            prev = getattr(v, "_prev", ()) or ()
            kids = [self.copies.get(id(p), p) for p in prev]
            kind = type(prev)
            c._prev = (set(kids) if kind is set else frozenset(kids) if kind is frozenset  # type: ignore[attr-defined]
                       else kids if kind is list else tuple(kids))
            c.grad = 0  # type: ignore[attr-defined]
            c._backward = self.remap(v._backward)  # type: ignore[attr-defined]

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
        if is_node(obj):  # captured, but not in the graph: copied alone
            self.copies[id(obj)] = lone = copy.copy(obj)
            return lone
        return obj

    def _function(self, fn: types.FunctionType) -> types.FunctionType:
        code = fn.__code__
        if code not in self._codes_seen:  # a global node cannot be copied: it is put back
            self._codes_seen.add(code)
            glob = fn.__globals__
            self.named.extend(glob[n] for n in code.co_names if is_node(glob.get(n)))
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


def saved_state(nodes: list[object]) -> list[tuple[object, object, object]]:
    return [(v, getattr(v, "data", None), getattr(v, "grad", None)) for v in nodes]


def put_back(saved: list[tuple[object, object, object]]) -> None:
    """Every data and grad as it was (a closure may name a global node of the user's)."""
    for v, data, grad in saved:
        if getattr(v, "data", None) is not data:
            v.data = data  # type: ignore[attr-defined]
        if getattr(v, "grad", None) is not grad:
            v.grad = grad  # type: ignore[attr-defined]


def record_graph(root: object, names: dict[str, object], title: str, notes: str) -> Trace:
    """The trace of the graph behind `root`: each node made, children first, then its
    backward pass (`root.backward()`, or micrograd's loop where there is none), replayed
    on a copy from zero grads. The user's nodes are left exactly as they were."""
    if _recording:
        raise RecordingError("mgtui.show inside a mgtui.record() block (or a check): show "
                             "after the block, one at a time")
    if not is_node(root):
        raise NotAGraph(f"mgtui.show needs a micrograd-style Value (with data, grad, _prev, "
                        f"_op and _backward), not {type(root).__name__}")
    with collector_paused():  # many new objects, and no garbage until the copy is dropped
        return _record_graph(root, names, title, notes)


def _record_graph(root: object, names: dict[str, object], title: str, notes: str) -> Trace:
    originals = graph_of(root)
    saved = saved_state(originals)
    graph = GraphCopy(originals)
    saved += saved_state(graph.named)
    rec = in_process_recorder(Scenario(Path(NO_FILE), "", nothing_to_run(NO_FILE), title,
                                       notes))
    error = None
    try:
        with instrumented(rec):
            for v in originals:
                rec.adopt(graph.of(v))
            try:
                run_backward(graph.of(root))
            except Exception as exc:  # noqa: BLE001 - the user's backward's error is data
                error = error_of(rec, exc)
        labels = {name: graph.copies[id(v)] for name, v in names.items() if id(v) in graph.copies}
        return build(rec, error, labels)
    finally:
        put_back(saved)


@contextmanager
def collector_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run_backward(root: Any) -> None:
    backward = getattr(root, "backward", None)
    if callable(backward):
        backward()
        return
    topo: list[Any] = graph_of(root)  # the lecture's loop, for a class with no backward()
    root.grad = 1.0
    for v in reversed(topo):
        v._backward()
