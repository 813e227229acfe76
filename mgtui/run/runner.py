"""Every recording runs the scenario in a child process of its own.

The child (`python -m mgtui.run.keeper`) is a keeper (`mgtui.run.keeper`): it forks
the scenario's process, which records the scenario (`mgtui.run.child`) and streams the
trace to the parent over a pipe of its own, as the records of `mgtui.trace.table`
(those a saved file holds, and a few of its own), while the scenario still runs. Its
stdout and stderr go to another pipe, so nothing the scenario prints, redirects or
leaves running can corrupt the trace. The parent builds the trace as the records arrive
(`Run.snapshot()` shows it while it grows). However the scenario's process ends —
finished, raised, timed out, interrupted (SIGINT, then SIGTERM and SIGKILL if it will
not stop), out of memory, `os._exit`, a crash, a thread that never ends — the keeper
ends every process it left, even one that left the process group, and the parent keeps
the trace up to that point and says in one sentence what happened. It reads the pipes
for at most a moment after the child has ended."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from mgtui.trace import table as record_table
from mgtui.errors import NotAGraph, ScenarioLoadError
from mgtui.trace.load_limits import LoadLimitError, LoadLimits
from mgtui.trace.decoder import RecordDecoder
from mgtui.run.spec import (  # noqa: F401 - re-exported: callers start runs with RunOptions, tests with RunSpec
    DEFAULT_MAX_MEMORY,
    FLUSH_EVERY,
    INTERNAL_ERROR,
    KILL_AFTER,
    STREAM_CLOSED,
    UI_FIRST,
    RunOptions,
    RunSpec,
)
from mgtui.safe import bounded
from mgtui.trace import Trace, TraceError, TraceFormatError

GRACE = 1.0  # seconds past its time limit, or past the keeper's SIGKILL, a child is given
DRAIN = 1.0  # seconds its pipes are read once the child has ended
OUTPUT_BUDGET = 200_000  # characters of scenario output kept (head and tail)
NO_LIMIT = 1 << 62  # nodes, for a run without --max-nodes
# Characters of the message and of the detail of a run the child says could not run (its
# own: a line, under 1,000 characters for a class it could not record, and the last 2,000
# of the output; a scenario may forge one)
MESSAGE_BUDGET = 4000
DETAIL_BUDGET = 2000


@dataclass
class RunResult:
    """How a run ended. (A scenario that could not run at all raises ScenarioLoadError.)"""

    trace: Trace
    finished: bool  # the scenario ran to its end (it may still have raised)
    message: str  # one sentence when it did not finish, else ""
    job_result: object = None  # what the job's hooks reported (the doctor's probe)


# -- the parent --------------------------------------------------------------------------


class LiveTrace:
    """The child's trace stream as it arrives: split into records, decoded through the
    record table (`mgtui.trace.decoder.RecordDecoder`), the same decoder a saved file is
    read through, into the trace so far.

    Records that build the trace are added as they arrive until a trace is first asked
    for (the first frame finds them ready). After that they are kept as they come
    (compressed) and added when the next one is asked for, so that between the app's
    updates the reader thread takes no interpreter time from its UI. Records about the
    run (X, R, Q: `record_table.RUN_TAGS`) are decoded the moment they arrive.

    With `limits` (`mgtui.trace.load_limits`: the run's --max-nodes and --max-memory),
    the stream is decoded within them as a saved file is, each record checked before
    the memory is spent: a record the scenario forged on the pipe cannot take this
    process past them. A record that would, or that runs out of memory, ends the
    reading (`refused`)."""

    def __init__(self, limits: LoadLimits | None = None) -> None:
        self.decoder = RecordDecoder(limits=limits)
        self.limits = limits
        self.lock = threading.RLock()
        self.error: str | None = None  # what is wrong with the stream: read no further
        self.refused = False  # the error is a limit it would go past, or memory run out
        self.end_seen = False  # the end record has arrived (it is added with the rest)
        self._buffer = bytearray()
        self._head_seen = False
        self._pending: list[tuple[str, bytes]] = []
        self._deferring = False
        self._shown: Trace | None = None  # the last snapshot
        self._final: Trace | None = None  # the whole trace, once built

    @property
    def waiting(self) -> int:
        """How many records arrived that wait for the next snapshot to be added."""
        return len(self._pending)

    def feed(self, data: bytes) -> int:
        """Take bytes of the stream as they arrive (whole records or not); the number
        of nodes in the N records they complete."""
        with self.lock:  # a snapshot sees whole reads: events with their writes
            if self.error is not None:
                return 0  # (read no further: what comes is dropped)
            try:
                self._buffer += data
                return self._take_records()
            except MemoryError:
                self._refuse("there was not enough memory to read it")
                return 0

    def _take_records(self) -> int:
        buf = self._buffer
        if not self._head_seen:
            if len(buf) < record_table.HEAD_SIZE:
                return 0
            try:
                record_table.check_head(bytes(buf[: record_table.HEAD_SIZE]))
            except TraceFormatError as exc:
                self.error = str(exc)
                return 0
            del buf[: record_table.HEAD_SIZE]
            self._head_seen = True
        nodes = 0
        while self.error is None:
            try:
                self._check_length(buf)
                record = record_table.split_record(buf)
            except LoadLimitError as exc:
                self._refuse(f"its next record {exc.problem}")
                break
            except TraceFormatError as exc:
                self.error = str(exc)
                break
            if record is None:
                break
            tag, payload = record
            if tag in record_table.RUN_TAGS:
                self._decode(tag, payload)
                continue
            self._pending.append(record)
            if not self._deferring:
                self.add_pending()
            self.end_seen = self.end_seen or tag == record_table.END
            if tag == record_table.NODES:
                nodes += record_table.node_count(payload)
        return nodes

    def _check_length(self, buf: bytearray) -> None:
        """The length the next record declares, against the memory the limits leave
        (before it is gathered: it is held twice, in the buffer and cut from it)."""
        if self.limits is not None and len(buf) >= record_table.RECORD_HEAD_SIZE:
            _, length = record_table.record_head(bytes(buf[: record_table.RECORD_HEAD_SIZE]))
            self.limits.check(2 * length)

    def _decode(self, tag: str, payload: bytes) -> None:
        try:
            self.decoder.take(tag, payload)
        except LoadLimitError as exc:
            self._refuse(f"record {tag} {exc.problem}")
        except MemoryError:
            self._refuse(f"there was not enough memory to read its record {tag}")
        except (TraceFormatError, ValueError, TypeError) as exc:
            text = str(exc)
            self.error = text if text.startswith(f"record {tag}") else f"record {tag}: {text}"

    def _refuse(self, why: str) -> None:
        self.error, self.refused = why, True
        self._buffer = bytearray()  # (the records before it are kept)

    def add_pending(self) -> None:
        """Decode the records that arrived since the last time, in order."""
        with self.lock:
            pending, self._pending = self._pending, []
            for tag, payload in pending:
                if self.error is not None:
                    return
                self._decode(tag, payload)

    def snapshot(self, output: str) -> Trace | None:
        """The trace of what has arrived so far, checked (with `output`, what was
        printed so far)."""
        with self.lock:
            self.add_pending()
            self._deferring = True
            if self.decoder.builder is None:
                return self._final
            if not self.decoder.builder.consistent:  # a chunk of events whose writes
                return self._shown  # are coming (the next update will show them)
            self._shown = self._checked(None, output)
            return self._shown

    def trim(self) -> None:
        """Drop what a child killed in the middle of a flush left half sent."""
        with self.lock:
            if self.decoder.builder is not None:
                self.decoder.builder.trim()

    def finish(self, error: TraceError | None, output: str) -> Trace | None:
        """The whole trace, built once (None if it does not check: `error` says why)."""
        with self.lock:
            self.trim()
            trace = self._checked(error, output, last=True)
            if trace is not None:
                self._final = trace
                self.decoder.builder = None  # its columns are the trace's now: not kept twice
                self._shown = None  # nor the last snapshot
            return trace

    def _checked(self, error: TraceError | None, output: str,
                 last: bool = False) -> Trace | None:
        builder = self.decoder.builder
        try:
            builder.validate(None, error)
        except TraceFormatError as exc:
            self.error = self.error or str(exc)
            return None
        return builder.build(error, output, last=last)


class Run:
    """One child process recording one scenario. `start()`, then `wait()`; meanwhile
    `snapshot()` gives the trace so far and `cancel()` stops it."""

    def __init__(self, spec: RunSpec, on_progress: Callable[[int], None] | None = None) -> None:
        self.spec = spec
        self.on_progress = on_progress
        self.live = LiveTrace(LoadLimits(NO_LIMIT if spec.max_nodes is None else spec.max_nodes,
                                         spec.max_memory or None, where="stream"))
        self._nodes_seen = 0  # nodes in the records that arrived (for on_progress)
        self._output: list[bytes] = []
        self._output_size = 0
        self._progress_error: BaseException | None = None  # raised by on_progress
        self._stop_reason: str | None = None
        self._proc: subprocess.Popen | None = None
        self._outcome: RunResult | None = None
        self._reader: threading.Thread | None = None
        self._stream_fd: int | None = None
        self._waiting = threading.Lock()  # (held by the thread that waits for the child)

    # -- control ---------------------------------------------------------------------------
    def start(self) -> Run:
        read_fd, write_fd = os.pipe()
        self._stream_fd = write_fd  # (its number in the child too)
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8:backslashreplace")
        env.pop("PYTHONSTARTUP", None)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "mgtui.run.keeper", str(write_fd)],
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
        """Ask the child to stop (it keeps what it recorded). Its keeper sends the scenario
        SIGINT, then SIGTERM and SIGKILL if it goes on (`mgtui.run.keeper`); `wait()` ends it
        for good."""
        if self._stop_reason is None:
            self._stop_reason = reason
        self._ask_keeper(signal.SIGINT)

    def end_now(self, reason: str = "ended") -> None:
        """End the child at once, keeping what has arrived (the app quitting)."""
        if self._stop_reason is None:
            self._stop_reason = reason
        self._ask_keeper(signal.SIGTERM)

    def _ask_keeper(self, sig: int) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None:  # (not reaped: the id is its)
            try:
                os.kill(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def _end_group(self) -> None:
        """SIGKILL the child's whole process group: what is left of it if the keeper was
        killed from outside, or did not end. Only while the keeper is not reaped (its id
        is then not given to another process)."""
        proc = self._proc
        if proc is not None and proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):  # no one left in the group
                pass

    def _child_ended(self) -> bool:
        """Has the keeper ended (without reaping it)?"""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, proc.pid,
                             os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:  # reaped meanwhile
            return True
        except AttributeError:  # pragma: no cover - no waitid here
            return proc.poll() is not None

    def wait(self) -> RunResult:
        """Wait for the child to end (ending it at the time limit, or a moment after
        `cancel()`), then end its whole process group and give the result. On the main
        thread, ctrl+c meanwhile cancels the run instead of raising: its trace is kept.
        (Two threads may wait: the second is given the first one's result.)"""
        main = threading.current_thread() is threading.main_thread()
        old = signal.signal(signal.SIGINT, self._interrupted) if main else None
        try:
            with self._waiting:
                if self._outcome is not None:
                    return self._outcome
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
        backstop: float | None = None
        while self._reader.is_alive():
            self._reader.join(0.05)
            now = time.monotonic()
            if soft is not None and now > soft and self._stop_reason is None:
                # the child's own timer did not stop it (a call that never returns)
                self._stop_reason = f"timed out after {limit:g} s (--timeout)"
                self._ask_keeper(signal.SIGINT)
            if backstop is None and self._stop_reason is not None:
                backstop = now + KILL_AFTER + GRACE
            if backstop is not None and now > backstop:  # the keeper did not end it
                self._end_group()
                backstop = float("inf")
        # (the keeper ended it all; this is for a keeper killed from outside)
        self._end_group()
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
        """Read the trace stream and the output pipe until both close, or for DRAIN
        seconds after the child has ended: a process that got away with them (passed
        to a stranger) does not hold the run open."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ, "trace")
        sel.register(proc.stdout, selectors.EVENT_READ, "output")
        open_, drained = 2, None
        while open_ and (drained is None or time.monotonic() < drained):
            for key, _ in sel.select(0.1):
                chunk = os.read(key.fd, 1 << 20)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_ -= 1
                elif key.data == "output":
                    self._keep_output(chunk)
                else:
                    self._progress(self.live.feed(chunk))
                    if self.live.refused and self._stop_reason is None:
                        self.cancel(self.stream_refused())
            if drained is None and self._child_ended():
                drained = time.monotonic() + DRAIN
        sel.close()
        os.close(fd)
        proc.stdout.close()

    def stream_refused(self) -> str:
        """Why the trace stream was read no further (`LiveTrace.refused`), in a phrase."""
        return f"mgtui stopped reading the scenario's trace stream: {self.live.error}"

    def _keep_output(self, chunk: bytes) -> None:
        self._output.append(chunk)
        self._output_size += len(chunk)
        if self._output_size > 8 * OUTPUT_BUDGET and len(self._output) > 2:
            text = bounded(b"".join(self._output).decode("utf-8", "backslashreplace"),
                           2 * OUTPUT_BUDGET)
            self._output = [text.encode("utf-8")]
            self._output_size = len(self._output[0])

    def _progress(self, nodes: int) -> None:
        """Tell `on_progress` how many nodes have arrived, when more have."""
        if not nodes or self.on_progress is None or self._progress_error is not None:
            return
        self._nodes_seen += nodes
        try:
            self.on_progress(self._nodes_seen)
        except BaseException as exc:  # noqa: BLE001 - the caller wants the run to stop
            self._progress_error = exc
            self.cancel("cancelled")

    # -- the result ------------------------------------------------------------------------------
    @property
    def output(self) -> str:
        text = b"".join(self._output).decode("utf-8", "backslashreplace")
        return bounded(text, OUTPUT_BUDGET)

    def snapshot(self) -> Trace | None:
        """The trace of what has arrived so far, checked."""
        return self.live.snapshot(self.output)  # (printed so far)

    def _result(self, returncode: int) -> RunResult:
        live = self.live
        decoder = live.decoder
        live.add_pending()
        if decoder.not_run is not None:
            x = decoder.not_run  # (NotAGraph: it ran, but recorded no node)
            error = NotAGraph if x.get("kind") == NotAGraph.kind else ScenarioLoadError
            raise error(_quoted(x["message"], MESSAGE_BUDGET),
                        _quoted(x["detail"], -DETAIL_BUDGET))
        end = decoder.end
        output = decoder.output() + self.output
        live.trim()
        if decoder.builder is None:
            why = self._ending(returncode, end)
            raise ScenarioLoadError(f"{self.spec.path}: the scenario's process ended before it "
                                    f"started recording: {why}", output.strip()[-2000:])
        error = decoder.error()
        stopped = error is not None and error.type == "Stopped"  # a limit, or ctrl+c
        finished = (end is not None and not stopped and self._stop_reason is None
                    and live.error is None)
        message = ""
        if stopped and self._stop_reason is None:
            message = error.message.removeprefix("recording stopped: ")
        elif not finished:
            message = self._ending(returncode, end)
            error = TraceError("Stopped", f"recording stopped: {message}", None,
                               decoder.builder.event_count)
        trace = live.finish(error, output)
        if trace is None:
            raise ScenarioLoadError(f"{self.spec.path}: the recording could not be read: "
                                    f"{live.error}")
        return RunResult(trace, finished, message, decoder.job_result)

    def _ending(self, returncode: int | None, end: dict | None) -> str:
        """What happened to a run that did not finish, in one phrase."""
        if self.live.refused:
            return self.stream_refused()
        if self.live.error is not None:
            return f"its trace stream was damaged ({self.live.error})"
        if self._stop_reason is not None:
            if end is None and returncode in (-signal.SIGTERM, -signal.SIGKILL):
                sig = signal.Signals(-returncode).name
                return (f"{self._stop_reason}; the scenario did not stop when asked, so its "
                        f"process was killed ({sig})")
            return self._stop_reason
        if end is not None:
            return "it stopped"
        exit_code = self.live.decoder.exit_code
        if returncode == STREAM_CLOSED:
            return (f"the scenario closed its stream to mgtui (file descriptor "
                    f"{self._stream_fd}), so the recording ended there")
        if exit_code is not None:
            return f"the scenario called os._exit({exit_code!r}) before it finished"
        if returncode == INTERNAL_ERROR:
            return ("mgtui's recording process failed, in mgtui's own code, not the "
                    f"scenario's{_last_line(self.output)}")
        if returncode is not None and returncode < 0:
            sig = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else ""
            if -returncode == signal.SIGKILL:
                return "its process was killed (SIGKILL: out of memory, or from outside)"
            return f"its process crashed ({sig or f'signal {-returncode}'})"
        return (f"the scenario ended its process with os._exit({returncode}) before it "
                "finished" if returncode else "the scenario's process ended before it finished")


def _last_line(output: str) -> str:
    """`: RuntimeError: …`, the last line of a traceback in the output ("" if none)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return f": {bounded(lines[-1], 300)}" if lines else ""


def _quoted(text: str, budget: int) -> str:
    """At most `abs(budget)` characters of `text`: its head (its tail for a negative
    budget), and how long it was."""
    if len(text) <= abs(budget):
        return text
    cut = f"… ({len(text):,} characters)"
    return f"{text[:budget]}{cut}" if budget > 0 else f"{cut} {text[budget:]}"


def start_run(path: str | os.PathLike, options: RunOptions = RunOptions(), *,
              job: Callable[..., object] | None = None, job_args: dict | None = None,
              on_progress: Callable[[int], None] | None = None) -> Run:
    """The one place a recording starts: the scenario at `path`, run in a child process
    as `options` say, with the job `job` makes from `job_args` there (the doctor's), if
    any. `wait()` on the run gives how it ended."""
    return Run(options.spec(str(Path(path)), job, job_args), on_progress=on_progress).start()


def run(path: str | os.PathLike, *, on_progress: Callable[[int], None] | None = None,
        **options) -> RunResult:
    """Record the scenario at `path` in a child process and wait for it; see `RunOptions`
    for the options."""
    return start_run(path, RunOptions(**options), on_progress=on_progress).wait()
