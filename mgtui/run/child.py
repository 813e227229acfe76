"""The runner's child: record one scenario and stream its trace to the parent.

This module runs only in the child process that `mgtui.run.runner.Run` starts. A thread
sends whatever the recorder has added every `FLUSH_EVERY` seconds, so the parent has
the trace up to the moment the child ends, however it ends. The child leaves with
`os._exit`, so no thread the scenario started and no `atexit` handler can keep it alive.
"""

from __future__ import annotations

import importlib
import os
import resource
import signal
import sys
import threading
from typing import Protocol

from mgtui.trace import binary as tracefile
from mgtui.recording.call_values import CallValues
from mgtui.recording.probes import Hooks
from mgtui.recording.recorder import Recorder
from mgtui.recording.store import Mark, Records
from mgtui.errors import NotAGraph
from mgtui.run.spec import FLUSH_EVERY, STREAM_CLOSED, RunSpec
from mgtui.recording.scenario import ScenarioLoadError, load_scenario

# The records go down a local pipe to the parent, which inflates them as they arrive and
# keeps none of them: zlib level 0 (stored blocks, still the file format's zlib stream)
# spares the child deflating them (a moons step's 7.6 MB: 47 ms of CPU at level 1, 9 ms
# at 0). A trace saved from the parent is written again, compressed (`tracefile.write`).
STREAM_LEVEL = 0
_exit = os._exit  # the real one: `serve` gives the scenario another, which sends first


class Stream:
    """The pipe to the parent. Writes from the flusher thread and the main thread take
    turns; a parent that has gone away ends the child, and so does a stream the scenario
    closed (`os.closerange`), even if the number is another file's now: STREAM_CLOSED.
    A forked copy of the process (`os.fork`, multiprocessing) sends nothing."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()
        self.pipe = _identity(fd)
        self.owner = os.getpid()

    def send(self, data: bytes) -> None:
        if os.getpid() != self.owner:
            return
        with self.lock:
            if _identity(self.fd) != self.pipe:
                _exit(STREAM_CLOSED)
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self.fd, view)
                except BrokenPipeError:
                    _exit(3)
                except OSError:
                    _exit(STREAM_CLOSED)
                view = view[n:]


def _identity(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class Flusher:
    """Sends the new records of the recording's store (`Records`) every `FLUSH_EVERY`
    seconds: any new closures, custom ops' values, nodes, then the events whose writes
    have all been made, then those writes, then the names found. What it has sent, the
    store lets go (`Records.release`): the child holds only what it has not sent yet."""

    def __init__(self, records: Records, stream: Stream,
                 values: CallValues | None = None) -> None:
        self.records = records
        self.stream = stream
        self.values = values  # what custom ops' `_backward` calls read (`mgtui.recording.call_values`)
        self.values_sent = 0
        self.sent = Mark()  # the records sent
        self.closures = 0  # the closures sent
        self.names = 0  # of the names found (`Records.names`), those looked at
        self.held: list = []  # names of nodes not sent yet
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True, name="mgtui-flusher")

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        while not self.done.wait(FLUSH_EVERY):
            self.flush()

    def stop(self) -> None:
        self.done.set()
        self.thread.join()
        self.flush()

    def flush(self) -> None:
        with self.lock:
            records = self.records
            # The store is held only while the records are cut (the recording's thread
            # does not pack meanwhile), not while they go down the pipe: a parent slow
            # to read would keep the rows fresh, as Python objects, all that time.
            with records.lock:
                upto = records.settled()  # (None while a hook's replay is taken back)
                if upto is None:
                    return
                chunks = records.chunks(self.sent, upto)
                records.release(upto)
            out = [tracefile.encode_closure(c) for c in records.closures(self.closures)]
            self.closures += len(out)
            if self.values is not None and len(self.values.found) > self.values_sent:
                found = self.values.found[self.values_sent:]
                self.values_sent += len(found)
                out.append(tracefile.encode_values(found))
            out += [tracefile.encode_chunk(chunk, STREAM_LEVEL) for chunk in chunks]
            del chunks
            self.sent = upto
            names = self._names()
            if names:
                out.append(tracefile.encode_json(b"M", names))
            if out:
                self.stream.send(b"".join(out))

    def _names(self) -> list[list]:
        """The names confirmed since the last flush, of nodes already sent."""
        found = self.records.names(self.names)
        self.names += len(found)
        new = self.held + found
        sent = self.sent.nodes
        self.held = [pair for pair in new if pair[0] >= sent]
        return [[nid, name] for nid, name in new if nid < sent]


def limit_memory(max_memory: int | None) -> None:
    if not max_memory:
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = max_memory if hard == resource.RLIM_INFINITY else min(max_memory, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):  # pragma: no cover - a platform without the limit
        pass


class Job(Protocol):
    """What a job run in the child (the doctor's probe, a re-run: `mgtui.doctor.jobs`)
    gives it: the recorder's hooks, whether custom ops' values are read too, and what
    to report back to the parent (as JSON) once the run has ended."""

    hooks: Hooks
    reads_values: bool

    def result(self) -> object: ...


def job_of(spec: RunSpec) -> Job | None:
    """The job `spec` names (`job_reference`), made from its arguments."""
    if spec.job is None:
        return None
    module, _, name = spec.job.partition(":")
    make = getattr(importlib.import_module(module), name)
    return make(**spec.job_args)


def child_recorder(scenario, hooks: Hooks = Hooks(), *, reads_values: bool = True,
                   **options) -> tuple[Recorder, CallValues | None]:
    """The recorder the child runs, with a job's hooks and, if `reads_values`, the custom
    ops' values read as each `_backward` begins. (`bench/record_overhead.py` times a
    recording made here.)"""
    values = CallValues() if reads_values else None
    hooks = hooks._replace(on_backward=values) if values is not None else hooks
    recorder = Recorder(scenario, **hooks._asdict(), **options)
    if values is not None:
        values.records = recorder.records
        values.node_id = recorder.node_id
    return recorder, values


def refuse(stream: Stream, message: str, detail: str = "", kind: str = "") -> None:
    """End the child with the run refused: the parent raises `ScenarioLoadError` (or,
    for `kind` "not-a-graph", `NotAGraph`)."""
    stream.send(tracefile.encode_not_run(message, detail, kind))
    os._exit(2)


def _flush_before_failing(flusher: Flusher) -> None:
    """Send what was recorded, if that can be done, on the way out of a failure."""
    try:
        flusher.flush()
    except Exception:  # noqa: BLE001 - the failure being reported matters more
        pass


def serve(spec: RunSpec, fd: int) -> None:
    """Record `spec`'s scenario, sending what it records down `fd` as it goes, then
    its end; never returns (the process ends with `os._exit`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # until there is a recording to stop
    # Leave no bytecode in the user's project: a module edited and run again within the
    # same second, at the same size, would otherwise be read from a stale .pyc.
    sys.dont_write_bytecode = True
    stream = Stream(fd)
    limit_memory(spec.max_memory)
    recorder, values, job = start_recording(spec, stream)
    flusher = Flusher(recorder.records, stream, values)
    error, output = execute(recorder, flusher, stream)
    send_end(spec, stream, recorder, flusher, job, error, output)


def start_recording(spec: RunSpec, stream: Stream):
    """The scenario loaded and its recorder made, the trace's header sent, and SIGINT
    set to stop the recording: (the recorder, its values, the job or None). A scenario
    that cannot be loaded is refused (the process ends)."""
    try:
        scenario = load_scenario(spec.path)
        job = job_of(spec)
        recorder, values = child_recorder(scenario, job.hooks if job else Hooks(),
                                          reads_values=job.reads_values if job else True,
                                          seed=spec.seed,
                                          max_nodes=spec.max_nodes, timeout=spec.timeout,
                                          capture_output=False, argv=spec.argv,
                                          fields=spec.fields)
        recorder.freeze_at_end = True  # (it ends with os._exit: nothing is collected)
        if job is not None and hasattr(job, "records"):  # (a job that reports records)
            job.records = recorder.records
    except ScenarioLoadError as exc:  # (a `[tool.mgtui] fields` that cannot be read too)
        stream.send(tracefile.encode_header(spec.path, "", "", "")[: tracefile.HEAD_SIZE])
        refuse(stream, exc.message, exc.detail)
    stream.send(tracefile.encode_header(str(scenario.path), scenario.title, scenario.notes,
                                        scenario.source))

    def interrupted(signum, frame):
        recorder.stop_reason = recorder.stop_reason or "interrupted"
        if recorder.inliner is not None:  # (the probes stop at their next node too)
            recorder.inliner.interrupt()
        recorder.stop_here(frame)

    signal.signal(signal.SIGINT, interrupted)
    return recorder, values, job


def execute(recorder, flusher: Flusher, stream: Stream):
    """Run the scenario, its records flushed down `stream` as it goes: (its error or
    None, its output). An `os._exit` of the scenario's sends what was recorded first."""
    real_exit = os._exit

    def scenario_exit(code: int = 0) -> None:
        """`os._exit` from the scenario: send what was recorded, and say so, first."""
        flusher.flush()
        stream.send(tracefile.encode_json(b"Q", {"code": code}))
        real_exit(code)

    os._exit = scenario_exit
    flusher.start()
    try:
        error, output = recorder.execute()
    except BaseException:  # mgtui's own failure (keeper._run_child): what was recorded
        os._exit = real_exit  # is sent, and the end is not the scenario's os._exit
        _flush_before_failing(flusher)
        raise
    os._exit = real_exit
    return error, output


def send_end(spec: RunSpec, stream: Stream, recorder, flusher: Flusher, job: Job | None,
             error, output: str) -> None:
    """The recording's end down `stream` (the rest of the records, the nodes named late,
    the job's result, the error and the output), then the process ends. A run that
    recorded nothing it could see is refused: never shown as clean."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # (it sends the rest now: the keeper's SIGTERM waits, its SIGKILL does not)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    unseen = recorder.unrecorded() if error is None else None
    if unseen is not None:  # never shown as a clean run: it was not seen
        flusher.stop()
        refuse(stream, f"{spec.path}: {unseen}", output.strip()[-2000:], NotAGraph.kind)
    recorder.resolve_names()
    flusher.stop()
    late = [list(pair) for pair in recorder.records.relabelled(flusher.sent.nodes)]
    recorder.slots_ids.release()
    end = []
    if late:
        end.append(tracefile.encode_json(b"L", late))
    result = job.result() if job is not None else None
    if result is not None:
        end.append(tracefile.encode_json(b"R", result))
    end.append(tracefile.encode_end(error, output, None, recorder.engine))
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    stream.send(b"".join(end))
    os._exit(0)
