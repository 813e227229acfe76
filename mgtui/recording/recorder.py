"""Run a scenario file and record what it does to its `Value`s into a `Trace`.

The recorder observes from outside. Any class whose `__init__` stores a number, a grad,
its inputs and a backward callable, whatever it calls them (`mgtui.recording.shapes`: `data` or
`value`, `_prev` or `parents`, ...; an op is optional), is instrumented for the length of
the run by the first probe that takes it (`mgtui.recording.classes`, the run's Value
classes): where its fields go by micrograd's names and its source can be rewritten, the
recording is inlined into its code (`mgtui.recording.inline.probe`); otherwise, or with
`inline=False`, it gets hooks (`mgtui.recording.dict_hooks`, or
`mgtui.recording.slots_hooks` for a class with `__slots__`). Classes that look like
autograd values but whose fields cannot be told are counted, not recorded:
`unrecorded()` says why a run that made them, or made no node, must not be shown.
Every probe is handed the run's `mgtui.recording.context.RecordingContext`, not the
recorder, and writes into its one store (`mgtui.recording.store.Records`), from which
`finish()` builds the trace, as the runner's child streams it (`mgtui.run.child`); the
nodes are named by `mgtui.recording.naming`.

The `Recorder` itself keeps the lifecycle: the interpreter set up and put back
(`mgtui.recording.sandbox`), the limits (nodes, timeout, cancel), and the trace at the end.
"""

from __future__ import annotations

import ctypes
import gc
import io
import os
import signal
import threading
import traceback
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from mgtui.defaults import DEFAULT_MAX_NODES, GC_GEN0_THRESHOLD
from mgtui.errors import ScenarioLoadError
from mgtui.recording.classes import ValueClasses
from mgtui.recording.context import RecordingContext
from mgtui.recording.dict_hooks import DictHooks
from mgtui.recording.extras import missing_extra
from mgtui.recording.naming import Namer, names_of_run
from mgtui.recording.nodes import node_id_reader
from mgtui.recording.probes import (
    BeforeBackward,
    Hooks,
    LineFinder,
    OnBackward,
    OnCreate,
    Probe,
    StopRecording,
    looks_like_value,
    ordered,
)
from mgtui.recording.sandbox import Isolation, fresh_main, sandboxed
from mgtui.recording.scenario import Scenario, load_scenario
from mgtui.recording.shapes import ShapeFinder, project_fields
from mgtui.recording.slots_hooks import NodeIds, SlotsHooks, SlotsNode, keeps_fields_in_slots, node_dict
from mgtui.recording.store import ID, Mark, Records, closure_source
from mgtui.recording.torch_watch import TorchWatch
from mgtui.trace import Trace, TraceBuilder, TraceError
from mgtui.trace.engine_kind import ARRAY, SCALAR, TORCH

MGTUI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
STOP_RETRY = 0.002  # seconds until a stop that landed in mgtui's own code is tried again

__all__ = [
    "DEFAULT_MAX_NODES", "GC_GEN0_THRESHOLD", "ID", "Recorder", "Scenario",
    "ScenarioLoadError", "SlotsNode", "StopRecording", "closure_source", "keeps_fields_in_slots",
    "load_scenario", "looks_like_value", "node_dict", "ordered", "record",
]


class Recorder:
    """One recording of one scenario. Use `record()` unless you need `cancel()`.

    `on_create`, `before_backward`, `on_backward` and `on_progress` are the caller's
    hooks (`mgtui.recording.probes.Hooks`: what they are given, and when). `inline=False` records
    every class through the hooks, never rewriting code. `capture_output=False` leaves
    the scenario's stdout and stderr where they are (the runner's child sends them to
    the parent on a pipe of their own), and `argv` is what follows the script's path in
    its `sys.argv`. `records` is the store to write into (a fresh one by default).
    `fields` names the fields of Value classes the detector cannot tell (role ->
    attribute, `mgtui.recording.shapes`), over those `[tool.mgtui] fields` of the `pyproject.toml`
    above the scenario names, if any (a bad one raises `mgtui.recording.shapes.FieldsOptionError`).
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
        on_function: Callable[[object], None] | None = None,
        capture_output: bool = True,
        argv: Sequence[str] = (),
        inline: bool = True,
        records: Records | None = None,
        fields: dict[str, str] | None = None,
    ) -> None:
        self.scenario = scenario
        project = project_fields(scenario.path.parent) if scenario.path.is_file() else {}
        shapes = ShapeFinder({**project, **(fields or {})})
        self.capture_output = capture_output
        self.argv = tuple(argv)
        self.seed = seed
        self.timeout = timeout
        self.records = Records() if records is None else records
        self.hooks = Hooks(on_create, before_backward, on_backward,
                           packing(self.records, on_progress), on_function)
        self._thread_id: int | None = None  # the thread `cancel()` may interrupt
        self._lock = threading.Lock()
        self._old_alarm = None  # SIGALRM's handler before ours, while ours is installed
        self._posted = False  # cancel() has posted StopRecording to the recording thread
        self._retrying = False  # a stop is to be tried again (`stop_here`): SIGALRM is due
        # The runner's child, which ends without collecting again: the heap the scenario
        # leaves is frozen as it ends, before the collector's threshold is put back (a
        # full collection of a big graph there took 0.5 s, past the keeper's SIGTERM).
        self.freeze_at_end = False
        self._make_probes(inline, max_nodes, shapes)

    def _make_probes(self, inline: bool, max_nodes: int, shapes: ShapeFinder) -> None:
        """The tables every probe shares (`context`), then the probes, in the order they
        are offered a class: the inlined recording first, where the code can be
        rewritten; and the Value classes, which hands each class to one of them."""
        from mgtui.recording.inline.rewrite import scenario_rewrite
        from mgtui.recording.inline.probe import Inliner

        scenario, records = self.scenario, self.records
        rewrite = scenario_rewrite(scenario) if inline else None
        self.slots_ids = NodeIds()  # the nodes of `__slots__` classes, by address
        self.node_id = node_id_reader(self.slots_ids)
        class_codes: dict[int, object] = {}
        # the namer reads the code that runs: the scenario's, rewritten or not
        namer = Namer(scenario.code if rewrite is None else rewrite.code,
                      scenario.source, class_codes, self.node_id,
                      names=(records.name_ids, records.name_texts))
        records.forgetting.append(namer.forget_since)
        lines = LineFinder(str(scenario.path.resolve()), class_codes, namer.spots,
                           namer.direct)
        context = self.context = RecordingContext(
            scenario, records, self.hooks, max_nodes, namer, lines, self.node_id)
        self.inliner: Inliner | None = Inliner(context, rewrite) if inline else None
        if self.inliner is not None:
            context.inlined_codes = self.inliner.codes
        slots_hooks, dict_hooks = SlotsHooks(context, self.slots_ids), DictHooks(context)
        self.value_classes = context.value_classes = ValueClasses(
            context, shapes, self.inliner, slots_hooks, dict_hooks)
        self.torch = TorchWatch(context)  # PyTorch, once the scenario has it
        self.probes: list[Probe] = [p for p in (self.inliner, slots_hooks, dict_hooks,
                                                self.torch) if p is not None]

    @property
    def stop_reason(self) -> str | None:
        """Why the run stops (a limit, a cancel), once it is to stop."""
        return self.context.stop_reason

    @stop_reason.setter
    def stop_reason(self, reason: str | None) -> None:
        self.context.stop_reason = reason

    @property
    def globals(self) -> dict:
        """The scenario's namespace, once it runs (names come from there)."""
        return self.context.globals

    @globals.setter
    def globals(self, scope: dict) -> None:
        self.context.globals = scope

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
            self.stop_here(frame)

    def stop_here(self, frame) -> None:
        """From a signal handler on the scenario's thread: stop the run by raising
        `StopRecording` in `frame`, the code the signal interrupted; but not inside
        mgtui's own code (a pack of the record store, a probe between two rows of one
        record), which an exception there would leave half done: there it is tried
        again a moment later (SIGALRM), by when that code has returned to the scenario's."""
        if frame is not None and frame.f_code.co_filename.startswith(MGTUI_DIR) \
                and self._old_alarm is not None:
            self._retrying = True
            signal.setitimer(signal.ITIMER_REAL, STOP_RETRY)
            return
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

    # -- the classes (`mgtui.recording.classes`) ------------------------------------------
    def instrument(self, cls: type, defined_now: bool = False) -> None:
        """(`mgtui.recording.sandbox`) Hand `cls` to a probe if it is a Value class."""
        self.value_classes.instrument(cls, defined_now)

    def unrecorded(self) -> str | None:
        """Why this run, which has ended, must not be shown as recorded; None if it may
        be (`ValueClasses.unrecorded`)."""
        return self.value_classes.unrecorded()

    def start(self) -> None:
        """(`mgtui.recording.sandbox`) Instrument the classes loaded so far, and from now on
        rewrite what is imported."""
        self.value_classes.instrument_loaded()
        if self.inliner is not None:
            self.inliner.start()
        self.torch.start()

    def stop(self) -> None:
        """(`mgtui.recording.sandbox`) Put every class and function back."""
        for probe in self.probes:
            probe.detach()
        self.value_classes.restore()

    # -- running -----------------------------------------------------------------------
    def run(self) -> Trace:
        """Run the scenario once and build its trace."""
        error, output = self.execute()
        try:
            return self.finish(error, output)
        finally:
            self.slots_ids.release()

    def execute(self) -> tuple[TraceError | None, str]:
        """Run the scenario once, leaving its records in `records`: (the error, its
        output). The runner's child streams the records and never builds a trace of its
        own. Recordings take turns: the hooks are class-wide."""
        out = io.StringIO()
        path = str(self.scenario.path.resolve())
        main_module = fresh_main(path)
        self.globals = main_module.__dict__
        isolation = Isolation(main=main_module, argv=[path, *self.argv],
                              path=os.path.dirname(path), seed=self.seed, no_stdin=True,
                              output=out if self.capture_output else None)
        with sandboxed(self, isolation), self._limits_armed():
            error = self._execute(main_module.__dict__)
        return error, out.getvalue()

    @contextmanager
    def _limits_armed(self) -> Iterator[None]:
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
                if self._retrying:  # (a retry still due would reach the handler before)
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    self._retrying = False
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
                if self.freeze_at_end:
                    gc.freeze()
        except SystemExit as exc:
            if exc.code not in (None, 0):
                return self.trace_error(exc, "SystemExit", f"sys.exit({exc.code!r}) called")
        except StopRecording as exc:
            reason = self.stop_reason or str(exc) or "stopped"
            return self.trace_error(exc, "Stopped", f"recording stopped: {reason}")
        except ModuleNotFoundError as exc:  # (an extra not installed: says which)
            return self.trace_error(exc, type(exc).__name__, missing_extra(exc) or str(exc))
        except BaseException as exc:  # noqa: BLE001 - the scenario's error is data
            if isinstance(exc, KeyboardInterrupt) and self.stop_reason is None:
                self.stop_reason = "interrupted"
                return self.trace_error(exc, "Stopped", "recording stopped: interrupted")
            return self.trace_error(exc, type(exc).__name__, str(exc))
        return None

    def trace_error(self, exc: BaseException, type_name: str, message: str) -> TraceError:
        """`exc` as the trace's error, at the last scenario line its traceback passed."""
        line = None
        path = str(self.scenario.path.resolve())
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            if frame.f_code.co_filename == path:
                line = lineno
        return TraceError(type_name, message, line, self.records.event_count())

    # -- the trace ---------------------------------------------------------------------
    @property
    def engine(self) -> str:
        """The engine that recorded the run (`mgtui.trace.engine_kind`): torch if the
        torch engine's probe recorded it, array if the class probes took an array value,
        else scalar."""
        if self.torch.recorded:
            return TORCH
        return ARRAY if self.records.arrays.seen else SCALAR

    def finish(self, error: TraceError | None, output: str,
               node_id: Callable[[object], int | None] | None = None) -> Trace:
        """The trace of the records: the chunks the runner's child would stream, the
        labels set late, the names found (`node_id`: see `resolve_names`), the closures."""
        scenario, records = self.scenario, self.records
        names = self.resolve_names(node_id)
        builder = TraceBuilder(str(scenario.path), scenario.title, scenario.notes, scenario.source)
        builder.engine = self.engine
        upto = records.mark()
        for chunk in records.chunks(Mark(), upto):
            builder.add(chunk)
        for nid, label in records.relabelled(upto.nodes):
            builder.relabel(nid, label)
        for nid, name in names:
            builder.add_name(nid, name)
        for closure in records.closures():
            builder.add_closure(closure)
        return builder.build(error, output)

    def resolve_names(self, node_id: Callable[[object], int | None] | None = None
                      ) -> list[tuple[int, str]]:
        """(id, name) of every node named (`mgtui.recording.naming.names_of_run`); call
        once, after the run."""
        context = self.context
        return names_of_run(context.namer, context.globals, context.records, self.torch,
                            node_id)


def packing(records: Records, on_progress: Callable[[int], None] | None
            ) -> Callable[[int], None]:
    """What the probes call every `PACK_EVERY` nodes: the store packs its fresh rows
    (`Records.pack`), then the caller's `on_progress` is told."""
    pack = records.pack
    if on_progress is None:
        return pack

    def progress(nodes: int) -> None:
        pack()
        on_progress(nodes)

    return progress


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
