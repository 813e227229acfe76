"""The one decoder of the record table (`mgtui.trace.table`): a saved file's records
and the runner's live stream, read one at a time into a `TraceBuilder`
(`RecordDecoder`)."""

from __future__ import annotations

from typing import Callable

from mgtui.trace import Trace, TraceBuilder, TraceError, TraceFormatError
from mgtui.trace import array_records, engine_kind, fields
from mgtui.trace.load_limits import LoadLimits
from mgtui.trace.table import (
    ARRAYS,
    CHUNK_TAGS,
    CLOSURE,
    END,
    EVENTS,
    EXIT,
    HEADER,
    JOB_RESULT,
    LABELS,
    NAMES,
    NODES,
    NOT_RUN,
    VALUES,
    VERSION,
    WRITES,
    decode_arrays,
    decode_chunk,
    inflated_arrays,
    json_of,
)


def add_names(builder: TraceBuilder, pairs: object) -> None:
    """The names of an M record, [[id, name], ...], checked."""
    for pair in fields.seq(pairs, "names"):
        nid, name = (list(fields.seq(pair, "names")) + [None, None])[:2]
        builder.add_name(nid, name)


def add_labels(builder: TraceBuilder, pairs: object) -> None:
    """The labels of an L record, [[id, label], ...], checked."""
    for pair in fields.seq(pairs, "labels"):
        nid, label = (list(fields.seq(pair, "labels")) + [None, None])[:2]
        builder.relabel(nid, label)


class RecordDecoder:
    """Records, one at a time, into a `TraceBuilder`: a saved file and the runner's
    live stream are both read through this, record by record, whatever their tag.

    The H record makes the builder; C, N, E, W, M, V and L add to it (each chunk is
    checked as it is added, once the writes its events start at have come, while it
    is fresh in the cache); Z is kept as `end`. X, R and Q are about the run, not its
    trace: kept as `not_run`, `job_result` and `exit_code`, and need no header.

    With `limits` (a file's: `mgtui.trace.load_limits`), every record is charged to them
    before it is read: a chunk from the counts it declares, JSON by its length."""

    def __init__(self, version: int = VERSION, limits: LoadLimits | None = None) -> None:
        self.version = version  # of the file or stream (the chunks' layout)
        self.limits = limits
        self.builder: TraceBuilder | None = None
        self.end: dict | None = None  # the Z record
        self.not_run: dict | None = None  # the X record: {"message", "detail"}
        self.job_result: object = None  # the R record
        self.exit_code: object = None  # the Q record's code

    def take(self, tag: str, payload: bytes) -> None:
        """Decode one record; TraceFormatError naming what is wrong with it."""
        read = _READERS.get(tag)
        if read is None:
            raise TraceFormatError("record", f"unknown tag {tag!r}")
        if self.limits is not None and tag not in CHUNK_TAGS and tag != ARRAYS:
            self.limits.take_json(payload)
        read(self, tag, payload)

    def _trace_builder(self, tag: str) -> TraceBuilder:
        if self.builder is None:
            raise TraceFormatError(f"record {tag}", "comes before the header")
        return self.builder

    def _header(self, tag: str, payload: bytes) -> None:
        if self.builder is not None:
            raise TraceFormatError(f"record {tag}", "a second header")
        head = fields.obj(json_of(tag, payload), "header")
        self.builder = TraceBuilder(*(fields.text(head.get(k), f"header.{k}")
                                      for k in ("scenario", "title", "notes", "source")))
        if "engine" in head:  # (older files and streams do not say: `engine_kind.infer`)
            self.builder.engine = engine_kind.checked_kind(head["engine"], "header.engine")

    def _closure(self, tag: str, payload: bytes) -> None:
        builder = self._trace_builder(tag)
        builder.add_closure(fields.closure(json_of(tag, payload),
                                           f"closures[{len(builder.closures)}]"))

    def _arrays(self, tag: str, payload: bytes) -> None:
        if self.version < 3:
            raise TraceFormatError(f"record {tag}", f"in a version {self.version} trace")
        if self.version >= 5:  # (columns, taken whole: no object a value)
            array_records.add_to(self._trace_builder(tag),
                                 array_records.decode(inflated_arrays(payload, self.limits),
                                                      self.limits))
            return
        self._trace_builder(tag).add_arrays(decode_arrays(payload, self.limits, self.version))

    def _chunk(self, tag: str, payload: bytes) -> None:
        builder = self._trace_builder(tag)
        builder.add(decode_chunk(tag, payload, self.version, self.limits))
        if builder.consistent:
            builder.validate()  # a chunk at a time, while it is fresh in the cache

    def _names(self, tag: str, payload: bytes) -> None:
        add_names(self._trace_builder(tag), json_of(tag, payload))

    def _values(self, tag: str, payload: bytes) -> None:
        builder = self._trace_builder(tag)
        for event, pairs in fields.call_values(json_of(tag, payload)):
            builder.add_values(event, pairs)

    def _labels(self, tag: str, payload: bytes) -> None:
        add_labels(self._trace_builder(tag), json_of(tag, payload))

    def _end(self, tag: str, payload: bytes) -> None:
        builder = self._trace_builder(tag)
        self.end = fields.obj(json_of(tag, payload), "end")
        if "engine" in self.end:
            builder.engine = engine_kind.checked_kind(self.end["engine"], "end.engine")

    def _not_run(self, tag: str, payload: bytes) -> None:
        x = fields.obj(json_of(tag, payload), "not run")
        self.not_run = {"message": fields.text(x.get("message"), "not run.message"),
                        "detail": fields.text(x.get("detail"), "not run.detail")}
        if "kind" in x:  # (`NotAGraph`: it ran, but recorded no node)
            self.not_run["kind"] = fields.text(x["kind"], "not run.kind")

    def _job_result(self, tag: str, payload: bytes) -> None:
        self.job_result = json_of(tag, payload)

    def _exit(self, tag: str, payload: bytes) -> None:
        self.exit_code = fields.obj(json_of(tag, payload), "exit").get("code")

    # -- the end -------------------------------------------------------------------------
    def error(self) -> TraceError | None:
        """The scenario's error, as the end record gives it (None without one)."""
        if self.end is None or self.builder is None:
            return None
        return fields.error(self.end.get("error"), self.builder.event_count)

    def output(self) -> str:
        """What the scenario printed, as the end record gives it ("" without one)."""
        return "" if self.end is None else fields.text(self.end.get("output"), "output")

    def passes(self) -> list[tuple[str, int, int]] | None:
        """The passes the end record gives (None: the trace finds them)."""
        given = None if self.end is None else self.end.get("passes")
        return None if given is None else fields.passes(given)

    def trace(self) -> Trace:
        """The whole trace (of a file: its header and end record must both be there),
        checked before it is built."""
        builder = self.builder
        if builder is None or self.end is None:
            raise TraceFormatError("file", "is cut short: no header or no end record")
        error, passes = self.error(), self.passes()
        builder.validate(passes, error)
        return builder.build(error, self.output(), passes, last=True)


_READERS: dict[str, Callable[[RecordDecoder, str, bytes], None]] = {
    HEADER: RecordDecoder._header,
    CLOSURE: RecordDecoder._closure,
    NODES: RecordDecoder._chunk,
    EVENTS: RecordDecoder._chunk,
    WRITES: RecordDecoder._chunk,
    NAMES: RecordDecoder._names,
    VALUES: RecordDecoder._values,
    ARRAYS: RecordDecoder._arrays,
    END: RecordDecoder._end,
    LABELS: RecordDecoder._labels,
    NOT_RUN: RecordDecoder._not_run,
    JOB_RESULT: RecordDecoder._job_result,
    EXIT: RecordDecoder._exit,
}
