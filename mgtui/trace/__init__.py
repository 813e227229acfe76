"""The immutable trace of one scenario run: nodes, events and passes, and the questions
that can be asked of it. Import its names from here.

A trace holds only ids, floats, strings and line numbers, in flat arrays, never the live
`Value` objects. Its strings come from code and files mgtui did not write, so they are
made inert (`mgtui.safe`) as the trace is built: no control character gets into one.
Only the trace's own modules know that layout: everything else asks named questions
(`writes(i)`, `backward_calls(p)`, `index.created_at(nid)`) and gets small frozen records
back. A `TraceBuilder` is the one way to make a trace, for the recorder and the file
loaders alike; it only ever appends.

The modules, by concern:
- `records`: the records a trace hands out, its kinds, fields and errors;
- `model`: `Trace`, its columns and its questions, with its parts `places` (lines as
  the user knows them), `replay` (a state moved through the events) and `index` (the
  indexes derived on first use), `values` (values that may be arrays); `lanes`, checks
  over whole columns at C speed;
- `chunks`: its records in chunks, as they travel between processes and files;
- `builder`: `TraceBuilder`, with `validation`, its checks of what it is given;
- `table`: the record table, every tag of the binary stream with its encoder and the
  one decoder; `binary` the `.mgtrace` file, `export` JSON and DOT (with `fields`, the
  checked reading of a field), `saving` an all-or-nothing save;
- `explain`: one step worked out with its numbers; `names`: a node's name where space
  is tight; `notebook`: a notebook's cells as one script.
"""

from __future__ import annotations

from mgtui.trace.builder import RUN_KINDS, TraceBuilder, split_passes
from mgtui.trace.chunks import Chunk, EventChunk, NodeChunk, WriteChunk, chunks_of, lone_values
from mgtui.trace.model import Texts, Trace
from mgtui.trace.records import (
    MAX_LINE,
    PASS_KINDS,
    Closure,
    Event,
    EventKind,
    Field,
    Node,
    Pass,
    PassKind,
    TraceError,
    TraceFormatError,
    Write,
)
from mgtui.trace.replay import replay_into
from mgtui.trace.validation import RUN_LENGTH

__all__ = [
    "MAX_LINE", "PASS_KINDS", "RUN_KINDS", "RUN_LENGTH", "Chunk", "Closure", "Event",
    "EventChunk", "EventKind", "Field", "Node", "NodeChunk", "Pass", "PassKind", "Texts",
    "Trace", "TraceBuilder", "TraceError", "TraceFormatError", "Write", "WriteChunk",
    "chunks_of", "lone_values", "replay_into", "split_passes",
]
