"""The runner's child: record one scenario and stream its trace to the parent.

This module runs only in the child process that `mgtui.runner.Run` starts. A thread
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

from mgtui import tracefile
from mgtui.call_values import CallValues
from mgtui.recorder import (
    EVENT_FIELDS,
    NODE_FIELDS,
    WRITE_FIELDS,
    Recorder,
    ScenarioLoadError,
    StopRecording,
    closure_source,
    floats,
    ints,
    load_scenario,
    strings,
)
from mgtui.runner import FLUSH_EVERY, RunSpec
from mgtui.trace import EventChunk, EventKind, NodeChunk, WriteChunk

from array import array
from itertools import compress

# The records go down a local pipe to the parent, which inflates them as they arrive and
# keeps none of them: zlib level 0 (stored blocks, still the file format's zlib stream)
# spares the child deflating them (a moons step's 7.6 MB: 47 ms of CPU at level 1, 9 ms
# at 0). A trace saved from the parent is written again, compressed (`tracefile.write`).
STREAM_LEVEL = 0

# 1 for the kind of a lone write (a grad or data event), else 0: only theirs carry values
LONE = bytes(int(k in (EventKind.GRAD.code, EventKind.DATA.code)) for k in range(256))


class Stream:
    """The pipe to the parent. Writes from the flusher thread and the main thread take
    turns; a parent that has gone away ends the child."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()

    def send(self, data: bytes) -> None:
        with self.lock:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self.fd, view)
                except BrokenPipeError:
                    os._exit(3)
                view = view[n:]


class Flusher:
    """Sends the recorder's new records: nodes, then the events whose writes have all
    been made, then those writes, then any new closures."""

    def __init__(self, recorder: Recorder, stream: Stream,
                 values: CallValues | None = None) -> None:
        self.rec = recorder
        self.stream = stream
        self.values = values  # what custom ops' `_backward` calls read (`mgtui.call_values`)
        self.values_sent = 0
        self.nodes = self.events = self.writes = self.closures = 0  # records sent
        self.kids = 0
        self.labels: list[str] = []  # as sent
        self.names = 0  # of the recorder's names (`Namer.name_ids`), those looked at
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
            rec = self.rec
            # Take the lengths writes first: an event made after this has its first
            # write at or past it, and is held back until those writes are taken too.
            # Records a `before_backward` hook makes are taken back: wait for it to end.
            replays = rec.replays
            n_writes = len(rec.writes) // WRITE_FIELDS
            n_events = len(rec.events) // EVENT_FIELDS
            n_nodes = len(rec.nodes) // NODE_FIELDS
            if replays % 2 or rec.replays != replays:
                return
            events = rec.events
            while n_events > self.events and events[(n_events - 1) * EVENT_FIELDS + 6] > n_writes * WRITE_FIELDS:
                n_events -= 1
            out = []
            self._closures(out)
            if self.values is not None and len(self.values.found) > self.values_sent:
                found = self.values.found[self.values_sent:]
                self.values_sent += len(found)
                out.append(tracefile.encode_values(found))
            if n_nodes > self.nodes:
                out.append(self._nodes(n_nodes))
            if n_events > self.events:
                out.append(self._events(n_events))
            if n_writes > self.writes:
                out.append(self._writes(n_writes))
            names = self._names()
            if names:
                out.append(tracefile.encode_json(b"M", names))
            if out:
                self.stream.send(b"".join(out))

    def _names(self) -> list[list]:
        """The names confirmed since the last flush, of nodes already sent."""
        namer = self.rec.namer
        n = len(namer.name_texts)  # (each name's id is appended before its text)
        new = self.held + list(zip(namer.name_ids[self.names : n], namer.name_texts[self.names : n]))
        self.names = n
        self.held = [pair for pair in new if pair[0] >= self.nodes]
        return [[nid, name] for nid, name in new if nid < self.nodes]

    def _closures(self, out: list) -> None:
        codes = list(self.rec.codes)
        for code in codes[self.closures :]:
            out.append(tracefile.encode_closure(
                closure_source(code, code in self.rec.default_codes)))
        self.closures = len(codes)

    # Each column is sliced straight out of the recorder's flat lists and converted at C
    # speed (`map` of an int's own method rather than a generator): the flusher runs in
    # the recording process, so its time is the recording's too.
    def _nodes(self, n: int) -> bytes:
        N, nodes = NODE_FIELDS, self.rec.nodes
        a, b = self.nodes * N, n * N
        ends = nodes[a:b:N]
        base = self.kids
        kids = self.rec.kids[base : ends[-1]]
        labels = label_texts(nodes[a + 2 : b : N])
        self.labels.extend(labels)
        self.nodes, self.kids = n, ends[-1]
        return tracefile.encode_chunk(NodeChunk(
            tuple(labels), strings(nodes[a + 1 : b : N]), floats(nodes[a + 3 : b : N]),
            ints(nodes[a + 4 : b : N]), array("i", map(base.__rsub__, ends) if base else ends),
            array("i", kids)),
            STREAM_LEVEL)

    def _events(self, n: int) -> bytes:
        E, events = EVENT_FIELDS, self.rec.events
        a, b = self.events * E, n * E
        self.events = n
        kinds = small_codes(events[a:b:E])
        lone = kinds.tobytes().translate(LONE)  # the before and after of lone writes only
        return tracefile.encode_chunk(EventChunk(
            kinds, array("i", events[a + 1 : b : E]),
            floats(list(compress(events[a + 2 : b : E], lone))),
            floats(list(compress(events[a + 3 : b : E], lone))),
            ints(events[a + 4 : b : E]), array("i", events[a + 5 : b : E]),
            array("i", map(WRITE_FIELDS.__rfloordiv__, events[a + 6 : b : E]))),
            STREAM_LEVEL)

    def _writes(self, n: int) -> bytes:
        W, writes = WRITE_FIELDS, self.rec.writes
        a, b = self.writes * W, n * W
        self.writes = n
        return tracefile.encode_chunk(WriteChunk(
            array("i", writes[a:b:W]), small_codes(writes[a + 1 : b : W]),
            floats(writes[a + 2 : b : W]), floats(writes[a + 3 : b : W]),
            ints(writes[a + 4 : b : W])), STREAM_LEVEL)

    def late_labels(self, labels: list[str]) -> list[list]:
        """The labels that differ from those sent with the nodes."""
        return [[nid, label] for nid, label in enumerate(labels)
                if nid < len(self.labels) and label != self.labels[nid]]


def small_codes(values: list) -> array:
    """A column of event kinds or write fields as signed bytes, through `bytes` (a third
    of the time of `array("b", values)`). They are the recorder's own codes, 0 to 3: never
    past 127, which would read back negative."""
    return array("b", bytes(values))


def label_texts(values: list) -> list:
    """Labels as strings: anything else (None, for a class without labels) becomes ""."""
    if values.count(None) == len(values):
        return [""] * len(values)
    try:
        "".join(values)  # fails unless every value is a str, at C speed
        return values
    except TypeError:
        return [x if isinstance(x, str) else "" for x in values]


def limit_memory(max_memory: int | None) -> None:
    if not max_memory:
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = max_memory if hard == resource.RLIM_INFINITY else min(max_memory, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):  # pragma: no cover - a platform without the limit
        pass


def job_hooks(spec: RunSpec) -> tuple[dict, object]:
    """The hooks of a job (the doctor's probe, nudges or stop), and its result object."""
    if spec.job is None:
        return {}, None
    module, _, name = spec.job.partition(":")
    make = getattr(importlib.import_module(module), name)
    return make(**spec.job_args)


def child_recorder(scenario, hooks: dict, **options) -> tuple[Recorder, CallValues | None]:
    """The recorder the child runs, with a job's hooks and, unless the job says
    `call_values: False`, the custom ops' values read as each `_backward` begins.
    (`bench/record_overhead.py` times a recording made here.)"""
    hooks = dict(hooks)
    values = CallValues() if hooks.pop("call_values", True) else None
    recorder = Recorder(scenario, on_backward=values, **hooks, **options)
    if values is not None:
        values.recorder = recorder
    return recorder, values


def serve(spec: RunSpec, fd: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # until there is a recording to stop
    # Leave no bytecode in the user's project: a module edited and run again within the
    # same second, at the same size, would otherwise be read from a stale .pyc.
    sys.dont_write_bytecode = True
    stream = Stream(fd)
    limit_memory(spec.max_memory)
    try:
        scenario = load_scenario(spec.path)
    except ScenarioLoadError as exc:
        stream.send(tracefile.encode_header(spec.path, "", "", "")[: tracefile.HEAD_SIZE])
        stream.send(tracefile.encode_json(b"X", {"message": exc.message, "detail": exc.detail}))
        os._exit(2)
    hooks, job = job_hooks(spec)
    recorder, values = child_recorder(scenario, hooks, seed=spec.seed,
                                      max_nodes=spec.max_nodes, timeout=spec.timeout,
                                      capture_output=False, argv=spec.argv)
    stream.send(tracefile.encode_header(str(scenario.path), scenario.title, scenario.notes,
                                        scenario.source))

    def interrupted(signum, frame):
        recorder.stop_reason = recorder.stop_reason or "interrupted"
        raise StopRecording(recorder.stop_reason)

    signal.signal(signal.SIGINT, interrupted)
    flusher = Flusher(recorder, stream, values)
    real_exit = os._exit

    def scenario_exit(code: int = 0) -> None:
        """`os._exit` from the scenario: send what was recorded, and say so, first."""
        flusher.flush()
        stream.send(tracefile.encode_json(b"Q", {"code": code}))
        real_exit(code)

    os._exit = scenario_exit
    flusher.start()
    error, output = recorder.execute()
    os._exit = real_exit
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    recorder.resolve_names()
    flusher.stop()
    late = flusher.late_labels(recorder.resolve_labels())
    recorder.slots_ids.release()
    end = []
    if late:
        end.append(tracefile.encode_json(b"L", late))
    if job is not None:
        end.append(tracefile.encode_json(b"R", job.result()))
    end.append(tracefile.encode_end(error, output, None))
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    stream.send(b"".join(end))
    os._exit(0)
