"""Which engine made a trace: a fact the recorder writes, not a guess.

Every trace says the kind of engine that recorded it: `SCALAR` (micrograd-style
Values of floats), `ARRAY` (a numpy tensor engine: values are arrays) or `TORCH`
(PyTorch, through the torch adapter). The recorder writes it (`Recorder.engine`), the
runner's child sends it in its end record, and both file formats carry it (the binary
header and end records, the JSON document's "engine"). What a kind means to each room
is its engine (`mgtui.trace.engines`, `mgtui.doctor.engines`; in `mgtui diff`,
`mgtui.diff.array_values`).

Files saved before traces said so still open: `infer` works the kind out once, as
such a file is built (`TraceBuilder.build`), and nowhere else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mgtui.trace.model import Trace

SCALAR, ARRAY, TORCH = "scalar", "array", "torch"
KINDS = (SCALAR, ARRAY, TORCH)  # (room for more: each a name, and an engine per room)

# The file the torch adapter gives an autograd node's step, which has no source
# (`mgtui.recording.torch_backward.TorchNode`). Files saved before the engine was written
# down are told torch's by it (older ones wrote a shorter name that starts the same).
AUTOGRAD_FILE = "<torch autograd>"
_AUTOGRAD_START = AUTOGRAD_FILE[:6]


def checked_kind(kind: object, where: str) -> str:
    """`kind` read from a file or a stream: one of `KINDS`, or a clear error."""
    from mgtui.trace.records import TraceFormatError

    if kind not in KINDS:
        raise TraceFormatError(where, f"an engine mgtui does not know ({str(kind)[:40]!r}); "
                               f"it knows {', '.join(KINDS)}")
    return kind  # type: ignore[return-value]


def infer(trace: Trace) -> str:
    """The engine of a trace that does not say (a file saved before traces did, or a
    stream cut short before its end record): torch if its steps are autograd nodes,
    array if it holds array values, else scalar."""
    if any(c.filename.startswith(_AUTOGRAD_START) for c in trace.closures):
        return TORCH
    if trace.arrays:
        return ARRAY
    return SCALAR
