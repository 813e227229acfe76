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

The names are imported from their modules on first use (PEP 562), so that importing one
module of the package (`mgtui.trace.saved`, say, before the app's first frame) does not
import them all.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

# Each name, and the module of the package it comes from.
_WHERE = {
    "RUN_KINDS": "builder", "TraceBuilder": "builder", "split_passes": "builder",
    "Chunk": "chunks", "EventChunk": "chunks", "NodeChunk": "chunks", "WriteChunk": "chunks",
    "chunks_of": "chunks", "lone_values": "chunks",
    "Texts": "model", "Trace": "model",
    "MAX_LINE": "records", "PASS_KINDS": "records", "Closure": "records", "Event": "records",
    "EventKind": "records", "Field": "records", "Node": "records", "Pass": "records",
    "PassKind": "records", "TraceError": "records", "TraceFormatError": "records",
    "Write": "records",
    "replay_into": "replay",
    "RUN_LENGTH": "validation",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # (the next look-up finds it here)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


if TYPE_CHECKING:  # (what a type checker and an editor see)
    from mgtui.trace.builder import RUN_KINDS, TraceBuilder, split_passes  # noqa: F401
    from mgtui.trace.chunks import (  # noqa: F401
        Chunk, EventChunk, NodeChunk, WriteChunk, chunks_of, lone_values)
    from mgtui.trace.model import Texts, Trace  # noqa: F401
    from mgtui.trace.records import (  # noqa: F401
        MAX_LINE, PASS_KINDS, Closure, Event, EventKind, Field, Node, Pass, PassKind,
        TraceError, TraceFormatError, Write)
    from mgtui.trace.replay import replay_into  # noqa: F401
    from mgtui.trace.validation import RUN_LENGTH  # noqa: F401
