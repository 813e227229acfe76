"""The interpreter as a recording should find it, and put back as it was afterwards: one
context manager for a scenario run (in the runner's child, or in-process by
`mgtui.recording.recorder.record`) and for the in-code API's recordings (`mgtui.recording.inprocess`).

Both instrument every Value-like class loaded, and each one defined meanwhile (the
recorder decides which are: `mgtui.recording.shapes`), and
collect garbage less often (every node is in a reference cycle with its `_backward`
closure, so a big graph makes the collector rescan the heap over and over), until its
nodes are seen to hold big arrays (`collect_as_found`). A scenario
file also gets a fresh `__main__`, its own `sys.argv` and `sys.path[0]`, no stdin,
`random` seeded, and its stdout and stderr captured if asked (`Isolation`).
"""

from __future__ import annotations

import builtins
import gc
import io
import random
import sys
import threading
import types
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Protocol

from mgtui.defaults import GC_GEN0_THRESHOLD

# Recordings take turns: the hooks are class-wide. The in-code API's recordings are
# also kept from nesting in one thread (`RecordingError`).
ONE_AT_A_TIME = threading.RLock()
_in_process: list[object] = []  # the in-process recording under way (one at a time)
_found: list[tuple[int, ...]] = []  # the collector's thresholds each sandbox under way found


class RecordingError(RuntimeError):
    """A recording started while another one was under way in this process."""


class Instrumenting(Protocol):
    """What the sandbox asks of a recording (`Recorder`)."""

    def instrument(self, cls: type, defined_now: bool = False) -> None:
        """Instrument `cls` if it is a Value class (`defined_now`: the run defines it)."""

    def start(self) -> None:
        """Instrument the Value classes loaded so far (and start rewriting code)."""

    def stop(self) -> None:
        """Put every class and function back."""


@dataclass
class Isolation:
    """What of the interpreter a scenario file gets of its own (the defaults: nothing,
    for the in-code API, which records the caller's own code where it runs)."""

    main: types.ModuleType | None = None  # a fresh `__main__`
    argv: list[str] | None = None  # its `sys.argv`
    path: str | None = None  # put first on `sys.path`: the scenario's folder
    seed: int | None = None  # `random` seeded with it
    no_stdin: bool = False  # stdin empty, and `input()` raises EOFError
    output: io.StringIO | None = None  # where the recording thread's stdout and stderr go
    in_process: bool = False  # the in-code API's: no other may be under way here


@contextmanager
def sandboxed(rec: Instrumenting, isolation: Isolation) -> Iterator[None]:
    """The interpreter as `isolation` asks, `rec` instrumenting every Value class, until
    the block ends; everything is put back afterwards."""
    with ONE_AT_A_TIME:
        if isolation.in_process:
            if _in_process:
                raise RecordingError("mgtui is recording here already (a mgtui.record() "
                                     "block, or mgtui.check or mgtui.show running): record "
                                     "one at a time, e.g. show or check after the block")
            _in_process.append(rec)
        build_class = builtins.__build_class__
        gc_threshold = gc.get_threshold()

        def build_and_instrument(*args, **kwargs):
            cls = build_class(*args, **kwargs)
            if isinstance(cls, type):
                rec.instrument(cls, True)
            return cls

        try:
            rec.start()
            builtins.__build_class__ = build_and_instrument
            with _isolated(isolation):
                gc.set_threshold(max(gc_threshold[0], GC_GEN0_THRESHOLD), *gc_threshold[1:])
                _found.append(gc_threshold)
                try:
                    yield
                finally:
                    _found.pop()
                    gc.set_threshold(*gc_threshold)
        finally:
            builtins.__build_class__ = build_class
            rec.stop()
            if isolation.in_process:
                _in_process.clear()


def collect_as_found() -> None:
    """Collect garbage as often as before the sandbox under way raised the threshold
    (Python's default: every 700 objects), for the rest of it: its scenario's nodes hold
    big arrays (`mgtui.recording.array_values`). Each step's graph, in cycles with its
    closures, then goes with its arrays within a few steps, as in the plain run, instead
    of piling up over thousands of nodes: hundreds of megabytes, every step's arrays
    in fresh memory, page-faulted in (a float32 step of 200k-element arrays: 1.7x plain
    with the raised threshold, 1.4x without; bench/array_costs_side_by_side.py, issue 32).
    Outside a sandbox: nothing."""
    if _found:
        gc.set_threshold(*_found[-1])


def in_process_recording() -> bool:
    """Is an in-code API recording under way in this process?"""
    return bool(_in_process)


@contextmanager
def _isolated(isolation: Isolation) -> Iterator[None]:
    """A scenario file's own `__main__`, argv, path, stdin, seed and output."""
    saved = (sys.stdout, sys.stderr, sys.stdin, sys.argv, list(sys.path), builtins.input,
             sys.modules.get("__main__"))
    output = isolation.output
    stdout = ThreadOutput(sys.stdout, output) if output is not None else sys.stdout
    stderr = ThreadOutput(sys.stderr, output) if output is not None else sys.stderr
    try:
        if isolation.no_stdin:
            builtins.input = no_input
            sys.stdin = io.StringIO("")
        sys.stdout, sys.stderr = stdout, stderr
        if isolation.argv is not None:
            sys.argv = list(isolation.argv)
        if isolation.path is not None:
            sys.path.insert(0, isolation.path)
        if isolation.main is not None:
            sys.modules["__main__"] = isolation.main
        if isolation.seed is not None:
            random.seed(isolation.seed)
        yield
    finally:
        (_, _, sys.stdin, sys.argv, sys.path[:], builtins.input, main) = saved
        # Put the streams back only if nobody (a Textual app starting or stopping on
        # another thread) swapped them meanwhile; a proxy left in place just passes
        # everything on from now on.
        for proxy in (stdout, stderr) if output is not None else ():
            proxy.detach()
        if sys.stdout is stdout:
            sys.stdout = saved[0]
        if sys.stderr is stderr:
            sys.stderr = saved[1]
        if main is not None:
            sys.modules["__main__"] = main


def fresh_main(filename: str) -> types.ModuleType:
    """A fresh `__main__` for a scenario, as `python FILE` would give it."""
    main_module = types.ModuleType("__main__")
    main_module.__dict__.update({
        "__name__": "__main__",
        "__file__": filename,
        "__builtins__": builtins,
        "__doc__": None,
    })
    return main_module


def no_input(prompt: object = "") -> str:
    """`input()` while a scenario runs."""
    raise EOFError("input() is not available: mgtui records scenarios without a terminal")


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
