"""Run a scenario file and record what it does to its `Value`s into a `Trace`.

The recorder observes from outside. Any class whose `__init__` sets `data`, `grad`,
`_prev`, `_op` and `_backward` is instrumented for the length of the run: its `__init__`
is wrapped to number each new node, and setter-only descriptors on `grad`, `data` and
`_backward` see every write while reads still go straight to the instance dict (a
descriptor without `__get__` does not slow reads down). Every `_backward` closure is
wrapped on assignment, so calls made by `backward()` and calls made by hand are both seen.
"""

from __future__ import annotations

import ast
import builtins
import ctypes
import io
import math
import os
import random
import sys
import threading
import traceback
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from mgtui.trace import BACKWARD, CREATE, DATA, GRAD, Closure, Trace, TraceError

ID = "_mgtui_id"
REQUIRED = frozenset({"data", "grad", "_prev", "_op", "_backward"})
DEFAULT_MAX_NODES = 2_000_000


class ScenarioLoadError(Exception):
    """The scenario could not run at all: missing file, not Python, syntax error."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class StopRecording(BaseException):
    """Raised inside the scenario to end the run: a limit was hit or the user cancelled.

    A BaseException, so a scenario's own `except Exception` does not swallow it.
    """


def looks_like_value(cls: type) -> bool:
    """True for a micrograd-style class: its `__init__` sets the five autograd fields."""
    init = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    return code is not None and REQUIRED <= set(code.co_names)


@dataclass(frozen=True)
class Scenario:
    path: Path
    source: str
    code: object
    title: str
    notes: str


def load_scenario(path: str | os.PathLike) -> Scenario:
    """Read and compile a scenario, or raise ScenarioLoadError with a clear message."""
    p = Path(path)
    if not p.exists():
        raise ScenarioLoadError(f"no such file: {path}")
    if p.is_dir():
        raise ScenarioLoadError(f"{path} is a directory, not a scenario file")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ScenarioLoadError(f"cannot read {path}: {exc.strerror}") from None
    if b"\0" in raw[:4096]:
        raise ScenarioLoadError(f"{path} is not a Python file (it looks binary)")
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioLoadError(f"{path} is not a Python file (it is not UTF-8 text)") from None
    if p.suffix not in (".py", ""):
        raise ScenarioLoadError(f"{path} is not a Python file (expected a .py scenario)")
    filename = str(p.resolve())
    try:
        tree = ast.parse(source, filename)
        code = compile(tree, filename, "exec")
    except SyntaxError as exc:
        raise ScenarioLoadError(syntax_message(path, exc), caret(exc)) from None
    except ValueError as exc:
        raise ScenarioLoadError(f"{path} is not a Python file: {exc}") from None
    doc = ast.get_docstring(tree) or ""
    title, _, notes = doc.partition("\n")
    return Scenario(p, source, code, title.strip() or p.stem, notes.strip())


def syntax_message(path: str | os.PathLike, exc: SyntaxError) -> str:
    return f"{path}:{exc.lineno}:{exc.offset or 0}: SyntaxError: {exc.msg}"


def caret(exc: SyntaxError) -> str:
    text = (exc.text or "").rstrip("\n")
    if not text:
        return ""
    stripped = text.lstrip()
    indent = len(text) - len(stripped)
    col = max((exc.offset or 1) - 1 - indent, 0)
    return f"    {stripped}\n    {' ' * col}^"


class Recorder:
    """One recording of one scenario. Use `record()` unless you need `cancel()`."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int = 0,
        max_nodes: int = DEFAULT_MAX_NODES,
        timeout: float | None = None,
        nudge: dict[int, float] | None = None,
        on_progress: Callable[[int], None] | None = None,
        probe: Callable[[dict, Callable[[], object]], None] | None = None,
    ) -> None:
        self.scenario = scenario
        self.probe = probe
        self.seed = seed
        self.max_nodes = max_nodes
        self.timeout = timeout
        self.nudge = nudge or {}
        self.on_progress = on_progress
        self.stop_reason: str | None = None
        self._thread_id: int | None = None
        # raw records, compacted into arrays by finish()
        self.nodes: list[tuple] = []  # (children, op, label, data, line)
        self.events: list[tuple] = []  # (kind, node, before, after, line, closure, w0, w1)
        self.writes: list[tuple] = []  # (node, field, before, after, line)
        self.codes: dict[object, int] = {}
        self.default_codes: set[object] = set()  # the no-op `_backward` an __init__ sets
        self.classes: list[type] = []
        self.globals: dict = {}
        self._restore: list[tuple[type, str, object]] = []

    # -- control -----------------------------------------------------------------------
    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the run from another thread, as soon as the scenario next touches a node
        (or, for a pure-Python loop, at its next bytecode)."""
        self.stop_reason = reason
        tid = self._thread_id
        if tid is not None and tid != threading.get_ident():
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(tid), ctypes.py_object(StopRecording)
            )

    # -- instrumentation ---------------------------------------------------------------
    def instrument(self, cls: type) -> None:
        if cls in self.classes:
            return
        self.classes.append(cls)
        rec = self
        init_code = getattr(cls.__dict__["__init__"], "__code__", None)
        if init_code is not None:
            self.default_codes.update(c for c in init_code.co_consts if hasattr(c, "co_code"))
        probe = self.probe
        nodes, events, writes, codes = self.nodes, self.events, self.writes, self.codes
        stack: list[int] = []  # event indices of the `_backward` calls running
        self._stack = stack
        path = str(self.scenario.path.resolve())
        class_codes = {
            f.__code__
            for k, f in vars(cls).items()
            if callable(f) and hasattr(f, "__code__")
        }
        getframe = sys._getframe
        nudge = self.nudge
        max_nodes = self.max_nodes
        on_progress = self.on_progress
        memo: list = [None, None]  # the last outermost non-scenario frame and its line

        def scenario_line(f) -> int | None:
            """The innermost scenario line on the stack, outside the class's own methods."""
            first = f
            prev = None
            while f is not None:
                if f is memo[0]:
                    return memo[1]
                code = f.f_code
                if code.co_filename == path and code not in class_codes:
                    if prev is not None and prev is not first:
                        memo[0], memo[1] = prev, f.f_lineno
                    return f.f_lineno
                prev = f
                f = f.f_back
            return None

        self.scenario_line = scenario_line

        def closure_index(fn) -> int:
            code = getattr(fn, "__code__", None)
            i = codes.get(code)
            if i is None:
                i = codes[code] = len(codes)
            return i

        def run_backward(d: dict, fn: Callable[[], object]):
            nid = d.get(ID)
            if nid is None or rec.stop_reason:
                return fn()
            if probe is not None:  # the doctor replays the closure first; forget its writes
                n_writes, n_events = len(writes), len(events)
                try:
                    probe(d, fn)
                finally:
                    del writes[n_writes:]
                    del events[n_events:]
            index = len(events)
            w0 = len(writes)
            line = scenario_line(getframe(2))
            events.append(None)
            stack.append(index)
            try:
                return fn()
            finally:
                stack.pop()
                events[index] = (BACKWARD, nid, 0.0, 0.0, line, closure_index(fn), w0, len(writes))

        class BackwardHook:
            __slots__ = ()

            def __set__(self, obj, fn):
                d = obj.__dict__

                def _backward():
                    return run_backward(d, fn)

                _backward.__wrapped__ = fn
                d["_backward"] = _backward

        def make_write_hook(name: str, field: int, kind: int):
            class WriteHook:
                __slots__ = ()

                def __set__(self, obj, value):
                    d = obj.__dict__
                    nid = d.get(ID)
                    if nid is None:
                        d[name] = value
                        return
                    before = d.get(name, 0.0)
                    d[name] = value
                    if stack:
                        writes.append((nid, field, before, value, getframe(1).f_lineno))
                    else:
                        events.append(
                            (kind, nid, before, value, scenario_line(getframe(1)), -1, 0, 0)
                        )

            return WriteHook()

        orig_init = cls.__dict__["__init__"]

        def __init__(self, *args, **kwargs):
            orig_init(self, *args, **kwargs)
            d = self.__dict__
            if ID in d:  # a subclass's __init__ already chained up through this one
                return
            nid = len(nodes)
            if nid >= max_nodes:
                rec.stop_reason = f"more than {max_nodes:,} nodes (--max-nodes)"
                raise StopRecording(rec.stop_reason)
            if rec.stop_reason:
                raise StopRecording(rec.stop_reason)
            prev = d.get("_prev", ())
            if isinstance(prev, (set, frozenset)):
                # A set iterates in address order, which changes from run to run: keep
                # the order the children were passed in, as a set-like keys view.
                given = args[1] if len(args) > 1 else kwargs.get("_children", ())
                order = [c for c in given if c in prev] if len(given) == len(prev) else []
                if len(order) != len(prev):
                    order = sorted(prev, key=lambda c: c.__dict__.get(ID, -1))
                prev = d["_prev"] = dict.fromkeys(order).keys()
            children = tuple([c.__dict__.get(ID, -1) for c in prev])
            if nid in nudge:
                d["data"] = d["data"] + nudge[nid]
            d[ID] = nid
            label = d.get("label")
            nodes.append(
                (children, d.get("_op", ""), label if isinstance(label, str) else "",
                 d["data"], scenario_line(getframe(1)))
            )
            events.append((CREATE, nid, 0.0, 0.0, 0, -1, 0, 0))
            if on_progress is not None and not nid & 0x3FFF:
                on_progress(nid)

        __init__.__wrapped__ = orig_init
        for name, value in (
            ("__init__", __init__),
            ("grad", make_write_hook("grad", 0, GRAD)),
            ("data", make_write_hook("data", 1, DATA)),
            ("_backward", BackwardHook()),
        ):
            self._restore.append((cls, name, cls.__dict__.get(name, _MISSING)))
            setattr(cls, name, value)

    def uninstrument(self) -> None:
        for cls, name, old in reversed(self._restore):
            if old is _MISSING:
                try:
                    delattr(cls, name)
                except AttributeError:
                    pass
            else:
                setattr(cls, name, old)
        self._restore.clear()

    def instrument_loaded(self) -> None:
        """Instrument Value-like classes that were imported before the run started."""
        for module in list(sys.modules.values()):
            for obj in list(getattr(module, "__dict__", {}).values()):
                if isinstance(obj, type) and looks_like_value(obj):
                    self.instrument(obj)

    # -- running -----------------------------------------------------------------------
    def run(self) -> Trace:
        scenario = self.scenario
        path = str(scenario.path.resolve())
        module_globals = {
            "__name__": "__main__",
            "__file__": path,
            "__builtins__": builtins,
            "__doc__": None,
        }
        self.globals = module_globals
        out = io.StringIO()
        error: TraceError | None = None
        saved = (sys.stdout, sys.stderr, sys.stdin, sys.argv, list(sys.path),
                 builtins.input, builtins.__build_class__, sys.modules.get("__main__"))
        orig_build_class = builtins.__build_class__
        rec = self

        def build_class(*args, **kwargs):
            cls = orig_build_class(*args, **kwargs)
            if looks_like_value(cls):
                rec.instrument(cls)
            return cls

        def no_input(prompt: object = "") -> str:
            raise EOFError("input() is not available: mgtui records scenarios without a terminal")

        import types

        main_module = types.ModuleType("__main__")
        main_module.__dict__.update(module_globals)
        module_globals = self.globals = main_module.__dict__
        timer = None
        self._thread_id = threading.get_ident()
        try:
            self.instrument_loaded()
            builtins.__build_class__ = build_class
            builtins.input = no_input
            sys.stdout = sys.stderr = out
            sys.stdin = io.StringIO("")
            sys.argv = [path]
            sys.path.insert(0, str(scenario.path.resolve().parent))
            sys.modules["__main__"] = main_module
            random.seed(self.seed)
            if self.timeout:
                timer = threading.Timer(self.timeout, self.cancel, (f"timed out after {self.timeout:g} s (--timeout)",))
                timer.daemon = True
                timer.start()
            try:
                exec(scenario.code, module_globals)
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    error = self._error(exc, "SystemExit", f"sys.exit({exc.code!r}) called")
            except StopRecording as exc:
                reason = self.stop_reason or str(exc) or "stopped"
                error = self._error(exc, "Stopped", f"recording stopped: {reason}")
            except BaseException as exc:  # noqa: BLE001 - the scenario's error is data
                if isinstance(exc, KeyboardInterrupt) and self.stop_reason is None:
                    self.stop_reason = "interrupted"
                    error = self._error(exc, "Stopped", "recording stopped: interrupted")
                else:
                    error = self._error(exc, type(exc).__name__, str(exc))
        finally:
            if timer is not None:
                timer.cancel()
            self._thread_id = None
            (sys.stdout, sys.stderr, sys.stdin, sys.argv, sys.path[:], builtins.input,
             builtins.__build_class__, main) = saved
            if main is not None:
                sys.modules["__main__"] = main
            self.uninstrument()
        return self.finish(error, out.getvalue())

    def _error(self, exc: BaseException, type_name: str, message: str) -> TraceError:
        line = None
        path = str(self.scenario.path.resolve())
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            if frame.f_code.co_filename == path:
                line = lineno
        return TraceError(type_name, message, line, len(self.events))

    # -- compaction ----------------------------------------------------------------------
    def finish(self, error: TraceError | None, output: str) -> Trace:
        events = [e for e in self.events if e is not None]  # an unfinished call at an error
        labels = self.resolve_labels()
        n = len(self.nodes)
        child_start = array("q", [0])
        child_ids = array("q")
        for children, *_ in self.nodes:
            child_ids.extend(children)
            child_start.append(len(child_ids))
        node_data = array("d", (to_float(r[3]) for r in self.nodes))
        # final state: replay the events once
        final_data = array("d", node_data)
        final_grad = array("d", bytes(8 * n))
        wr = self.writes
        for kind, nid, before, after, line, clo, w0, w1 in events:
            if kind == GRAD:
                final_grad[nid] = to_float(after)
            elif kind == DATA:
                final_data[nid] = to_float(after)
            elif kind == BACKWARD:
                for w in range(w0, w1):
                    wn, field, _, wafter, _ = wr[w]
                    (final_grad if field == 0 else final_data)[wn] = to_float(wafter)
        starts = _write_starts(events, len(wr))
        return Trace(
            scenario=str(self.scenario.path),
            title=self.scenario.title,
            notes=self.scenario.notes,
            source=self.scenario.source,
            node_label=tuple(labels),
            node_op=tuple(str(r[1]) for r in self.nodes),
            node_data=node_data,
            node_line=array("i", (r[4] or 0 for r in self.nodes)),
            child_start=child_start,
            child_ids=child_ids,
            final_data=final_data,
            final_grad=final_grad,
            ev_kind=array("b", (e[0] for e in events)),
            ev_node=array("q", (e[1] for e in events)),
            ev_before=array("d", (to_float(e[2]) for e in events)),
            ev_after=array("d", (to_float(e[3]) for e in events)),
            ev_line=array("i", (e[4] or 0 for e in events)),
            ev_closure=array("i", (e[5] for e in events)),
            ev_write_start=starts,
            wr_node=array("q", (w[0] for w in wr)),
            wr_field=array("b", (w[1] for w in wr)),
            wr_before=array("d", (to_float(w[2]) for w in wr)),
            wr_after=array("d", (to_float(w[3]) for w in wr)),
            wr_line=array("i", (w[4] or 0 for w in wr)),
            closures=tuple(closure_source(code, code in self.default_codes)
                           for code in self.codes),
            error=error,
            output=output,
        )

    def resolve_labels(self) -> list[str]:
        """`label` attributes (read at creation, then again on every node still reachable
        from the scenario's globals), else the global variable holding the node."""
        labels = [r[2] for r in self.nodes]
        seen: set[int] = set()
        todo = []
        names: dict[int, str] = {}
        for name, value in list(self.globals.items()):
            d = getattr(value, "__dict__", None)
            if isinstance(d, dict) and isinstance(d.get(ID), int):
                names.setdefault(d[ID], name)
                todo.append(value)
        while todo:
            v = todo.pop()
            d = v.__dict__
            nid = d.get(ID)
            if not isinstance(nid, int) or nid in seen or nid >= len(labels):
                continue
            seen.add(nid)
            label = d.get("label")
            if isinstance(label, str) and label:
                labels[nid] = label
            todo.extend(c for c in d.get("_prev", ()) if hasattr(c, "__dict__"))
        for nid, name in names.items():
            if not labels[nid] and not name.startswith("_"):
                labels[nid] = name
        return labels


_MISSING = object()


def _write_starts(events: list[tuple], total: int) -> array:
    """Per event, the index of its first write; non-backward events own an empty range."""
    next_start = total
    # walk backwards so an event without writes starts where the next one does
    out = [0] * (len(events) + 1)
    out[-1] = total
    for i in range(len(events) - 1, -1, -1):
        e = events[i]
        if e[0] == BACKWARD:
            out[i] = e[6]
            next_start = e[6]
        else:
            out[i] = next_start
    return array("q", out)


def to_float(x: object) -> float:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return math.nan


def closure_source(code: object, default: bool = False) -> Closure:
    import inspect
    import linecache

    name = getattr(code, "co_name", "?")
    filename = getattr(code, "co_filename", "?")
    first = getattr(code, "co_firstlineno", 0)
    try:
        lines, first = inspect.getsourcelines(code)  # type: ignore[arg-type]
    except (OSError, TypeError):
        lines = linecache.getlines(filename)[first - 1 : first] if first else []
    return Closure(name, filename, first, tuple(line.rstrip("\n") for line in lines), default)


def record(
    path: str | os.PathLike | Scenario,
    *,
    seed: int = 0,
    max_nodes: int = DEFAULT_MAX_NODES,
    timeout: float | None = None,
    nudge: dict[int, float] | None = None,
    on_progress: Callable[[int], None] | None = None,
    probe: Callable[[dict, Callable[[], object]], None] | None = None,
) -> Trace:
    """Run the scenario and return its trace. Raises ScenarioLoadError if it cannot run."""
    scenario = path if isinstance(path, Scenario) else load_scenario(path)
    recorder = Recorder(
        scenario, seed=seed, max_nodes=max_nodes, timeout=timeout, nudge=nudge,
        on_progress=on_progress, probe=probe,
    )
    return recorder.run()
