"""Run a scenario file and record what it does to its `Value`s into a `Trace`.

The recorder observes from outside. Any class whose `__init__` sets `data`, `grad`,
`_prev`, `_op` and `_backward` is instrumented for the length of the run. Where its
source can be rewritten, the recording is inlined into the code (`mgtui.inline`): the
class keeps no hooks, and reads of its fields are the interpreter's own. Otherwise, or
with `inline=False`, it gets the hooks below, which make the same records: its `__init__`
is wrapped to number each new node, and setter-only descriptors on `grad`, `data` and
`label` see every write while reads still go straight to the instance dict (a descriptor
without `__get__` does not slow reads down). A node's `_backward` is wrapped as it is
read, so calls made by `backward()` and calls made by hand are both seen.

A class that keeps these fields in `__slots__` has no instance dict to read or to hold a
node id, so it gets hooks of its own: properties that wrap each slot's own descriptor
(reads go to it at C speed), with nodes numbered by address (`NodeIds`). The hooks given
to a caller see such a node through a `SlotsNode`, a small mapping over its slots.
"""

from __future__ import annotations

import ast
import builtins
import ctypes
import gc
import io
import linecache
import math
import os
import random
import re
import signal
import sys
import threading
import tokenize
import traceback
import types
import weakref
from array import array
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Callable, Sequence

from mgtui.errors import ScenarioLoadError
from mgtui.naming import Namer
from mgtui.trace import Closure, EventKind, Field, Trace, TraceBuilder, TraceError

CREATE, BACKWARD, GRAD, DATA = (k.code for k in EventKind)
CLASS_CODE, OTHER_CODE = "class", False  # (`Recorder.code_kind`)

ID = "_mgtui_id"
NODE_FIELDS, EVENT_FIELDS, WRITE_FIELDS = 5, 7, 5
REQUIRED = frozenset({"data", "grad", "_prev", "_op", "_backward"})
HOOKED = ("grad", "data", "_backward", "label")  # the fields with a recorder descriptor
DEFAULT_MAX_NODES = 2_000_000
GC_GEN0_THRESHOLD = 100_000


class ThreadOutput(io.TextIOBase):
    """`sys.stdout` or `sys.stderr` while a scenario runs: what the recording thread
    writes goes into the trace's output, what any other thread writes goes where it went
    before. The app records in a worker thread while its UI runs on the main one."""

    def __init__(self, original, capture: io.StringIO) -> None:
        super().__init__()
        self.original = original
        self.capture = capture
        self.thread: int | None = threading.get_ident()

    def _mine(self) -> bool:
        return threading.get_ident() == self.thread

    def detach(self) -> None:  # type: ignore[override]
        self.thread = None

    def write(self, text: str) -> int:
        if self._mine():
            return self.capture.write(text)
        return self.original.write(text) if self.original is not None else len(text)

    def flush(self) -> None:
        if not self._mine() and self.original is not None:
            self.original.flush()

    def isatty(self) -> bool:
        return False if self._mine() else bool(getattr(self.original, "isatty", bool)())

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.original.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.original, "encoding", None) or "utf-8"

    def __getattr__(self, name: str):
        return getattr(self.original, name)


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
    if p.suffix == ".ipynb":
        return load_notebook(p)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ScenarioLoadError(f"cannot read {path}: {exc.strerror}") from None
    if b"\0" in raw[:4096]:
        raise ScenarioLoadError(f"{path} is not a Python file (it looks binary)")
    try:  # as Python reads it: a BOM, or a PEP 263 coding cookie, else UTF-8
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        source = raw.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        raise ScenarioLoadError(f"{path} is not a Python file (its text is not UTF-8, nor in "
                                "the encoding its coding line names)") from None
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


def load_notebook(p: Path) -> Scenario:
    """A Jupyter notebook's code cells, in order, as one scenario (`mgtui.notebook`)."""
    from mgtui import notebook

    try:
        nb = notebook.read(p)
    except ValueError as exc:
        raise ScenarioLoadError(str(exc)) from None
    except OSError as exc:
        raise ScenarioLoadError(f"cannot read {p}: {exc.strerror}") from None
    filename = str(p.resolve())
    try:
        code = compile(nb.source, filename, "exec")
    except SyntaxError as exc:
        raise ScenarioLoadError(f"{p}, {notebook.where(nb.source, exc.lineno)}: SyntaxError: "
                                f"{exc.msg}", caret(exc)) from None
    # Lines read back by file name (a closure's source, a traceback) are the script's,
    # not the notebook's JSON. (An entry with no mtime is never checked against the file.)
    linecache.cache[filename] = (len(nb.source), None, nb.source.splitlines(True), filename)
    return Scenario(p, nb.source, code, nb.title, nb.notes)


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


OnCreate = Callable[[int, dict], None]
BeforeBackward = Callable[[dict, Callable[[], object]], None]
OnBackward = Callable[[object, Callable[[], object]], None]  # with a `skip` set


class Recorder:
    """One recording of one scenario. Use `record()` unless you need `cancel()`.

    Two optional hooks let a caller (the gradient doctor) act inside the run without the
    recorder knowing what for:
    - `on_create(nid, node_dict)` runs as each node gets its id, before its `data` is
      recorded: a change to `node_dict["data"]` is recorded as the node's value.
    - `before_backward(node_dict, fn)` runs just before each recorded `_backward` call,
      with the node's dict and the closure about to run. Whatever it records (it may
      call `fn`) is discarded, and raising `StopRecording` from it ends the run there.
    - `on_backward(op, fn)` only watches: it runs just before each recorded `_backward`
      call, with the node's `_op` and the closure about to run, unless `op` is in
      `on_backward.skip` (a set the hook may add to). It must not call `fn` nor change
      any node, so nothing is taken back after it, and it costs the recording no more
      than its own work (the runner's child reads custom ops' values this way,
      `mgtui.call_values`). The call's event index is `len(events) // EVENT_FIELDS`.

    `inline=False` records every class through the hooks, never rewriting code.

    `capture_output=False` leaves the scenario's stdout and stderr where they are (the
    runner's child sends them to the parent on a pipe of their own), and `argv` is what
    follows the script's path in its `sys.argv`.
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int = 0,
        max_nodes: int = DEFAULT_MAX_NODES,
        timeout: float | None = None,
        on_progress: Callable[[int], None] | None = None,
        on_create: OnCreate | None = None,
        before_backward: BeforeBackward | None = None,
        on_backward: OnBackward | None = None,
        capture_output: bool = True,
        argv: Sequence[str] = (),
        inline: bool = True,
    ) -> None:
        self.scenario = scenario
        self.capture_output = capture_output
        self.argv = tuple(argv)
        self.seed = seed
        self.max_nodes = max_nodes
        self.timeout = timeout
        self.on_progress = on_progress
        self.on_create = on_create
        self.before_backward = before_backward
        self.on_backward = on_backward
        self.stop_reason: str | None = None
        self._thread_id: int | None = None  # the thread `cancel()` may interrupt
        self._lock = threading.Lock()
        self._old_alarm = None  # SIGALRM's handler before ours, while ours is installed
        self._posted = False  # cancel() has posted StopRecording to the recording thread
        # raw records, appended flat and compacted into arrays by finish()
        self.nodes: list = []  # NODE_FIELDS a node: end of its children in kids, op,
        #                        label, data, line
        self.kids: list[int] = []  # every node's children's ids, one after another
        self.late_labels: dict[int, object] = {}
        self.events: list = []  # EVENT_FIELDS an event: kind, node, before, after, line,
        #                         closure, first write
        self.writes: list = []  # WRITE_FIELDS a write: node, field, before, after, line
        self.stack: list[int] = []  # the `_backward` calls running, innermost last
        # Nodes made while a `_backward` runs (a custom op that computes with Values):
        # their creation steps come right after the call, so its writes stay its own.
        self.made_inside: list[int] = []
        # Counts the starts and ends of `before_backward`: a reader in another thread
        # (the runner's flusher) takes the lengths only while it is even and unchanged.
        self.replays = 0
        self.codes: dict[object, int] = {}  # each `_backward` closure's code: its index
        # The same by the code object's id, which is kept alive in `codes` or here. (A
        # code object does not cache its hash, and hashes all its constants, nested code
        # included: looking a big one up by value on every node costs microseconds.)
        self.code_ids: dict[int, tuple[int, object]] = {}
        self.closure_ids: dict[int, int] = {}  # the same, the index alone
        self.class_codes: dict[int, object] = {}  # code of the Value classes' own methods,
        #                                           by id
        # What the code a node is made from is, by its id (`code_kind`): CLASS_CODE, the
        # assignments of a scenario code (a dict, maybe empty), or OTHER_CODE.
        self.code_kinds: dict[int, object] = {}
        self._kind_codes: list = []  # (keeps the ids above theirs)
        self.last_frames: list[list] = []  # the inlined recording's caches of a frame
        self.default_codes: set[object] = set()  # the no-op `_backward` an __init__ sets
        self.classes: list[type] = []
        self.globals: dict = {}
        self._restore: list[tuple[type, str, object]] = []
        self.slots_ids = NodeIds()  # the nodes of `__slots__` classes, by address
        self._plain_id_types: dict[type, bool] = {}  # (`node_id`)
        self.node_id = self._node_id_reader()
        # The recording inlined into the classes whose source it can rewrite
        # (`mgtui.inline`); the hooks below are for the others, or for all if not inline.
        self.inliner = None
        rewrite = None
        if inline:
            from mgtui.inline import Inliner, scenario_rewrite

            rewrite = scenario_rewrite(scenario)
        self.scenario_path = str(scenario.path.resolve())
        # the namer reads the code that runs: the scenario's, rewritten or not
        self.namer = Namer(scenario.code if rewrite is None else rewrite.code,
                           scenario.source, self.class_codes, self.node_id)
        self._adopters: dict[type, Callable] = {}  # see `adopt`, by class
        # Number a node's children made before the recording started, as it is made
        # (`mgtui.record()`: a block that uses parameters made before it).
        self.adopt_strangers = False
        self._make_hooks()
        if inline:
            self.inliner = Inliner(self, self.record_call, self.run_backward, rewrite)

    # -- control -----------------------------------------------------------------------
    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the run from another thread, as soon as the scenario next touches a node
        (or, for a pure-Python loop, at its next bytecode)."""
        self.stop_reason = reason
        if self.inliner is not None:
            self.inliner.interrupt()
        with self._lock:
            tid = self._thread_id
            if tid is None or tid == threading.get_ident():
                return
            if tid == threading.main_thread().ident and self._old_alarm is not None:
                # a signal also wakes a main thread blocked in a call such as sleep()
                signal.pthread_kill(tid, signal.SIGALRM)
            else:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(tid), ctypes.py_object(StopRecording))
                self._posted = True

    def _on_alarm(self, signum, frame) -> None:
        if self._thread_id is not None:  # still inside the scenario
            raise StopRecording(self.stop_reason or "stopped")

    def _disarm(self) -> None:
        """From here on `cancel()` no longer interrupts this thread; a stop it asked for
        a moment ago but that has not landed yet is withdrawn."""
        with self._lock:
            self._thread_id = None
            posted, self._posted = self._posted, False
        if not posted:
            return
        # Let a stop that was posted but has not landed yet land here, harmlessly. (It
        # is not withdrawn with PyThreadState_SetAsyncExc(tid, NULL): under an active
        # sys.settrace or sys.setprofile, as coverage and debuggers set, that hangs.)
        for _ in range(10_000):
            try:
                for _ in range(100):
                    pass
            except StopRecording:
                return

    # -- instrumentation: the hot path -------------------------------------------------
    # Each hook is a closure over local names bound once (the record lists, the recorder's
    # options), and records are appended flat; every method below builds one of them.
    def _make_hooks(self) -> None:
        """Build the hooks shared by every instrumented class."""
        scenario_line = self.scenario_line = self._line_finder()
        run_backward = self.run_backward = self._backward_runner(scenario_line)
        self._hooks = (self._write_hook("grad", Field.GRAD.code, GRAD, scenario_line),
                       self._write_hook("data", Field.DATA.code, DATA, scenario_line),
                       self._backward_hook(run_backward), self._label_hook())

    def _line_finder(self) -> Callable[[types.FrameType], int | None]:
        """`scenario_line(frame)`: the innermost scenario line on the stack from `frame`,
        outside the Value class's methods (0 if there is none).

        Frames below it that were walked are remembered (a frame held here cannot be
        mistaken for another), so the many nodes made inside one library call, like
        `model(x)`, each walk only up to the first frame they share."""
        path = str(self.scenario.path.resolve())
        class_codes = self.class_codes
        memo: dict = {}  # frames seen on the last walks -> their innermost scenario line
        self.line_memo = memo  # (the inlined recording looks here before calling)

        def scenario_line(f) -> int | None:
            code = f.f_code
            if code.co_filename == path and id(code) not in class_codes:
                return f.f_lineno  # made by the scenario's own line: the common case
            walked = []
            while f is not None:
                line = memo.get(f)
                if line is not None:
                    break
                code = f.f_code
                if code.co_filename == path and id(code) not in class_codes:
                    line = f.f_lineno
                    break
                walked.append(f)
                f = f.f_back
            else:
                line = 0  # no scenario frame on the stack (remembered too: a graph copied
                #           for `mgtui.show` has no scenario lines, node after node)
            if walked:
                if len(memo) > 256:
                    memo.clear()
                for w in walked:
                    memo[w] = line
            return line

        return scenario_line

    def code_kind(self, code) -> object:
        """What `code` is to the recorder, worked out once (`code_kinds`): CLASS_CODE for a
        method of a Value class; for the scenario's own code, its assignments' spots (a
        dict by instruction offset, `mgtui.naming`; empty if it has none); else
        OTHER_CODE."""
        cid = id(code)
        kind = self.code_kinds.get(cid)
        if kind is None:
            if cid in self.class_codes:
                kind = CLASS_CODE
            elif code.co_filename == self.scenario_path:
                kind = self.namer.spots.get(cid) or {}
            else:
                kind = OTHER_CODE
            self.code_kinds[cid] = kind
            self._kind_codes.append(code)
        return kind

    def forget_since(self, n_writes: int, n_events: int, n_nodes: int, n_kids: int) -> None:
        """Take back every record made since these lengths: the nodes a hook's replay made
        are forgotten too, so that ids keep following the recorded creations."""
        del self.writes[n_writes:]
        del self.events[n_events:]
        first = n_nodes // NODE_FIELDS
        self.made_inside[:] = [nid for nid in self.made_inside if nid < first]
        if len(self.nodes) > n_nodes:
            del self.nodes[n_nodes:]
            del self.kids[n_kids:]
            for nid in [n for n in self.late_labels if n >= first]:
                del self.late_labels[nid]
            self.namer.forget_since(first)

    def _backward_runner(self, scenario_line):
        """`run_backward(d, fn)`: records the call of `fn`, the `_backward` of the node
        whose dict (or `SlotsNode`) is `d`, runs `before_backward` first, then `fn`."""
        rec = self
        before, watch = self.before_backward, self.on_backward
        skip = watch.skip if watch is not None else ()
        events, writes, stack = self.events, self.writes, self.stack
        nodes, kids, made_inside = self.nodes, self.kids, self.made_inside
        getframe = sys._getframe

        def run_backward(d: dict, fn: Callable[[], object]):
            nid = d.get(ID)
            if nid is None:
                return fn()
            return record_call(nid, d, fn, getframe(1))

        def record_call(nid: int, d, fn: Callable[[], object], frame):
            """Record the call of `fn`, the `_backward` of node `nid` (its dict `d`),
            made from `frame`, and make it."""
            if rec.stop_reason:
                return fn()
            if before is not None:  # whatever the hook records is forgotten
                marks = len(writes), len(events), len(nodes), len(kids)
                rec.replays += 1  # odd while the hook runs: its records are not for reading
                try:
                    before(d, fn)
                finally:
                    rec.forget_since(*marks)
                    rec.replays += 1
            if watch is not None and not rec.replays & 1:  # (not a call a replay made)
                op = d.get("_op") if d is not None else None
                try:
                    watched = op not in skip
                except TypeError:  # an `_op` that cannot be hashed
                    watched = True
                if watched:
                    watch(op, fn)
            ci = rec.closure_index(getattr(fn, "__code__", None))
            events.extend(
                (BACKWARD, nid, 0.0, 0.0, scenario_line(frame), ci, len(writes)))
            stack.append(nid)
            try:
                return fn()
            finally:
                stack.pop()
                if made_inside and not stack:
                    for made in made_inside:
                        events.extend((CREATE, made, 0.0, 0.0, 0, -1, len(writes)))
                    made_inside.clear()

        self.record_call = record_call
        return run_backward

    def closure_index(self, code) -> int:
        """The index of a `_backward` closure's code among those recorded."""
        found = self.code_ids.get(id(code))
        if found is not None:
            return found[0]
        ci = self.codes.get(code)
        if ci is None:
            ci = self.codes[code] = len(self.codes)
        self.code_ids[id(code)] = (ci, code)
        self.closure_ids[id(code)] = ci
        return ci

    def _backward_hook(self, run_backward):
        """The `_backward` descriptor: a read returns the closure bound to `run_backward`."""

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

    def _write_hook(self, name: str, field: int, kind: int, scenario_line):
        """A setter-only descriptor for `grad` or `data`: a write inside a `_backward`
        call is one of that call's writes, any other write is an event of its own."""
        events, writes, stack = self.events, self.writes, self.stack
        getframe = sys._getframe
        rec = self

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
                    writes.extend((nid, field, before, value, getframe(1).f_lineno))
                else:
                    events.extend((kind, nid, before, value, scenario_line(getframe(1)),
                                   -1, len(writes)))

        return WriteHook()

    def _label_hook(self):
        late_labels = self.late_labels

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

    def _init_wrapper(self, scenario_line, orig_init):
        """`orig_init` wrapped to number each new node and record it (and run
        `on_create` first)."""
        rec = self
        nodes, events, writes, kids = self.nodes, self.events, self.writes, self.kids
        stack, made_inside = self.stack, self.made_inside
        max_nodes, on_progress, on_create = self.max_nodes, self.on_progress, self.on_create
        getid = attrgetter(ID)
        getframe = sys._getframe
        named = self.namer.made

        def __init__(self, *args, **kwargs):
            orig_init(self, *args, **kwargs)
            d = self.__dict__
            if ID in d:  # a subclass's __init__ already chained up through this one
                return
            nid = len(nodes) // NODE_FIELDS
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
                    nid, n_before = len(nodes) // NODE_FIELDS, len(kids)
                kids.extend(getattr(c, ID, -1) for c in prev)
            if on_create is not None:
                on_create(nid, d)
            d[ID] = nid
            caller = getframe(1)
            nodes.extend((len(kids), d.get("_op", ""), d.get("label"), d["data"],
                          scenario_line(caller)))
            named(nid, caller, self)
            if stack:  # made inside a `_backward`: its step follows that call's writes
                made_inside.append(nid)
            else:
                events.extend((CREATE, nid, 0.0, 0.0, 0, -1, len(writes)))
            if on_progress is not None and not nid & 0x3FFF:
                on_progress(nid)

        __init__.__wrapped__ = orig_init
        return __init__

    # -- instrumentation of `__slots__` classes ----------------------------------------
    # The same records as the hooks above, for a class whose instances have no __dict__:
    # each hook wraps the field's own descriptor (a slot's `member_descriptor`), which
    # still holds the value, and nodes are numbered by address in `slots_ids`.
    def _slots_hooks(self, cls: type, init) -> list[tuple[str, object]]:
        """(name, hook) for each field `cls` can hold, and its wrapped `__init__`."""
        layout = self.slots_ids.layout(cls)
        makers = (("grad", partial(self._slots_write_hook, Field.GRAD.code, GRAD)),
                  ("data", partial(self._slots_write_hook, Field.DATA.code, DATA)),
                  ("_backward", self._slots_backward_hook),
                  ("label", self._slots_label_hook))
        hooks: list[tuple[str, object]] = [("__init__", self._slots_init_wrapper(init))]
        for name, make in makers:
            raw = layout.raw(name)
            if raw is not None:  # else no instance can hold it, hooked or not
                hooks.append((name, make(raw)))
        return hooks

    def _slots_write_hook(self, field: int, kind: int, raw) -> SlotsField:
        """`_write_hook` for a field kept in a slot: reads go to `raw` unrecorded."""
        events, writes, stack = self.events, self.writes, self.stack
        ids_get, scenario_line = self.slots_ids.get, self.scenario_line
        get, put = raw.__get__, raw.__set__
        getframe = sys._getframe

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
            if stack:
                writes.extend((nid, field, before, value, getframe(1).f_lineno))
            else:
                events.extend((kind, nid, before, value, scenario_line(getframe(1)),
                               -1, len(writes)))

        return SlotsField(get, write, raw, self.slots_ids)

    def _slots_backward_hook(self, raw) -> SlotsField:
        """`_backward_hook` for a slot: a read returns the closure bound to `run_backward`
        with the node's `SlotsNode`."""
        run_backward, ids = self.run_backward, self.slots_ids
        ids_get, layout_of, get = ids.get, ids.layout, raw.__get__

        def read(obj):
            node = SlotsNode(obj, layout_of(type(obj)), ids_get(id(obj)))
            return partial(run_backward, node, get(obj))

        return SlotsField(read, raw.__set__, raw, ids)

    def _slots_label_hook(self, raw) -> SlotsField:
        """`_label_hook` for a slot."""
        late_labels, ids_get, put = self.late_labels, self.slots_ids.get, raw.__set__

        def write(obj, value):
            put(obj, value)
            nid = ids_get(id(obj))
            if nid is not None:
                late_labels[nid] = value

        return SlotsField(raw.__get__, write, raw, self.slots_ids)

    def _slots_init_wrapper(self, orig_init):
        """`_init_wrapper` for a `__slots__` class: the node is read through a
        `SlotsNode` and numbered in `slots_ids`."""
        rec = self
        nodes, events, writes, kids = self.nodes, self.events, self.writes, self.kids
        stack, made_inside = self.stack, self.made_inside
        max_nodes, on_progress, on_create = self.max_nodes, self.on_progress, self.on_create
        ids, scenario_line = self.slots_ids, self.scenario_line
        ids_get, layout_of = ids.get, ids.layout
        getframe = sys._getframe
        named = self.namer.made

        def node_id(c) -> int:
            nid = ids_get(id(c))
            return getattr(c, ID, -1) if nid is None else nid

        def __init__(self, *args, **kwargs):
            orig_init(self, *args, **kwargs)
            if id(self) in ids:  # a subclass's __init__ already chained up through this one
                return
            nid = len(nodes) // NODE_FIELDS
            if nid >= max_nodes or rec.stop_reason:
                if rec.stop_reason is None:
                    rec.stop_reason = f"more than {max_nodes:,} nodes (--max-nodes)"
                raise StopRecording(rec.stop_reason)
            layout = layout_of(type(self))
            d = SlotsNode(self, layout, None)
            prev = d.get("_prev", ())
            if isinstance(prev, (set, frozenset)) and len(prev) > 1:  # (see `ordered`)
                prev = d["_prev"] = ordered(prev, args, kwargs, node_id)
            kids.extend(map(node_id, prev))
            if on_create is not None:
                on_create(nid, d)
            ids.add(self, nid, layout.weak)
            d.nid = nid
            caller = getframe(1)
            nodes.extend((len(kids), d.get("_op", ""), d.get("label"), d["data"],
                          scenario_line(caller)))
            named(nid, caller, self)
            if stack:  # made inside a `_backward`: its step follows that call's writes
                made_inside.append(nid)
            else:
                events.extend((CREATE, nid, 0.0, 0.0, 0, -1, len(writes)))
            if on_progress is not None and not nid & 0x3FFF:
                on_progress(nid)

        __init__.__wrapped__ = orig_init
        return __init__

    def instrument(self, cls: type) -> None:
        if cls in self.classes:
            return
        self.classes.append(cls)
        inline = self.inliner is not None and self.inliner.adopt(cls)
        init = cls.__dict__["__init__"]
        init_code = getattr(init, "__code__", None)
        if init_code is not None:
            self.default_codes.update(c for c in init_code.co_consts if hasattr(c, "co_code"))
        for klass in cls.__mro__:
            self.class_codes.update(
                (id(f.__code__), f.__code__) for f in vars(klass).values()
                if hasattr(f, "__code__"))
        self.code_kinds.clear()  # some codes may be class codes now
        for last in self.last_frames:
            last[:] = [None] * len(last)
        if self.inliner is not None:
            self.inliner.forget_lines()
        if inline:
            return  # it records itself: no hooks
        if keeps_fields_in_slots(cls):
            hooks = self._slots_hooks(cls, init)
        else:
            grad_hook, data_hook, backward_hook, label_hook = self._hooks
            hooks = [("__init__", self._init_wrapper(self.scenario_line, init)),
                     ("grad", grad_hook), ("data", data_hook),
                     ("_backward", backward_hook), ("label", label_hook)]
        for name, value in hooks:
            self._restore.append((cls, name, cls.__dict__.get(name, _MISSING)))
            setattr(cls, name, value)

    def adopt(self, node: object) -> None:
        """Record `node`, an instance made without its class's `__init__` (a copy of a
        node, for `mgtui.show`), as a node made now: its children must be adopted first."""
        cls = type(node)
        numbered = self._adopters.get(cls)
        if numbered is None:
            for klass in cls.__mro__:  # the class whose `__init__` makes the node
                if looks_like_value(klass):
                    self.instrument(klass)
                    break
            numbered = self._adopters[cls] = (
                self._slots_init_wrapper(_made_already) if keeps_fields_in_slots(cls)
                else self._init_wrapper(self.scenario_line, _made_already))
        numbered(node)

    def uninstrument(self) -> None:
        if self.inliner is not None:
            self.inliner.stop()
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
        """Run the scenario once and build its trace."""
        error, output = self.execute()
        try:
            return self.finish(error, output)
        finally:
            self.slots_ids.release()

    def execute(self) -> tuple[TraceError | None, str]:
        """Run the scenario once, leaving its records here: (the error, its output).
        The runner's child streams the records and never builds a trace of its own.
        Recordings take turns: the hooks are class-wide."""
        with _ONE_AT_A_TIME:
            out = io.StringIO()
            main_module = self._main_module()
            with self._scenario_interpreter(main_module, out), self._limits_armed():
                error = self._execute(main_module.__dict__)
            return error, out.getvalue()

    def _main_module(self) -> types.ModuleType:
        """A fresh `__main__` for the scenario, as `python FILE` would give it."""
        main_module = types.ModuleType("__main__")
        main_module.__dict__.update({
            "__name__": "__main__",
            "__file__": str(self.scenario.path.resolve()),
            "__builtins__": builtins,
            "__doc__": None,
        })
        self.globals = main_module.__dict__
        return main_module

    @contextmanager
    def _scenario_interpreter(self, main_module: types.ModuleType, out: io.StringIO):
        """The interpreter as the scenario should find it: its classes instrumented, its
        output captured into `out`, no stdin, its own `sys.argv`, `sys.path` and
        `__main__`, `random` seeded. Everything is put back afterwards."""
        scenario = self.scenario
        saved = (sys.stdout, sys.stderr, sys.stdin, sys.argv, list(sys.path),
                 builtins.input, builtins.__build_class__, sys.modules.get("__main__"))
        orig_build_class = builtins.__build_class__
        rec = self

        def build_class(*args, **kwargs):
            cls = orig_build_class(*args, **kwargs)
            if looks_like_value(cls):
                rec.instrument(cls)
            return cls

        gc_threshold = gc.get_threshold()
        capture = self.capture_output
        stdout = ThreadOutput(sys.stdout, out) if capture else sys.stdout
        stderr = ThreadOutput(sys.stderr, out) if capture else sys.stderr
        try:
            self.instrument_loaded()
            if self.inliner is not None:
                self.inliner.start()
            builtins.__build_class__ = build_class
            builtins.input = no_input
            sys.stdout, sys.stderr = stdout, stderr
            sys.stdin = io.StringIO("")
            sys.argv = [str(scenario.path.resolve()), *self.argv]
            sys.path.insert(0, str(scenario.path.resolve().parent))
            sys.modules["__main__"] = main_module
            random.seed(self.seed)
            # Every node is in a reference cycle (its closure refers back to it), so a
            # big graph makes the collector rescan the heap over and over; the records
            # kept here are plain numbers. Collect less often while the scenario runs.
            gc.set_threshold(max(gc_threshold[0], GC_GEN0_THRESHOLD), *gc_threshold[1:])
            yield
        finally:
            gc.set_threshold(*gc_threshold)
            (_, _, sys.stdin, sys.argv, sys.path[:], builtins.input,
             builtins.__build_class__, main) = saved
            # Put the streams back only if nobody (a Textual app starting or stopping on
            # another thread) swapped them meanwhile; a proxy left in place just passes
            # everything on from now on.
            for proxy in (stdout, stderr) if capture else ():
                proxy.detach()
            if sys.stdout is stdout:
                sys.stdout = saved[0]
            if sys.stderr is stderr:
                sys.stderr = saved[1]
            if main is not None:
                sys.modules["__main__"] = main
            self.uninstrument()

    @contextmanager
    def _limits_armed(self):
        """The `--timeout` timer, and on the main thread the SIGALRM handler through
        which `cancel()` wakes a scenario blocked in a call."""
        timer = None
        try:
            if self.timeout:
                timer = threading.Timer(
                    self.timeout, self.cancel, (f"timed out after {self.timeout:g} s (--timeout)",))
                timer.daemon = True
                timer.start()
            if (threading.current_thread() is threading.main_thread()
                    and hasattr(signal, "pthread_kill")):
                self._old_alarm = signal.signal(signal.SIGALRM, self._on_alarm)
            yield
        finally:
            if timer is not None:
                timer.cancel()
            if self._old_alarm is not None:
                signal.signal(signal.SIGALRM, self._old_alarm)
                self._old_alarm = None

    def _execute(self, module_globals: dict) -> TraceError | None:
        """Run the scenario's code; how it ended, as an error (None: it ran to the end)."""
        try:
            try:
                with self._lock:
                    self._thread_id = threading.get_ident()
                if self.stop_reason:
                    raise StopRecording(self.stop_reason)
                code = self.scenario.code
                if self.inliner is not None:
                    code = self.inliner.scenario_code(module_globals)
                exec(code, module_globals)
            finally:
                self._disarm()
        except SystemExit as exc:
            if exc.code not in (None, 0):
                return self._error(exc, "SystemExit", f"sys.exit({exc.code!r}) called")
        except StopRecording as exc:
            reason = self.stop_reason or str(exc) or "stopped"
            return self._error(exc, "Stopped", f"recording stopped: {reason}")
        except BaseException as exc:  # noqa: BLE001 - the scenario's error is data
            if isinstance(exc, KeyboardInterrupt) and self.stop_reason is None:
                self.stop_reason = "interrupted"
                return self._error(exc, "Stopped", "recording stopped: interrupted")
            return self._error(exc, type(exc).__name__, str(exc))
        return None

    def _error(self, exc: BaseException, type_name: str, message: str) -> TraceError:
        line = None
        path = str(self.scenario.path.resolve())
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            if frame.f_code.co_filename == path:
                line = lineno
        return TraceError(type_name, message, line, len(self.events) // EVENT_FIELDS)

    # -- compaction ----------------------------------------------------------------------
    def finish(self, error: TraceError | None, output: str) -> Trace:
        """Hand the flat records to a `TraceBuilder`, column by column."""
        N, E, W = NODE_FIELDS, EVENT_FIELDS, WRITE_FIELDS
        nodes, events, writes = self.nodes, self.events, self.writes
        scenario = self.scenario
        builder = TraceBuilder(str(scenario.path), scenario.title, scenario.notes, scenario.source)
        builder.add_nodes(self.resolve_labels(), strings(nodes[1::N]), floats(nodes[3::N]),
                          ints(nodes[4::N]), nodes[0::N], self.kids)
        builder.add_events(events[0::E], events[1::E], floats(events[2::E]),
                           floats(events[3::E]), ints(events[4::E]), events[5::E],
                           [w // W for w in events[6::E]])
        builder.add_writes(writes[0::W], writes[1::W], floats(writes[2::W]),
                           floats(writes[3::W]), ints(writes[4::W]))
        for nid, name in self.resolve_names():
            builder.add_name(nid, name)
        for code in self.codes:
            builder.add_closure(closure_source(code, code in self.default_codes))
        return builder.build(error, output)

    def resolve_labels(self) -> list[str]:
        """The `label` attribute of each node, as made or as set later."""
        labels = [x if isinstance(x, str) else "" for x in self.nodes[2::NODE_FIELDS]]
        for nid, label in self.late_labels.items():
            if isinstance(label, str) and nid < len(labels):
                labels[nid] = label
        return labels

    def resolve_names(self) -> list[tuple[int, str]]:
        """(id, name) of every node named by the variable it was bound to or by its path
        from a global object (`mgtui.naming`); call once, after the run."""
        try:
            self.namer.finish(self.globals, self.is_leaf)
        except Exception:  # noqa: BLE001 - an object that cannot be read: fewer names
            pass
        count = len(self.nodes) // NODE_FIELDS
        return [(nid, name) for nid, name in self.namer.names if nid < count]

    def _node_id_reader(self) -> Callable[[object], int | None]:
        """`node_id(obj)`: the id of a recorded node, None for anything else; runs no code
        of `obj`'s. (It reads the id as an attribute: asking for `__dict__` would make
        Python build the node's dict, and slow down every later read of its fields.)"""
        plain_types, slots_get = self._plain_id_types, self.slots_ids.get
        get_attribute = object.__getattribute__

        def node_id(obj: object) -> int | None:
            cls = type(obj)
            plain = plain_types.get(cls)
            if plain is None:  # no class on the way defines the name: nothing of theirs runs
                plain = plain_types[cls] = not any(ID in vars(k) for k in cls.__mro__)
            nid = None
            if plain:
                try:
                    nid = get_attribute(obj, ID)
                except (AttributeError, TypeError):
                    nid = None
            if nid is None:
                nid = slots_get(id(obj))
            return nid if type(nid) is int else None

        return node_id

    def is_leaf(self, nid: int) -> bool:
        nodes, N = self.nodes, NODE_FIELDS
        if not 0 <= nid < len(nodes) // N:
            return False
        start = nodes[(nid - 1) * N] if nid else 0
        return nodes[nid * N] == start


_MISSING = object()
_ONE_AT_A_TIME = threading.RLock()


def _made_already(node: object) -> None:
    """The `__init__` of a node `Recorder.adopt` records: it is made already."""


# -- nodes of `__slots__` classes ----------------------------------------------------------


def class_attribute(cls: type, name: str) -> object:
    """`name` as `cls` or its bases define it (no descriptor called), with the recorder's
    own `SlotsField` taken off; `_MISSING` if none does."""
    for klass in cls.__mro__:
        value = klass.__dict__.get(name, _MISSING)
        if value is not _MISSING:
            return value.original if isinstance(value, SlotsField) else value
    return _MISSING


def keeps_fields_in_slots(cls: type) -> bool:
    """Do the instances of `cls` lack a `__dict__`, or keep a hooked field in a slot?
    Then the recorder gives it its `__slots__` hooks."""
    return not cls.__dictoffset__ or any(
        isinstance(class_attribute(cls, name), types.MemberDescriptorType) for name in HOOKED)


def node_dict(obj: object):
    """A node as the recorder's hooks see it: its instance dict, or a `SlotsNode` for an
    instance of an instrumented `__slots__` class; None for anything else."""
    field = getattr(type(obj), "grad", None)
    if isinstance(field, SlotsField):
        return field.ids.view(obj)
    d = getattr(obj, "__dict__", None)
    return d if isinstance(d, dict) else None


class SlotsField(property):
    """The recorder's descriptor for a field of a `__slots__` class. It wraps the class's
    own descriptor for the field (`original`, which `uninstrument()` puts back): a read is
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
            if self.default is _MISSING:
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
    class (a slot's `member_descriptor`, or a property), else in their `__dict__`."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.weak = bool(cls.__weakrefoffset__)  # its instances take weak references
        self._raw: dict[str, object] = {}

    def raw(self, name: str):
        """The descriptor that reads and writes `name` past the recorder's hooks, or None
        if no instance can hold `name`."""
        try:
            return self._raw[name]
        except KeyError:
            pass
        found = class_attribute(self.cls, name)
        if hasattr(type(found), "__set__"):
            raw = found
        elif self.cls.__dictoffset__:
            raw = InstanceDictField(name, found)
        else:
            raw = None
        self._raw[name] = raw
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
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: str) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def __setitem__(self, key: str, value) -> None:
        raw = None if key == ID else self.layout.raw(key)
        if raw is None:
            raise KeyError(key)
        raw.__set__(self.node, value)

    def pop(self, key: str, default=_MISSING):
        value = self.get(key, _MISSING)
        if value is _MISSING or key == ID:
            if default is _MISSING:
                raise KeyError(key)
            return default
        self.layout.raw(key).__delete__(self.node)
        return value

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

    def layout(self, cls: type) -> SlotsLayout:
        layout = self.layouts.get(cls)
        if layout is None:
            layout = self.layouts[cls] = SlotsLayout(cls)
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


def no_input(prompt: object = "") -> str:
    """`input()` while a scenario runs."""
    raise EOFError("input() is not available: mgtui records scenarios without a terminal")


def ordered(prev, args: tuple, kwargs: dict, node_id: Callable[[object], int] | None = None):
    """A set of children as a set-like keys view in a fixed order.

    A set iterates in address order, which changes from run to run; keep the order the
    children were passed to `__init__`, else sort them by node id (`node_id(child)`).
    (The recorder leaves a set of one child as it is: it has one order.)"""
    given = args[1] if len(args) > 1 else kwargs.get("_children", ())
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


def strings(values: list) -> tuple[str, ...]:
    """A tuple of str; anything else (an `_op` that is not a string) becomes its str()."""
    try:
        "".join(values)  # fails unless every value is a str, at C speed
        return tuple(values)
    except TypeError:
        return tuple(v if isinstance(v, str) else str(v) for v in values)


def ints(values: list) -> array:
    """An array of ints; a missing value (None) becomes 0."""
    try:
        return array("i", values)
    except TypeError:
        return array("i", [v if isinstance(v, int) else 0 for v in values])


def floats(values: list) -> array:
    """An array of doubles; values that are not numbers become nan."""
    try:
        return array("d", values)
    except (TypeError, OverflowError):
        return array("d", [to_float(x) for x in values])


def to_float(x: object) -> float:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return math.nan


def closure_source(code: object, default: bool = False) -> Closure:
    """The source of a `_backward` closure's code, read from the line cache.

    The same block `inspect.getsourcelines` gives, without its scan of every loaded
    module for the code's file (most of the time of recording a small scenario); where
    the first line is not a `def` or a `lambda`, `inspect` finds the block itself."""
    import inspect

    name = getattr(code, "co_name", "?")
    filename = getattr(code, "co_filename", "?")
    first = getattr(code, "co_firstlineno", 0)
    lines = []
    if first:
        linecache.checkcache(filename)  # the file may have been edited since (reload)
        lines = linecache.getlines(filename)
    if first and first <= len(lines) and _BLOCK_START.match(lines[first - 1]):
        try:
            block = inspect.getblock(lines[first - 1:])
        except (SyntaxError, tokenize.TokenError):
            block = lines[first - 1:first]
    else:
        try:
            block, first = inspect.getsourcelines(code)  # type: ignore[arg-type]
        except (OSError, TypeError):
            block = lines[first - 1:first] if first else []
    return Closure(name, filename, first, tuple(line.rstrip("\n") for line in block), default)


# the first line of a block, as `inspect.findsource` looks for it
_BLOCK_START = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")


def record(
    path: str | os.PathLike | Scenario,
    *,
    seed: int = 0,
    max_nodes: int = DEFAULT_MAX_NODES,
    timeout: float | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_create: OnCreate | None = None,
    before_backward: BeforeBackward | None = None,
    inline: bool = True,
) -> Trace:
    """Run the scenario and return its trace. Raises ScenarioLoadError if it cannot run.
    The hooks and `inline` are `Recorder`'s."""
    scenario = path if isinstance(path, Scenario) else load_scenario(path)
    recorder = Recorder(
        scenario, seed=seed, max_nodes=max_nodes, timeout=timeout, on_progress=on_progress,
        on_create=on_create, before_backward=before_backward, inline=inline,
    )
    return recorder.run()
