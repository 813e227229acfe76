"""Records inflated within what they declare and what the load limits leave: a
record of a few hundred kilobytes can deflate a quarter of a gigabyte, so none is
inflated past the bytes its counts say it holds, and an N record's labels (JSON of any
length) are counted as they are inflated, a piece at a time (`mgtui.trace.table`)."""

from __future__ import annotations

import struct
import zlib
from array import array

from mgtui.trace.load_limits import LABEL_SPARE, LoadLimits, openers
from mgtui.trace.records import TraceFormatError
from mgtui.trace.widths import LINES

MAX_RECORD = 1 << 28  # bytes a record may unpack to: a bound for a hostile file
NODES = "N"
_COUNTS = struct.Struct("<II")


def inflate(tag: str, data: bytes, most: int = MAX_RECORD,
            limits: LoadLimits | None = None) -> bytes:
    """A record's payload inflated to at most `most` bytes (what its counts declare it
    holds, or what `limits` leave room for: given, a payload bigger than `most` goes
    past them)."""
    unpack = zlib.decompressobj()
    try:
        out = unpack.decompress(data, most)
    except zlib.error as exc:
        raise TraceFormatError(f"record {tag}", f"is damaged ({exc})") from None
    if unpack.unconsumed_tail or not unpack.eof:
        if limits is not None:
            limits.refuse("to read")
        raise TraceFormatError(f"record {tag}", "is damaged, or holds more than it declares"
                               if most < MAX_RECORD else "is damaged or too big")
    return out


PIECE = 1 << 24  # bytes an N record is inflated by at a time


def inflate_nodes(data: bytes, most: int, limits: LoadLimits | None,
                  counts: tuple[int, int], version: int) -> bytes:
    """An N record's payload (`inflate`), a piece at a time, the values its labels'
    JSON may hold counted as they come: a record whose JSON holds far more than the
    labels of the nodes it declares is refused a piece past them, not once hundreds of
    megabytes of it are inflated and parsed."""
    unpack = zlib.decompressobj()
    pieces: list[bytes] = []
    size, values, json_at, rest = 0, 0, -1, data
    try:
        while not unpack.eof and size < most:
            piece = unpack.decompress(rest, min(PIECE, most - size))
            rest = unpack.unconsumed_tail
            if not piece:
                break  # (the payload ends before its stream does)
            pieces.append(piece)
            if json_at < 0:
                json_at = labels_at(pieces[0], counts, version)
            values += openers(piece, max(json_at - size, 0))
            size += len(piece)
            if values > 3 * counts[0] + LABEL_SPARE:
                raise TraceFormatError(f"record {NODES}", "holds far more JSON values than the "
                                       f"labels of its {counts[0]:,} nodes")
    except zlib.error as exc:
        raise TraceFormatError(f"record {NODES}", f"is damaged ({exc})") from None
    if rest or not unpack.eof:
        if limits is not None:
            limits.refuse("to read")
        raise TraceFormatError(f"record {NODES}", "is damaged or too big")
    return b"".join(pieces)


def labels_at(head: bytes, counts: tuple[int, int], version: int) -> int:
    """Where an N record's JSON starts in its payload (`head`: its first bytes)."""
    count, children = counts
    if version == 1:
        return _COUNTS.size + count * 20 + children * 8
    line = 4
    if version >= 4 and len(head) > _COUNTS.size and chr(head[_COUNTS.size]) in LINES:
        line = array(chr(head[_COUNTS.size])).itemsize
    return _COUNTS.size + (version >= 4) + count * (12 + line) + children * 4
