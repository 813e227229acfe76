"""Every recording runs the scenario in a child process of its own.

The child (`python -m mgtui.runner`) records the scenario and streams the trace to the
parent over a pipe of its own, as the binary trace records of `mgtui.tracefile`, while
the scenario still runs. Its stdout and stderr go to another pipe, so nothing the
scenario prints, redirects or leaves running can corrupt the trace. The parent builds
the trace as the records arrive (`Run.snapshot()` shows it while it grows), and however
the child ends — finished, raised, timed out, interrupted, out of memory, `os._exit`,
a crash, a thread that never ends — the parent ends the child's whole process group,
keeps the trace up to that point, and says in one sentence what happened.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from mgtui import fields, tracefile
from mgtui.errors import ScenarioLoadError
from mgtui.safe import bounded
from mgtui.trace import Trace, TraceBuilder, TraceError, TraceFormatError

GRACE = 1.0  # seconds a child gets to send what it has before its group is killed
DEFAULT_MAX_MEMORY = 8 << 30  # bytes of address space for a child (--max-memory)
OUTPUT_BUDGET = 200_000  # characters of scenario output kept (head and tail)
FLUSH_EVERY = 0.05  # seconds between the child's stream flushes


UI_FIRST = 5  # `RunSpec.nice` for the app's runs


@dataclass(frozen=True)
class RunSpec:
    """What the child runs, as it travels to it (JSON on its stdin)."""

    path: str
    seed: int = 0
    max_nodes: int = 2_000_000
    timeout: float | None = None
    max_memory: int | None = DEFAULT_MAX_MEMORY
    argv: tuple[str, ...] = ()
    job: str | None = None  # "module:function" giving the doctor's hooks, in the child
    job_args: dict = field(default_factory=dict)
    # How much lower the child's CPU priority is than this process's: the app's runs
    # (its UI comes before the recording on a busy machine); 0 for the headless modes.
    nice: int = 0

    def to_json(self) -> str:
        d = dict(self.__dict__)
        d["argv"] = list(self.argv)
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> RunSpec:
        d = json.loads(text)
        d["argv"] = tuple(d.get("argv", ()))
        return cls(**d)


@dataclass
class RunResult:
    """How a run ended. (A scenario that could not run at all raises ScenarioLoadError.)"""

    trace: Trace
    finished: bool  # the scenario ran to its end (it may still have raised)
    message: str  # one sentence when it did not finish, else ""
    job_result: object = None  # what the job's hooks reported (the doctor's probe)


# -- the parent --------------------------------------------------------------------------


class Run:
    """One child process recording one scenario. `start()`, then `wait()`; meanwhile
    `snapshot()` gives the trace so far and `cancel()` stops it."""

    def __init__(self, spec: RunSpec, on_progress: Callable[[int], None] | None = None) -> None:
        self.spec = spec
        self.on_progress = on_progress
        self._builder: TraceBuilder | None = None
        # Records that build the trace are added to the builder as they arrive until a
        # trace is first asked for (the first frame finds them ready). After that they
        # are kept as they come (compressed) and added when the next one is asked for,
        # so that between the app's updates the reader thread takes no interpreter time
        # from its UI.
        self._pending: list[tuple[str, bytes]] = []
        self._deferring = False
        self._nodes_seen = 0  # nodes in the records that arrived (for on_progress)
        self._end_seen = False  # the end record has arrived (it is added with the rest)
        self._lock = threading.RLock()
        self._end: dict | None = None
        self._load_error: dict | None = None
        self._job_result: object = None
        self._output: list[bytes] = []
        self._output_size = 0
        self._stream_error: str | None = None
        self._head_seen = False
        self._progress_error: BaseException | None = None  # raised by on_progress
        self._exit_code: object = None  # what the scenario passed to os._exit
        self._stop_reason: str | None = None
        self._proc: subprocess.Popen | None = None
        self._final: Trace | None = None  # the whole trace, once built
        self._shown: Trace | None = None  # the last snapshot
        self._outcome: RunResult | None = None
        self._reader: threading.Thread | None = None

    # -- control ---------------------------------------------------------------------------
    def start(self) -> Run:
        read_fd, write_fd = os.pipe()
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8:backslashreplace")
        env.pop("PYTHONSTARTUP", None)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "mgtui.runner", str(write_fd)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                pass_fds=(write_fd,), start_new_session=True, env=env,
                cwd=os.getcwd())
        finally:
            os.close(write_fd)
        if self.spec.nice:
            try:
                os.setpriority(os.PRIO_PROCESS, self._proc.pid,
                               os.getpriority(os.PRIO_PROCESS, 0) + self.spec.nice)
            except (OSError, AttributeError):  # not allowed, or no such call here
                pass
        assert self._proc.stdin is not None
        self._proc.stdin.write(self.spec.to_json().encode())
        self._proc.stdin.close()
        self._reader = threading.Thread(target=self._read, args=(read_fd,), daemon=True,
                                        name="mgtui-runner-reader")
        self._reader.start()
        return self

    def cancel(self, reason: str = "interrupted") -> None:
        """Ask the child to stop (it keeps what it recorded); `wait()` ends it for good."""
        if self._stop_reason is None:
            self._stop_reason = reason
        self._signal(signal.SIGINT)

    def _signal(self, sig: int) -> None:
        """Signal the child's whole process group: the child, and what it started, which
        may outlive it (the group lives on while one of them does, and its id is not
        given to another process meanwhile)."""
        proc = self._proc
        if proc is not None:
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):  # no one left in the group
                pass

    def wait(self) -> RunResult:
        """Wait for the child to end (ending it at the time limit, or a moment after
        `cancel()`), then end its whole process group and give the result. On the main
        thread, ctrl+c meanwhile cancels the run instead of raising: its trace is kept."""
        if self._outcome is not None:
            return self._outcome
        main = threading.current_thread() is threading.main_thread()
        old = signal.signal(signal.SIGINT, self._interrupted) if main else None
        try:
            self._wait_for_child()
            if self._progress_error is not None:
                raise self._progress_error
            result = self._result(self._proc.returncode)
            if result.finished and self._stop_reason is not None:
                result = self._stopped_late(result)
            self._outcome = result
            return result
        finally:
            if main:
                signal.signal(signal.SIGINT, old)

    def _stopped_late(self, result: RunResult) -> RunResult:
        """ctrl+c while the finished trace was being built: the run counts as stopped."""
        message = self._stop_reason or "interrupted"
        error = TraceError("Stopped", f"recording stopped: {message}", None, len(result.trace))
        return RunResult(replace(result.trace, error=error), False, message, result.job_result)

    def _interrupted(self, signum, frame) -> None:
        self.cancel("interrupted")

    def _wait_for_child(self) -> None:
        proc = self._proc
        assert proc is not None and self._reader is not None
        limit = self.spec.timeout
        soft = None if limit is None else time.monotonic() + limit + GRACE
        hard: float | None = None
        while self._reader.is_alive():
            self._reader.join(0.05)
            now = time.monotonic()
            if hard is None and self._stop_reason is not None:
                hard = now + GRACE  # cancelled: the child has a moment to send what it has
            if hard is None and soft is not None and now > soft:
                # the child's own timer did not stop it (a call that never returns)
                self._stop_reason = f"timed out after {limit:g} s (--timeout)"
                self._signal(signal.SIGINT)
                hard = now + GRACE
            if hard is None and self._end_seen and proc.poll() is not None:
                hard = now + GRACE  # it has said all; something it left holds the pipes
            if hard is not None and now > hard:
                self._signal(signal.SIGKILL)
                hard = float("inf")
        # Nothing of its process group may outlive the run (threads that never end,
        # processes it started).
        self._signal(signal.SIGKILL)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a zombie that will not go
            pass

    def run(self) -> RunResult:
        return self.start().wait()

    @property
    def started(self) -> bool:
        return self._proc is not None

    @property
    def pid(self) -> int | None:
        """The child's process id, which is also its process group's."""
        return self._proc.pid if self._proc is not None else None

    def done_within(self, seconds: float) -> bool:
        """Has the child sent all it will send, waiting up to `seconds` for it?"""
        if self._reader is None:
            return False
        self._reader.join(seconds)
        return not self._reader.is_alive()

    # -- the stream ----------------------------------------------------------------------------
    def _read(self, fd: int) -> None:
        """Read the trace stream and the output pipe until both close."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ, "trace")
        sel.register(proc.stdout, selectors.EVENT_READ, "output")
        pending = bytearray()
        open_ = 2
        while open_:
            for key, _ in sel.select():
                chunk = os.read(key.fd, 1 << 20)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_ -= 1
                elif key.data == "output":
                    self._keep_output(chunk)
                else:
                    pending += chunk
                    with self._lock:  # a snapshot sees whole reads: events with their writes
                        self._take_records(pending)
        os.close(fd)

    def _keep_output(self, chunk: bytes) -> None:
        self._output.append(chunk)
        self._output_size += len(chunk)
        if self._output_size > 8 * OUTPUT_BUDGET and len(self._output) > 2:
            text = bounded(b"".join(self._output).decode("utf-8", "backslashreplace"),
                           2 * OUTPUT_BUDGET)
            self._output = [text.encode("utf-8")]
            self._output_size = len(self._output[0])

    def _take_records(self, pending: bytearray) -> None:
        if not self._head_seen:
            if len(pending) < tracefile.HEAD_SIZE:
                return
            try:
                tracefile.check_head(bytes(pending[: tracefile.HEAD_SIZE]))
            except TraceFormatError as exc:
                self._stream_error = str(exc)
                return
            del pending[: tracefile.HEAD_SIZE]
            self._head_seen = True
        while self._stream_error is None:
            try:
                record = tracefile.split_record(pending)
            except TraceFormatError as exc:
                self._stream_error = str(exc)
                return
            if record is None:
                return
            tag, payload = record
            try:
                self._take(tag, payload)
            except (TraceFormatError, ValueError, TypeError) as exc:
                self._stream_error = f"record {tag}: {exc}"

    def _take(self, tag: str, payload: bytes) -> None:
        if tag == "X":  # it could not run at all
            self._load_error = json.loads(payload)
            return
        if tag == "R":
            self._job_result = json.loads(payload)
            return
        if tag == "Q":
            self._exit_code = json.loads(payload).get("code")
            return
        with self._lock:
            self._pending.append((tag, payload))
            if not self._deferring:
                self._add_pending()
        self._end_seen = self._end_seen or tag == "Z"
        if tag == "N" and self.on_progress is not None and self._progress_error is None:
            self._nodes_seen += tracefile.node_count(payload)
            try:
                self.on_progress(self._nodes_seen)
            except BaseException as exc:  # noqa: BLE001 - the caller wants the run to stop
                self._progress_error = exc
                self.cancel("cancelled")

    def _add_pending(self) -> None:
        """Add the records that arrived since the last time to the builder, in order.
        (Under the lock.)"""
        pending, self._pending = self._pending, []
        for tag, payload in pending:
            if self._stream_error is not None:
                return
            try:
                self._add(tag, payload)
            except (TraceFormatError, ValueError, TypeError) as exc:
                self._stream_error = f"record {tag}: {exc}"

    def _add(self, tag: str, payload: bytes) -> None:
        if tag == "H":
            head = fields.obj(json.loads(payload), "header")
            self._builder = TraceBuilder(*(fields.text(head.get(k), f"header.{k}")
                                           for k in ("scenario", "title", "notes", "source")))
        elif self._builder is None:
            raise TraceFormatError(f"record {tag}", "comes before the header")
        elif tag == "C":
            self._builder.add_closure(fields.closure(
                json.loads(payload), f"closures[{len(self._builder.closures)}]"))
        elif tag in ("N", "E", "W"):
            self._builder.add(tracefile.decode_chunk(tag, payload))
        elif tag == "M":
            tracefile.add_names(self._builder, json.loads(payload))
        elif tag == "V":
            for event, pairs in fields.call_values(json.loads(payload)):
                self._builder.add_values(event, pairs)
        elif tag == "L":
            for pair in fields.seq(json.loads(payload), "labels"):
                nid, label = fields.seq(pair, "labels")[:2]
                self._builder.relabel(nid, label)
        elif tag == "Z":
            self._end = fields.obj(json.loads(payload), "end")

    # -- the result ------------------------------------------------------------------------------
    @property
    def output(self) -> str:
        text = b"".join(self._output).decode("utf-8", "backslashreplace")
        return bounded(text, OUTPUT_BUDGET)

    def snapshot(self) -> Trace | None:
        """The trace of what has arrived so far, checked."""
        with self._lock:
            self._add_pending()
            self._deferring = True
            if self._builder is None:
                return self._final
            if not self._builder.consistent:  # a chunk of events whose writes are coming
                return self._shown  # (the next update will show them)
            self._shown = self._checked(None, self.output, trim=False)  # (printed so far)
            return self._shown

    def _checked(self, error: TraceError | None, output: str, trim: bool = True,
                 last: bool = False) -> Trace | None:
        if trim:
            self._builder.trim()  # a child killed in the middle of a flush
        try:
            self._builder.validate(None, error)
        except TraceFormatError as exc:
            self._stream_error = self._stream_error or str(exc)
            return None
        return self._builder.build(error, output, last=last)

    def _result(self, returncode: int) -> RunResult:
        with self._lock:
            self._add_pending()
        if self._load_error is not None:
            raise ScenarioLoadError(self._load_error["message"], self._load_error.get("detail", ""))
        end = self._end
        output = (fields.text(end.get("output"), "output") if end else "") + self.output
        if self._builder is not None:
            with self._lock:
                self._builder.trim()  # a child killed in the middle of a flush
        if self._builder is None:
            why = self._ending(returncode, end)
            raise ScenarioLoadError(f"{self.spec.path}: the scenario's process ended before it "
                              f"started recording: {why}", output.strip()[-2000:])
        error = fields.error(end.get("error"), self._builder.event_count) if end else None
        stopped = error is not None and error.type == "Stopped"  # a limit, or ctrl+c
        finished = (end is not None and not stopped and self._stop_reason is None
                    and self._stream_error is None)
        message = ""
        if stopped and self._stop_reason is None:
            message = error.message.removeprefix("recording stopped: ")
        elif not finished:
            message = self._ending(returncode, end)
            error = TraceError("Stopped", f"recording stopped: {message}", None,
                               self._builder.event_count)
        with self._lock:
            trace = self._checked(error, output, last=True)
            if trace is not None:
                self._final = trace
                self._builder = None  # its columns are the trace's now: not kept twice
                self._shown = None  # nor the last snapshot
        if trace is None:
            raise ScenarioLoadError(f"{self.spec.path}: the recording could not be read: "
                              f"{self._stream_error}")
        return RunResult(trace, finished, message, self._job_result)

    def _ending(self, returncode: int | None, end: dict | None) -> str:
        """What happened to a run that did not finish, in one phrase."""
        if self._stream_error is not None:
            return f"its trace stream was damaged ({self._stream_error})"
        if self._stop_reason is not None:
            return self._stop_reason
        if end is not None:
            return "it stopped"
        if self._exit_code is not None:
            return f"the scenario called os._exit({self._exit_code!r}) before it finished"
        if returncode is not None and returncode < 0:
            sig = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else ""
            if -returncode == signal.SIGKILL:
                return "its process was killed (SIGKILL: out of memory, or from outside)"
            return f"its process crashed ({sig or f'signal {-returncode}'})"
        return (f"the scenario ended its process with os._exit({returncode}) before it "
                "finished" if returncode else "the scenario's process ended before it finished")


def run(path: str | os.PathLike, **options) -> RunResult:
    """Record the scenario at `path` in a child process; see `RunSpec` for the options."""
    return Run(RunSpec(str(Path(path)), **options)).run()


# -- the child ---------------------------------------------------------------------------


def child_main(stream_fd: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; see serve()
    from mgtui.runner_child import serve

    spec = RunSpec.from_json(sys.stdin.read())
    serve(spec, stream_fd)


if __name__ == "__main__":
    child_main(int(sys.argv[1]))
