"""Saved binary traces (`.mgtrace`): a trace written to a file and read back, checked.

A file is the records of `mgtui.trace.table` (whose docstring tables every tag and its
payload): the head, an H record, the closures, the trace's chunks (N, E and W, deflated
at zlib level 1: most of a trace is small ids and repeated zeros), V when any
`_backward` call read values, and Z. It is read through the same decoder as the
runner's live stream, which a trace saved from a run is written again from. JSON
(`mgtui.trace.export`) stays the format for interchange; this one is for saving and loading
big traces.

The encoders and framing names of `mgtui.trace.table` (`encode_chunk`, `encode_json`,
`check_head`, `HEAD_SIZE`...) are importable from here too.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from mgtui.trace.table import (  # noqa: F401 - re-exported: the child and tests write with these
    HEAD_SIZE,
    HEADER,
    MAGIC,
    MAX_RECORD,
    READS,
    RECORD_HEAD_SIZE,
    VERSION,
    check_head,
    check_length,
    decode_chunk,
    encode_chunk,
    encode_closure,
    encode_end,
    encode_exit,
    encode_head,
    encode_header,
    encode_job_result,
    encode_json,
    encode_labels,
    encode_names,
    encode_not_run,
    encode_values,
    node_count,
    record_head,
    split_record,
)
from mgtui.trace.decoder import RecordDecoder
from mgtui.trace.load_limits import LoadLimits
from mgtui.trace import EventChunk, Trace, TraceFormatError, chunks_of

SUFFIX = ".mgtrace"
READ_PIECE = 1 << 24  # bytes read at a time of a record that claims more
HEADER_MEMORY = 1 << 26  # what reading a header alone may take (a folder's titles are read)


def is_trace_file(path: str | os.PathLike) -> bool:
    """Is this a binary trace: by its name, or by the magic it starts with? (Whether a
    file is a saved trace of either format: `mgtui.trace.export.is_saved_trace`.)"""
    if Path(path).suffix == SUFFIX:
        return True
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


# -- writing ---------------------------------------------------------------------------


def write(trace: Trace, f: BinaryIO,
          on_progress: Callable[[int, int], None] | None = None) -> None:
    """The trace as a file. (Of the table's tags, only those a file holds.)
    `on_progress(steps, all steps)` after each chunk."""
    f.write(encode_header(trace.scenario, trace.title, trace.notes, trace.source, trace.engine))
    for c in trace.closures:
        f.write(encode_closure(c))
    done = 0
    for chunk in chunks_of(trace):
        f.write(encode_chunk(chunk))
        if on_progress is not None and isinstance(chunk, EventChunk):
            done += len(chunk.kinds)
            on_progress(done, len(trace))
    values = list(trace.values_recorded())
    if values:
        f.write(encode_values(values))
    f.write(encode_end(trace.error, trace.output,
                       [(p.kind, p.start, p.end) for p in trace.passes]))


def dumpb(trace: Trace, on_progress: Callable[[int, int], None] | None = None) -> bytes:
    out = io.BytesIO()
    write(trace, out, on_progress)
    return out.getvalue()


# -- reading ---------------------------------------------------------------------------


def records(f: BinaryIO) -> Iterator[tuple[str, bytes]]:
    """(tag, payload) of each record after the header; checks the magic and version."""
    check_head(f.read(HEAD_SIZE), READS)
    return _body(f)


def _body(f: BinaryIO, limits: LoadLimits | None = None) -> Iterator[tuple[str, bytes]]:
    """(tag, payload) of each record after the header (which has been read); with
    `limits`, a record's length is checked against the memory they leave before it
    is read."""
    while True:
        raw = f.read(RECORD_HEAD_SIZE)
        if not raw:
            return
        if len(raw) < RECORD_HEAD_SIZE:
            raise TraceFormatError("file", "ends inside a record")
        tag, length = record_head(raw)
        check_length(tag, length)
        if limits is not None:
            limits.check(length)
        payload = _read(f, length)
        if len(payload) != length:
            raise TraceFormatError("file", "ends inside a record")
        yield tag, payload


def _read(f: BinaryIO, length: int) -> bytes:
    """`length` bytes of `f`, or as many as there are: read a piece at a time, so that a
    record that claims more than the file holds costs no more than the file."""
    if length <= READ_PIECE:
        return f.read(length)
    pieces = []
    while length > 0:
        piece = f.read(min(length, READ_PIECE))
        if not piece:
            break
        pieces.append(piece)
        length -= len(piece)
    return b"".join(pieces)


def decode(f: BinaryIO, on_record: Callable[[RecordDecoder], None] | None = None,
           limits: LoadLimits | None = None) -> RecordDecoder:
    """Every record of a file, through the record table's decoder (not built yet),
    within `limits` (`mgtui.trace.load_limits`: by default, --max-nodes's and
    --max-memory's).

    All in this thread: inflating chunks in another one, ahead of this one, was slower
    on a busy machine (each inflated chunk handed back waits for this thread to let go
    of the GIL, and then for the other to be given a core), and little faster on a
    quiet one."""
    decoder = RecordDecoder(check_head(f.read(HEAD_SIZE), READS),
                            LoadLimits() if limits is None else limits)
    take = decoder.take
    for tag, payload in _body(f, decoder.limits):
        take(tag, payload)
        if on_record is not None:
            on_record(decoder)
    return decoder


def read(f: BinaryIO, on_record: Callable[[RecordDecoder], None] | None = None,
         limits: LoadLimits | None = None) -> Trace:
    """Read a whole binary trace, checked before it is built. `on_record` is given the
    decoder after each record (the app builds the first steps from it, to show them
    while the rest is read)."""
    return decode(f, on_record, limits).trace()


def header_of(path: str | os.PathLike) -> dict[str, str]:
    """A binary trace's header record ("scenario", "title", "notes", "source", and
    "engine": "" for a file too old to say), read without the rest, within HEADER_MEMORY;
    TraceFormatError if the file does not start with one."""
    with Path(path).open("rb") as f:
        limits = LoadLimits(0, HEADER_MEMORY)
        decoder = RecordDecoder(check_head(f.read(HEAD_SIZE), READS), limits)
        tag, payload = next(_body(f, decoder.limits), ("", b""))
        if tag != HEADER:
            raise TraceFormatError("file", "does not start with a header record")
        decoder.take(tag, payload)
    b = decoder.builder
    return {"scenario": b.scenario, "title": b.title, "notes": b.notes, "source": b.source,
            "engine": b.engine or ""}


def loadb(data: bytes, limits: LoadLimits | None = None) -> Trace:
    return read(io.BytesIO(data), limits=limits)


def load(path: str | os.PathLike, limits: LoadLimits | None = None,
         on_progress: Callable[[int, int], None] | None = None) -> Trace:
    """Read the file at `path`; `on_progress(bytes read, file size)` after each record."""
    with Path(path).open("rb") as f:
        if on_progress is None:
            return read(f, limits=limits)
        size = os.fstat(f.fileno()).st_size
        return read(f, lambda decoder: on_progress(f.tell(), size), limits)
