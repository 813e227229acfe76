"""The record table: every record a binary trace is made of, how each is written, and
how each payload is read (the one decoder that reads a file's or a stream's records into
a `TraceBuilder`, record by record, is `mgtui.trace.decoder.RecordDecoder`).

A saved file (`mgtui.trace.binary`) and the stream from the runner's child to its parent
(`mgtui.run.runner`) are the same thing: a head, then records, each a one-byte tag, an
8-byte little-endian length and a payload. Both are read through `RecordDecoder`.

    head  MGTUI\\0TR  u16 version  u16 flags (0)

    tag constant    file  payload
    H   HEADER      yes   JSON {"scenario", "title", "notes", "source"} and, in a file,
                          "engine" (`mgtui.trace.engine_kind`); the first record
    C   CLOSURE     yes   one `_backward` closure's source: JSON {"name", "filename",
                          "first_line", "lines", "default"}
    N   NODES       yes   nodes (zlib): u32 count, u32 children, c lines' type; data
                          f64[count], lines L[count], child_ends i32[count], child_ids
                          i32[children]; JSON [labels, ops] or [labels, ops, names] (the
                          names of `mgtui.recording.naming`; older files have none)
    E   EVENTS      yes   events (zlib): u32 count, u32 lone, c lines' type, c closures'
                          type; kinds i8, nodes i32, lines L, closures C, write_starts
                          i32 (each [count]); before f64, after f64 (each [lone]: the
                          grad and data writes outside `_backward`, the only events
                          with values)
    W   WRITES      yes   writes (zlib): u32 count, c lines' type; nodes i32, fields i8,
                          before f64, after f64, lines L
    M   NAMES       yes   names given late, while a scenario still runs: JSON [[id, name], ...]
    A   ARRAYS      yes   array values (zlib; version 3 on): u32 n; JSON {"entries": [[place,
                          index, side, shape, dtype, count, summary|null], ...],
                          "unrecorded": [[type, count], ...]} of n bytes; then f64
                          values, each entry's `count` in turn (`mgtui.trace.arrays`:
                          place 0 node data, 1 node grad, 2 event, 3 write; side 0 the
                          before or the node's value, 1 the after; a summary [min, max,
                          mean, norm, nonfinite] for an array kept as its first values).
                          Sent after the chunks whose rows it refers to.
    V   VALUES      yes   values read by `_backward` calls as they began (older files have
                          none): JSON [[event, [[name, value], ...]], ...], a value that is
                          not finite as "nan", "inf" or "-inf"
    Z   END         yes   JSON {"error": null | {"type", "message", "line", "after_event"},
                          "output": str, "passes": null | [[kind, start, end], ...],
                          and, in a stream, "engine"}; the last record (a stream's passes
                          are null: the parent finds them). Files and streams without
                          "engine" in H or Z (older ones) have it inferred once, as
                          they are built
    L   LABELS      no    labels set late, once the scenario ended: JSON [[id, label], ...]
                          (a file holds the final labels in its N records)
    X   NOT_RUN     no    the scenario could not run at all: JSON {"message", "detail"},
                          and "kind": "not-a-graph" for a run that recorded no node (or
                          made nodes of a class it could not record: `mgtui.recording.shapes`);
                          a stream that has it has no Z
    R   JOB_RESULT  no    what a job's hooks reported (the doctor's probe): any JSON
    Q   EXIT        no    the scenario called `os._exit` (sent just before): JSON {"code"}

"file: no" are the tags only the live stream carries: they are decoded by the same
code, and `mgtui.trace.binary.write` never writes them (a file that has them still reads).

The payloads of N, E and W are zlib-compressed (level 1 in a file: most of a trace is
small ids and repeated zeros). The runner's child streams them at level 0 (stored
blocks: the same format, read the same way, without the cost of deflating records
that go down a local pipe and are inflated as they arrive). They carry the trace's
chunks (`mgtui.trace.chunks_of`), so the same records can be written while a scenario
still runs and read as they arrive. Numbers are stored as they are, so nan and inf
need no special form.

Version 5 writes A as columns (`mgtui.trace.array_records`: each value once, read into
the trace with no object a value); versions 3 and 4 wrote them as above, still read.
Version 2 stores ids in 32 bits and the values of only the events that have them.
Version 3 is version 2 with A records (arrays). Version 4 stores line numbers and
closure indexes as narrow as they fit (`mgtui.trace.widths`): L is the type its byte
names, "B", "H" or "i" (u8, u16, i32), and C "b", "h" or "i" (i8, i16, i32); versions
1 to 3 have i32 for both. Version 1 files (64-bit ids, a before and an after for every
event), and versions 2 and 3, are still read.
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from array import array

from mgtui.trace import array_records, fields
from mgtui.trace.arrays import ArrayChunk, ArrayTable
from mgtui.trace.inflating import MAX_RECORD, inflate as _inflate, inflate_nodes as _inflate_nodes
from mgtui.trace.load_limits import LoadLimits
from mgtui.trace.widths import CLOSURES, LINES
from mgtui.trace import (
    Chunk,
    Closure,
    EventChunk,
    NodeChunk,
    TraceError,
    TraceFormatError,
    WriteChunk,
    lone_values,
)

MAGIC = b"MGTUI\0TR"
VERSION = 5
READS = (1, 2, 3, 4, 5)  # the versions this mgtui reads

HEADER = "H"
CLOSURE = "C"
NODES = "N"
EVENTS = "E"
WRITES = "W"
NAMES = "M"
VALUES = "V"
ARRAYS = "A"
END = "Z"
LABELS = "L"
NOT_RUN = "X"
JOB_RESULT = "R"
EXIT = "Q"

FILE_TAGS = (HEADER, CLOSURE, NODES, EVENTS, WRITES, NAMES, VALUES, ARRAYS, END)
STREAM_TAGS = (LABELS, NOT_RUN, JOB_RESULT, EXIT)  # only the runner's live stream has them
TAGS = FILE_TAGS + STREAM_TAGS
CHUNK_TAGS = (NODES, EVENTS, WRITES)
# Records about the run rather than its trace: they need no header, and the runner
# takes them the moment they arrive.
RUN_TAGS = (NOT_RUN, JOB_RESULT, EXIT)

_HEAD = struct.Struct("<8sHH")
HEAD_SIZE = _HEAD.size
_RECORD = struct.Struct("<cQ")
_COUNT = struct.Struct("<I")
_COUNTS = struct.Struct("<II")
_BIG = sys.byteorder == "big"


# -- writing ---------------------------------------------------------------------------


def _le(a: array) -> bytes:
    if _BIG:
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def _json(obj: object) -> bytes:
    """JSON in UTF-8. A string that is not Unicode throughout (a file name of bytes that
    are not UTF-8, which Python holds as lone surrogates, `os.fsdecode`) is written with
    JSON's escapes, and reads back as the same string."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, allow_nan=False).encode("ascii")


def _record(tag: str | bytes, payload: bytes) -> bytes:
    if isinstance(tag, str):
        tag = tag.encode("latin-1")
    return _RECORD.pack(tag, len(payload)) + payload


def _i32(a: array) -> array:
    return a if a.typecode == "i" else array("i", a)


def _narrow(a: array, ladder: str) -> array:
    """A column of lines or closures in one of the widths of `ladder` (`widths`)."""
    return a if a.typecode in ladder else array(ladder[-1], a)


def encode_head() -> bytes:
    """The head a file and a stream start with: the magic, this version, the flags."""
    return _HEAD.pack(MAGIC, VERSION, 0)


def encode_header(scenario: str, title: str, notes: str, source: str,
                  engine: str | None = None) -> bytes:
    """The head, then the H record (a file's says its engine; a stream's does not know
    it yet, and says it in its end record)."""
    head = {"scenario": scenario, "title": title, "notes": notes, "source": source}
    if engine is not None:
        head["engine"] = engine
    return encode_head() + _record(HEADER, _json(head))


def encode_closure(c: Closure) -> bytes:
    return _record(CLOSURE, _json({"name": c.name, "filename": c.filename,
                                   "first_line": c.first_line, "lines": list(c.lines),
                                   "default": c.default}))


def encode_chunk(chunk: Chunk | ArrayChunk, level: int = 1) -> bytes:
    """One N, E, W or A record, compressed at zlib `level` (0: stored as it is, still a
    zlib stream that any reader inflates; what the runner's child streams)."""
    if isinstance(chunk, ArrayChunk):
        return _record(ARRAYS, zlib.compress(array_records.payload(chunk), level))
    if isinstance(chunk, NodeChunk):
        lines = _narrow(chunk.lines, LINES)
        payload = b"".join((
            _COUNTS.pack(len(chunk.ops), len(chunk.child_ids)), lines.typecode.encode(),
            _le(chunk.data), _le(lines), _le(_i32(chunk.child_ends)),
            _le(_i32(chunk.child_ids)),
            _json([list(chunk.labels), list(chunk.ops), *([list(chunk.names)] if chunk.names else [])])))
        return _record(NODES, zlib.compress(payload, level))
    if isinstance(chunk, EventChunk):
        count = len(chunk.kinds)
        before, after = lone_values(chunk.kinds, chunk.before, chunk.after)
        lines, closures = _narrow(chunk.lines, LINES), _narrow(chunk.closures, CLOSURES)
        columns = (chunk.kinds, _i32(chunk.nodes), lines, closures,
                   _i32(chunk.write_starts), before, after)
        payload = (_COUNTS.pack(count, len(before)) + (lines.typecode + closures.typecode).encode()
                   + b"".join(map(_le, columns)))
        return _record(EVENTS, zlib.compress(payload, level))
    lines = _narrow(chunk.lines, LINES)
    columns = (_i32(chunk.nodes), chunk.fields, chunk.before, chunk.after, lines)
    payload = (_COUNT.pack(len(chunk.nodes)) + lines.typecode.encode()
               + b"".join(map(_le, columns)))
    return _record(WRITES, zlib.compress(payload, level))


def inflated_arrays(data: bytes, limits: LoadLimits | None) -> bytes:
    """An A record's payload inflated within what `limits` leave room for."""
    bound = MAX_RECORD if limits is None else limits.inflate_bound(MAX_RECORD)
    return _inflate(ARRAYS, data, bound, limits if bound < MAX_RECORD else None)


def decode_arrays(data: bytes, limits: LoadLimits | None = None,
                  version: int = VERSION) -> ArrayChunk:
    """An A record's (compressed) payload, every entry checked (`fields.array_value`;
    version 5's columns by `array_records`, its values made here)."""
    if version >= 5:
        stored = array_records.decode(inflated_arrays(data, limits), limits)
        table = ArrayTable()
        table.add_stored(*stored)
        return ArrayChunk(tuple(table.entries()), stored.unrecorded)
    p = _Payload(ARRAYS, inflated_arrays(data, limits))
    (size,) = p.unpack(_COUNT)
    if limits is not None:
        limits.take_json(p.data.obj, p.at, p.at + size)
    meta = fields.obj(_Payload(ARRAYS, bytes(p.take(size))).json(), "arrays")
    raw = fields.seq(meta.get("entries"), "arrays.entries")
    counts = [fields.index(e[5], f"arrays[{k}].count") if isinstance(e, list) and len(e) == 7
              else -1 for k, e in enumerate(raw)]
    if -1 in counts:
        raise TraceFormatError(f"arrays[{counts.index(-1)}]", "must be [place, index, side, "
                               "shape, dtype, count, summary]")
    if limits is not None:
        limits.take_arrays(len(raw), sum(counts))
    flat = p.column("d", sum(counts))
    p.done()
    entries, at = [], 0
    for k, (place, index, side, shape, dtype, count, summary) in enumerate(raw):
        where = f"arrays[{k}]"
        value = fields.array_value(shape, dtype, flat[at:at + count], summary, where)
        at += count
        entries.append((fields.index(place, f"{where}.place"), fields.index(index, f"{where}.index"),
                        fields.index(side, f"{where}.side"), value))
    unrecorded = []
    for k, pair in enumerate(fields.seq(meta.get("unrecorded", []), "arrays.unrecorded")):
        pair = fields.seq(pair, f"arrays.unrecorded[{k}]")
        if len(pair) != 2:
            raise TraceFormatError(f"arrays.unrecorded[{k}]", "must be [type, count]")
        unrecorded.append((fields.text(pair[0], f"arrays.unrecorded[{k}]")[:80],
                           fields.index(pair[1], f"arrays.unrecorded[{k}]")))
    return ArrayChunk(tuple(entries), tuple(unrecorded))


def encode_json(tag: str | bytes, obj: object) -> bytes:
    """A record of JSON, for any tag whose payload is JSON (M, L, R, X, Q...); the
    functions below name each."""
    return _record(tag, _json(obj))


def encode_names(pairs: list[list]) -> bytes:
    """An M record: [[id, name], ...]."""
    return _record(NAMES, _json(pairs))


def encode_values(entries: list[tuple[int, tuple[tuple[str, float], ...]]]) -> bytes:
    """A V record: what some `_backward` calls read as they began."""
    return _record(VALUES, _json([[event, [[name, fields.json_number(v)] for name, v in pairs]]
                                  for event, pairs in entries]))


def encode_end(error: TraceError | None, output: str,
               passes: list[tuple[str, int, int]] | None, engine: str | None = None) -> bytes:
    err = None if error is None else {"type": error.type, "message": error.message,
                                      "line": error.line, "after_event": error.after_event}
    end = {"error": err, "output": output, "passes": passes}
    if engine is not None:
        end["engine"] = engine
    return _record(END, _json(end))


def encode_labels(pairs: list[list]) -> bytes:
    """An L record: [[id, label], ...]."""
    return _record(LABELS, _json(pairs))


def encode_not_run(message: str, detail: str, kind: str = "") -> bytes:
    """An X record; `kind` "not-a-graph": the run ended, but recorded no node."""
    payload = {"message": message, "detail": detail}
    if kind:
        payload["kind"] = kind
    return _record(NOT_RUN, _json(payload))


def encode_job_result(result: object) -> bytes:
    return _record(JOB_RESULT, _json(result))


def encode_exit(code: object) -> bytes:
    return _record(EXIT, _json({"code": code}))


# -- framing ---------------------------------------------------------------------------


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


RECORD_HEAD_SIZE = _RECORD.size


def record_head(raw: bytes) -> tuple[str, int]:
    """The tag and payload length a record starts with (its first 9 bytes)."""
    tag, length = _RECORD.unpack(raw)
    return tag.decode("latin-1"), length


def check_length(tag: str, length: int) -> None:
    """TraceFormatError if a record claims a payload longer than any record may be (read
    before a byte of it is: a file may claim 2**60 bytes)."""
    if length > MAX_RECORD:
        raise TraceFormatError(f"record {tag}", f"claims {length:,} bytes, more than a "
                               f"record may hold ({MAX_RECORD:,})")


def split_record(buf: bytearray) -> tuple[str, bytes] | None:
    """Take the first whole record off the front of `buf` (a stream as it arrives), or
    None if it has not all arrived yet."""
    if len(buf) < _RECORD.size:
        return None
    tag, length = _RECORD.unpack_from(buf)
    check_length(tag.decode("latin-1"), length)
    end = _RECORD.size + length
    if len(buf) < end:
        return None
    payload = bytes(buf[_RECORD.size : end])
    del buf[:end]
    return tag.decode("latin-1"), payload


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

    def width(self, ladder: str) -> str:
        """A column's type, as a byte naming one of `ladder` (version 4 on)."""
        code = chr(self.take(1)[0])
        if code not in ladder:
            raise TraceFormatError(f"record {self.tag}", f"a column of type {code!r}")
        return code

    def json(self) -> object:
        try:
            return json.loads(str(self.take(len(self.data) - self.at), "utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise TraceFormatError(f"record {self.tag}", f"not valid JSON ({exc})") from None

    def done(self) -> None:
        if self.at != len(self.data):
            raise TraceFormatError(f"record {self.tag}", "has bytes left over")


def json_of(tag: str, payload: bytes) -> object:
    return _Payload(tag, payload).json()


def declared_size(tag: str, counts: tuple[int, int], version: int = VERSION) -> int:
    """One byte more than an N, E or W record's payload can inflate to, from the counts
    it declares (its columns at their widest), and never more than MAX_RECORD; an N
    record's labels are JSON of any length: MAX_RECORD."""
    count, other = counts
    if tag == NODES:
        return MAX_RECORD
    if tag == EVENTS:
        size = _COUNT.size + count * 41 if version == 1 else \
            _COUNTS.size + 2 + count * 17 + other * 16
    else:
        size = _COUNT.size + 1 + count * (29 if version == 1 else 25)
    return min(size + 1, MAX_RECORD)


def decode_chunk(tag: str, data: bytes, version: int = VERSION,
                 limits: LoadLimits | None = None) -> Chunk:
    """A chunk from the (compressed) payload of an N, E or W record. Its columns are
    memoryviews of the inflated payload (arrays for a version 1 file), for
    `TraceBuilder.add` to copy once into its own. With `limits`, its rows are charged
    to them (from the counts it declares) before it is inflated, and its labels' JSON
    before it is parsed."""
    counts = declared_counts(tag, data, version)
    most = bound = declared_size(tag, counts, version)
    if limits is not None:
        _charge(limits, tag, counts)
        room = limits.text_room()  # (an N record's labels: JSON of any length)
        if tag == NODES and room is not None:
            bound = min(most, _COUNTS.size + 1 + 16 * counts[0] + 4 * counts[1] + room)
        bound = limits.inflate_bound(bound)
    over = limits if bound < most else None
    p = _Payload(tag, _inflate_nodes(data, bound, over, counts, version) if tag == NODES
                 else _inflate(tag, data, bound, over))
    ids = "q" if version == 1 else "i"
    column = p.column if version == 1 else p.view
    narrow = version >= 4  # (lines and closures as narrow as they fit: `widths`)
    if tag == NODES:
        count, children = p.unpack(_COUNTS)
        lines = p.width(LINES) if narrow else "i"
        numbers = (column("d", count), column(lines, count), column(ids, count),
                   column(ids, children))
        if limits is not None:
            limits.take_json(p.data.obj, p.at)
        strings = p.json()
        if (not isinstance(strings, list) or len(strings) not in (2, 3)
                or not all(isinstance(x, list) and len(x) == count for x in strings)):
            raise TraceFormatError("record N", f"needs [labels, ops] for {count} nodes")
        labels, ops, *names = strings
        data_, lines, ends, ids = numbers
        return NodeChunk(tuple(labels), tuple(ops), data_, lines, ends, ids,
                         tuple(names[0]) if names else ())
    if tag == EVENTS and version == 1:
        (count,) = p.unpack(_COUNT)
        chunk = EventChunk(*(p.column(t, count) for t in "bqddiiq"))
    elif tag == EVENTS:
        count, lone = p.unpack(_COUNTS)
        types = "bi" + (p.width(LINES) + p.width(CLOSURES) if narrow else "ii") + "i"
        kinds, nodes, lines, closures, starts = (column(t, count) for t in types)
        chunk = EventChunk(kinds, nodes, column("d", lone), column("d", lone), lines,
                           closures, starts)
    else:
        (count,) = p.unpack(_COUNT)
        types = ids + "bdd" + (p.width(LINES) if narrow else "i")
        chunk = WriteChunk(*(column(t, count) for t in types))
    p.done()
    return chunk


def declared_counts(tag: str, payload: bytes, version: int = VERSION) -> tuple[int, int]:
    """The counts an N, E or W record's (compressed) payload starts with, read from its
    first bytes alone: (nodes, children), (events, lone values) or (writes, 0)."""
    two = tag == NODES or (tag == EVENTS and version != 1)
    size = _COUNTS.size if two else _COUNT.size
    try:
        head = zlib.decompressobj().decompress(payload, size)
    except zlib.error as exc:
        raise TraceFormatError(f"record {tag}", f"is damaged ({exc})") from None
    if len(head) < size:
        raise TraceFormatError(f"record {tag}", "ends too soon")
    if two:
        return _COUNTS.unpack(head)
    (count,) = _COUNT.unpack(head)
    return count, count if tag == EVENTS else 0  # (version 1 keeps values for every event)


def _charge(limits: LoadLimits, tag: str, counts: tuple[int, int]) -> None:
    count, other = counts
    if tag == NODES:
        limits.take_nodes(count, other)
    elif tag == EVENTS:
        limits.take_events(count, other)
    else:
        limits.take_writes(count)


def node_count(payload: bytes) -> int:
    """How many nodes an N record's (compressed) payload holds, read from its first
    bytes alone; 0 if they cannot be read (reading the record says why)."""
    try:
        head = zlib.decompressobj().decompress(payload, _COUNTS.size)
        return _COUNTS.unpack(head)[0] if len(head) == _COUNTS.size else 0
    except zlib.error:
        return 0
