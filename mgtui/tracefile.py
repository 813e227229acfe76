"""The binary trace format: compact, fast to read, and checked field by field.

A file is a magic header and a version, then records. Each record is a one-byte tag,
an 8-byte little-endian length and a payload:

    MGTUI\\0TR  u16 version  u16 flags (0)
    H  header: JSON {"scenario", "title", "notes", "source"}
    C  one `_backward` closure's source: JSON {"name", "filename", "first_line", "lines", "default"}
    N  nodes (zlib):  u32 count, u32 children; data f64[count], lines i32[count],
               child_ends i32[count], child_ids i32[children]; JSON [labels, ops]
               or [labels, ops, names] (the names of `mgtui.naming`; older files have none)
    E  events (zlib): u32 count, u32 lone; kinds i8, nodes i32, lines i32, closures i32,
               write_starts i32 (each [count]); before f64, after f64 (each [lone]: the
               grad and data writes outside `_backward`, the only events with values)
    W  writes (zlib): u32 count; nodes i32, fields i8, before f64, after f64, lines i32
    M  names given late, while a scenario still runs: JSON [[id, name], ...]
    V  values read by `_backward` calls as they began (optional; older files have none):
               JSON [[event, [[name, value], ...]], ...], a value that is not finite as
               "nan", "inf" or "-inf"
    Z  end:    JSON {"error": null | {"type", "message", "line", "after_event"},
               "output": str, "passes": [[kind, start, end], ...]}

The payloads of N, E and W are zlib-compressed (level 1 in a file: most of a trace is
small ids and repeated zeros). The runner's child streams them to its parent at level 0
(stored blocks: the same format, read the same way, without the cost of deflating
records that go down a local pipe and are inflated as they arrive); the parent never
keeps them, and a trace saved from it is written again at level 1. They carry the
trace's chunks (`mgtui.trace.chunks_of`), so the same records can be written while a
scenario still runs and read as they arrive. Numbers are stored as they are, so nan and
inf need no special form. JSON (`mgtui.export`) stays the format
for interchange; this one is for saving and loading big traces.

Version 2 stores ids in 32 bits and the values of only the events that have them.
Version 1 files (64-bit ids, a before and an after for every event) are still read.
"""

from __future__ import annotations

import io
import json
import os
import struct
import sys
import zlib
from array import array
from pathlib import Path
from typing import BinaryIO, Iterator

from mgtui import fields
from mgtui.trace import (
    Chunk,
    Closure,
    EventChunk,
    NodeChunk,
    Trace,
    TraceBuilder,
    TraceError,
    TraceFormatError,
    WriteChunk,
    chunks_of,
    lone_values,
)

MAGIC = b"MGTUI\0TR"
VERSION = 2
READS = (1, 2)  # the versions this mgtui reads
SUFFIX = ".mgtrace"
_HEAD = struct.Struct("<8sHH")
_RECORD = struct.Struct("<cQ")
_COUNT = struct.Struct("<I")
_COUNTS = struct.Struct("<II")
_BIG = sys.byteorder == "big"
MAX_RECORD = 1 << 28  # bytes a record may unpack to: a bound for a hostile file


def is_trace_file(path: str | os.PathLike) -> bool:
    """Is this a binary trace: by its name, or by the magic it starts with?"""
    if Path(path).suffix == SUFFIX:
        return True
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


# -- writing ---------------------------------------------------------------------------


def _le(a: array) -> bytes:
    if _BIG:
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def _json(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8")


def _record(tag: bytes, payload: bytes) -> bytes:
    return _RECORD.pack(tag, len(payload)) + payload


def _i32(a: array) -> array:
    return a if a.typecode == "i" else array("i", a)


def encode_chunk(chunk: Chunk, level: int = 1) -> bytes:
    """One N, E or W record, compressed at zlib `level` (0: stored as it is, still a
    zlib stream that any reader inflates; what the runner's child streams)."""
    if isinstance(chunk, NodeChunk):
        payload = b"".join((
            _COUNTS.pack(len(chunk.ops), len(chunk.child_ids)),
            _le(chunk.data), _le(chunk.lines), _le(_i32(chunk.child_ends)),
            _le(_i32(chunk.child_ids)),
            _json([list(chunk.labels), list(chunk.ops), *([list(chunk.names)] if chunk.names else [])])))
        return _record(b"N", zlib.compress(payload, level))
    if isinstance(chunk, EventChunk):
        count = len(chunk.kinds)
        before, after = lone_values(chunk.kinds, chunk.before, chunk.after)
        columns = (chunk.kinds, _i32(chunk.nodes), chunk.lines, chunk.closures,
                   _i32(chunk.write_starts), before, after)
        payload = _COUNTS.pack(count, len(before)) + b"".join(map(_le, columns))
        return _record(b"E", zlib.compress(payload, level))
    columns = (_i32(chunk.nodes), chunk.fields, chunk.before, chunk.after, chunk.lines)
    payload = _COUNT.pack(len(chunk.nodes)) + b"".join(map(_le, columns))
    return _record(b"W", zlib.compress(payload, level))


def encode_header(scenario: str, title: str, notes: str, source: str) -> bytes:
    head = _HEAD.pack(MAGIC, VERSION, 0)
    return head + _record(b"H", _json({"scenario": scenario, "title": title, "notes": notes,
                                       "source": source}))


def encode_closure(c: Closure) -> bytes:
    return _record(b"C", _json({"name": c.name, "filename": c.filename,
                                "first_line": c.first_line, "lines": list(c.lines),
                                "default": c.default}))


def encode_json(tag: bytes, obj: object) -> bytes:
    """A record of JSON: L (labels set late, [[id, label], ...]), M (names found late,
    [[id, name], ...]), R (a job's result),
    X (the scenario could not run: {"message", "detail"})."""
    return _record(tag, _json(obj))


def encode_values(entries: list[tuple[int, tuple[tuple[str, float], ...]]]) -> bytes:
    """A V record: what some `_backward` calls read as they began."""
    return _record(b"V", _json([[event, [[name, fields.json_number(v)] for name, v in pairs]]
                                for event, pairs in entries]))


def encode_end(error: TraceError | None, output: str,
               passes: list[tuple[str, int, int]] | None) -> bytes:
    err = None if error is None else {"type": error.type, "message": error.message,
                                      "line": error.line, "after_event": error.after_event}
    return _record(b"Z", _json({"error": err, "output": output, "passes": passes}))


def write(trace: Trace, f: BinaryIO) -> None:
    f.write(encode_header(trace.scenario, trace.title, trace.notes, trace.source))
    for c in trace.closures:
        f.write(encode_closure(c))
    for chunk in chunks_of(trace):
        f.write(encode_chunk(chunk))
    values = list(trace.values_recorded())
    if values:
        f.write(encode_values(values))
    f.write(encode_end(trace.error, trace.output,
                       [(p.kind, p.start, p.end) for p in trace.passes]))


def dumpb(trace: Trace) -> bytes:
    out = io.BytesIO()
    write(trace, out)
    return out.getvalue()


# -- reading ---------------------------------------------------------------------------


class _Payload:
    """Reads a record's payload front to back; every read is bounds-checked."""

    def __init__(self, tag: str, data: bytes) -> None:
        self.tag, self.data, self.at = tag, memoryview(data), 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.at + n > len(self.data):
            raise TraceFormatError(f"record {self.tag}", "ends too soon")
        piece = self.data[self.at : self.at + n]
        self.at += n
        return piece

    def unpack(self, s: struct.Struct) -> tuple:
        return s.unpack(self.take(s.size))

    def column(self, typecode: str, count: int) -> array:
        a = array(typecode)
        a.frombytes(self.take(a.itemsize * count))
        if _BIG:
            a.byteswap()
        return a

    def view(self, typecode: str, count: int) -> array | memoryview:
        """A column read in place, without a copy (the builder copies it into its own
        columns); an array where the numbers need turning round (a big-endian machine)."""
        if _BIG:
            return self.column(typecode, count)
        size = array(typecode).itemsize
        return self.take(size * count).cast(typecode)

    def json(self) -> object:
        try:
            return json.loads(str(self.take(len(self.data) - self.at), "utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise TraceFormatError(f"record {self.tag}", f"not valid JSON ({exc})") from None

    def done(self) -> None:
        if self.at != len(self.data):
            raise TraceFormatError(f"record {self.tag}", "has bytes left over")


def _inflate(tag: str, data: bytes) -> bytes:
    unpack = zlib.decompressobj()
    try:
        out = unpack.decompress(data, MAX_RECORD)
    except zlib.error as exc:
        raise TraceFormatError(f"record {tag}", f"is damaged ({exc})") from None
    if unpack.unconsumed_tail or not unpack.eof:
        raise TraceFormatError(f"record {tag}", "is damaged or too big")
    return out


def decode_chunk(tag: str, data: bytes, version: int = VERSION) -> Chunk:
    """A chunk from the (compressed) payload of an N, E or W record. Its columns are
    memoryviews of the inflated payload (arrays for a version 1 file), for
    `TraceBuilder.add` to copy once into its own."""
    p = _Payload(tag, _inflate(tag, data))
    ids = "q" if version == 1 else "i"
    column = p.column if version == 1 else p.view
    if tag == "N":
        count, children = p.unpack(_COUNTS)
        numbers = (column("d", count), column("i", count), column(ids, count),
                   column(ids, children))
        strings = p.json()
        if (not isinstance(strings, list) or len(strings) not in (2, 3)
                or not all(isinstance(x, list) and len(x) == count for x in strings)):
            raise TraceFormatError("record N", f"needs [labels, ops] for {count} nodes")
        labels, ops, *names = strings
        data_, lines, ends, ids = numbers
        return NodeChunk(tuple(labels), tuple(ops), data_, lines, ends, ids,
                         tuple(names[0]) if names else ())
    if tag == "E" and version == 1:
        (count,) = p.unpack(_COUNT)
        chunk = EventChunk(*(p.column(t, count) for t in "bqddiiq"))
    elif tag == "E":
        count, lone = p.unpack(_COUNTS)
        kinds, nodes, lines, closures, starts = (column(t, count) for t in "biiii")
        chunk = EventChunk(kinds, nodes, column("d", lone), column("d", lone), lines,
                           closures, starts)
    else:
        (count,) = p.unpack(_COUNT)
        chunk = WriteChunk(*(column(t, count) for t in ids + "bddi"))
    p.done()
    return chunk


def node_count(payload: bytes) -> int:
    """How many nodes an N record's (compressed) payload holds, read from its first
    bytes alone; 0 if they cannot be read (reading the record says why)."""
    try:
        head = zlib.decompressobj().decompress(payload, _COUNTS.size)
        return _COUNTS.unpack(head)[0] if len(head) == _COUNTS.size else 0
    except zlib.error:
        return 0


def check_head(head: bytes, versions: tuple[int, ...] = (VERSION,)) -> int:
    """The version of the trace `head` (the first 12 bytes) starts; TraceFormatError
    unless it starts one of `versions`. (A stream from the runner's child is always
    this version.)"""
    if len(head) < _HEAD.size or head[: len(MAGIC)] != MAGIC:
        raise TraceFormatError("header", "not an mgtui binary trace")
    _, version, _ = _HEAD.unpack(head[: _HEAD.size])
    if version not in versions:
        raise TraceFormatError("version", f"{version} (this mgtui reads "
                               f"{', '.join(map(str, versions))})")
    return version


HEAD_SIZE = _HEAD.size


def split_record(buf: bytearray) -> tuple[str, bytes] | None:
    """Take the first whole record off the front of `buf` (a stream as it arrives), or
    None if it has not all arrived yet."""
    if len(buf) < _RECORD.size:
        return None
    tag, length = _RECORD.unpack_from(buf)
    if length > MAX_RECORD:
        raise TraceFormatError(f"record {tag.decode('latin-1')}", "is too big")
    end = _RECORD.size + length
    if len(buf) < end:
        return None
    payload = bytes(buf[_RECORD.size : end])
    del buf[:end]
    return tag.decode("latin-1"), payload


def records(f: BinaryIO) -> Iterator[tuple[str, bytes]]:
    """(tag, payload) of each record after the header; checks the magic and version."""
    check_head(f.read(_HEAD.size), READS)
    return _body(f)


def _body(f: BinaryIO) -> Iterator[tuple[str, bytes]]:
    """(tag, payload) of each record after the header (which has been read)."""
    while True:
        raw = f.read(_RECORD.size)
        if not raw:
            return
        if len(raw) < _RECORD.size:
            raise TraceFormatError("file", "ends inside a record")
        tag, length = _RECORD.unpack(raw)
        payload = f.read(length) if length <= 1 << 36 else b""
        if len(payload) != length:
            raise TraceFormatError("file", "ends inside a record")
        yield tag.decode("latin-1"), payload


def read(f: BinaryIO) -> Trace:
    """Read a whole binary trace, checked before it is built.

    All in this thread: inflating chunks in another one, ahead of this one, was slower
    on a busy machine (each inflated chunk handed back waits for this thread to let go
    of the GIL, and then for the other to be given a core), and little faster on a
    quiet one."""
    version = check_head(f.read(_HEAD.size), READS)
    return _read((tag, decode_chunk(tag, payload, version) if tag in ("N", "E", "W") else payload)
                 for tag, payload in _body(f))


def _read(recs: Iterator[tuple[str, object]]) -> Trace:
    builder: TraceBuilder | None = None
    end = None
    for tag, payload in recs:
        if tag == "H":
            head = fields.obj(_Payload(tag, payload).json(), "header")
            builder = TraceBuilder(*(fields.text(head.get(k), f"header.{k}")
                                     for k in ("scenario", "title", "notes", "source")))
            continue
        if builder is None:
            raise TraceFormatError(f"record {tag}", "comes before the header")
        if tag == "C":
            builder.add_closure(fields.closure(_Payload(tag, payload).json(),
                                               f"closures[{len(builder.closures)}]"))
        elif tag in ("N", "E", "W"):
            builder.add(payload)
            if builder.consistent:
                builder.validate()  # a chunk at a time, while it is fresh in the cache
        elif tag == "M":
            add_names(builder, _Payload(tag, payload).json())
        elif tag == "V":
            for event, pairs in fields.call_values(_Payload(tag, payload).json()):
                builder.add_values(event, pairs)
        elif tag == "Z":
            end = fields.obj(_Payload(tag, payload).json(), "end")
        else:
            raise TraceFormatError("record", f"unknown tag {tag!r}")
    if builder is None or end is None:
        raise TraceFormatError("file", "is cut short: no header or no end record")
    error = fields.error(end.get("error"), builder.event_count)
    passes = None if end.get("passes") is None else fields.passes(end.get("passes"))
    builder.validate(passes, error)
    return builder.build(error, fields.text(end.get("output"), "output"), passes, last=True)


def add_names(builder: TraceBuilder, pairs: object) -> None:
    """The names of an M record, [[id, name], ...], checked."""
    for pair in fields.seq(pairs, "names"):
        nid, name = (list(fields.seq(pair, "names")) + [None, None])[:2]
        builder.add_name(nid, name)


def loadb(data: bytes) -> Trace:
    return read(io.BytesIO(data))


def load(path: str | os.PathLike) -> Trace:
    with Path(path).open("rb") as f:
        return read(f)
