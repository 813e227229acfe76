"""Traces to JSON (format version 1), loaded from either file format, and the final
graph as Graphviz DOT. Reading JSON is `mgtui.trace.json_read`."""

from __future__ import annotations

import io
import json
import math
import os
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any, Callable, TextIO

from mgtui.trace import fields
from mgtui.trace import binary as tracefile
from mgtui.defaults import DEFAULT_MAX_MEMORY, DEFAULT_MAX_NODES
from mgtui.errors import ScenarioLoadError
from mgtui.trace.load_limits import JSON_CHAR_BYTES, LoadLimitError, LoadLimits
from mgtui.trace import EventKind, Trace
from mgtui.trace.arrays import brief
from mgtui.trace.export_arrays import write_json_arrays
from mgtui.trace.json_read import FORMAT, VERSION, NotStreamable, from_json, read_json
# (re-exported: where callers have always found them)
from mgtui.trace.saved import SUFFIX, is_saved_trace  # noqa: F401

def num(x: float) -> float | str:
    """A float for JSON: non-finite numbers become the strings nan, inf and -inf."""
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def to_json(trace: Trace) -> dict[str, Any]:
    """The trace's JSON document as Python objects (for tests and small traces: a big
    trace is written with `write_json`, which builds no object per record)."""
    return json.loads(dumps(trace))


def dumps(trace: Trace) -> str:
    out = io.StringIO()
    write_json(trace, out)
    return out.getvalue()


BATCH = 4096  # records joined into one string per write


def write_json(trace: Trace, out: TextIO) -> None:
    """Write the trace as JSON (format version 1) to `out`, a record a line, as a
    stream: each node and event is formatted straight to text, a batch at a time, so
    the memory it takes does not grow with the trace."""
    q, f = _quote, _float
    head = (f'{{"format": "{FORMAT}", "version": {VERSION}, "scenario": {q(trace.scenario)}, '
            f'"title": {q(trace.title)}, "notes": {q(trace.notes)}, "engine": {q(trace.engine)},')
    if trace.arrays:  # (a tensor engine's: values may be arrays, as nested lists)
        return write_json_arrays(trace, out, head, _tail(trace))
    error = trace.error
    out.write(head + '\n"nodes": [')
    final_data, final_grad = trace.replay.final_data, trace.replay.final_grad
    sep = "\n"

    def node(n: int) -> str:
        line = trace.line(n)
        name = trace.derived_name(n)
        named = f', "name": {q(name)}' if name else ""
        return (f'{{"id": {n}, "label": {q(trace.label(n))}{named}, "op": {q(trace.op(n))}, '
                f'"children": [{", ".join(map(str, trace.children(n)))}], '
                f'"data": {f(trace.node_data[n])}, "line": {"null" if line is None else line}, '
                f'"final_data": {f(final_data[n])}, "final_grad": {f(final_grad[n])}}}')

    for lo in range(0, trace.node_count, BATCH):
        out.write(sep + ",\n".join(map(node, range(lo, min(lo + BATCH, trace.node_count)))))
        sep = ",\n"
    out.write('\n],\n"events": [')

    def event(i: int) -> str:
        kind = trace.kind(i)
        if kind is EventKind.CREATE:
            return f'{{"kind": "create", "node": {trace.event_node(i)}}}'
        line = trace.event_line(i)
        line = "null" if line is None else line
        if kind is EventKind.BACKWARD:
            writes = ", ".join(
                f'{{"node": {w.node}, "before": {f(w.before)}, "after": {f(w.after)}, '
                f'"line": {"null" if w.line is None else w.line}'
                + ("}" if w.field == "grad" else f', "field": "{w.field}"}}')
                for w in trace.writes(i))
            closure = trace.closure_index(i)
            values = trace.values_at(i)  # what a custom op's call read (few events have any)
            read = (', "values": [' + ", ".join(f"[{q(name)}, {f(v)}]" for name, v in values)
                    + "]") if values else ""
            return (f'{{"kind": "backward", "node": {trace.event_node(i)}, "writes": [{writes}], '
                    f'"line": {line}, "closure": {"null" if closure is None else closure}{read}}}')
        before, after = trace.change(i)
        return (f'{{"kind": "{kind.value}", "node": {trace.event_node(i)}, '
                f'"before": {f(before)}, "after": {f(after)}, "line": {line}}}')

    sep = "\n"
    for lo in range(0, len(trace), BATCH):
        out.write(sep + ",\n".join(map(event, range(lo, min(lo + BATCH, len(trace))))))
        sep = ",\n"
    out.write("\n],\n")
    tail = {
        "passes": [{"kind": p.kind, "start": p.start, "end": p.end} for p in trace.passes],
        "error": None if error is None else {
            "type": error.type, "message": error.message, "line": error.line,
            "after_event": error.after_event,
        },
        "closures": [
            {"name": c.name, "filename": c.filename, "first_line": c.first_line,
             "lines": list(c.lines), "default": c.default}
            for c in trace.closures
        ],
        "source": trace.source,
        "output": trace.output,
    }
    out.write(",\n".join(f"{q(k)}: {json.dumps(v, allow_nan=False)}" for k, v in tail.items()))
    out.write("}\n")


def _tail(trace: Trace) -> dict[str, Any]:
    """The fields after the nodes and events."""
    error = trace.error
    return {
        "passes": [{"kind": p.kind, "start": p.start, "end": p.end} for p in trace.passes],
        "error": None if error is None else {
            "type": error.type, "message": error.message, "line": error.line,
            "after_event": error.after_event},
        "closures": [{"name": c.name, "filename": c.filename, "first_line": c.first_line,
                      "lines": list(c.lines), "default": c.default} for c in trace.closures],
        "source": trace.source,
        "output": trace.output,
    }


_quote = encode_basestring_ascii  # a JSON string, every control character escaped


def _float(x: float) -> str:
    """A float as JSON writes it; non-finite ones as the strings "nan", "inf", "-inf"."""
    text = repr(x)
    return text if text not in ("nan", "inf", "-inf") else f'"{text}"'


def load(path: str | os.PathLike, *, max_nodes: int = DEFAULT_MAX_NODES,
         max_memory: int | None = DEFAULT_MAX_MEMORY,
         on_progress: Callable[[int, int], None] | None = None) -> Trace:
    """Read a saved trace, JSON or binary (`mgtui.trace.binary`). Runs no code, and checks
    every reference and bound. Raises ScenarioLoadError, naming the first bad field, if
    it is not a trace this mgtui can show, or if it holds more than `max_nodes` nodes
    or would take more than `max_memory` bytes (`mgtui.trace.load_limits`: checked from what
    each part declares, before it is read). `on_progress(bytes read, file size)` as a
    binary one is read."""
    p = Path(path)
    if not p.is_file():
        raise ScenarioLoadError(f"no such file: {path}" if not p.exists() else f"{path} is not a file")
    try:
        return _load(p, LoadLimits(max_nodes, max_memory), on_progress)
    except READ_ERRORS as exc:
        raise load_error(path, exc) from None


# What reading a saved trace may raise, each made a message by `load_error`.
READ_ERRORS = (MemoryError, OSError, RecursionError, KeyError, TypeError, ValueError,
               IndexError, OverflowError)


def load_error(path: str | os.PathLike, exc: BaseException) -> ScenarioLoadError:
    """What went wrong reading the saved trace at `path` (one of READ_ERRORS), in the
    words the user is shown (for `load`, and the app's own read of a binary trace)."""
    if isinstance(exc, LoadLimitError):
        return ScenarioLoadError(f"{path}: not loaded: it {exc.problem}")
    if isinstance(exc, MemoryError):
        return ScenarioLoadError(f"{path}: not loaded: there was not enough memory to read it")
    if isinstance(exc, (OSError, UnicodeDecodeError)):
        return ScenarioLoadError(f"cannot read {path}: {exc}")
    if isinstance(exc, json.JSONDecodeError):
        return ScenarioLoadError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}")
    if isinstance(exc, RecursionError):
        return ScenarioLoadError(f"{path} is not an mgtui trace: nested too deeply")
    return ScenarioLoadError(f"{path} is not an mgtui trace: {_reason(exc)}")


def _load(p: Path, limits: LoadLimits,
          on_progress: Callable[[int, int], None] | None = None) -> Trace:
    if tracefile.is_trace_file(p):
        return tracefile.load(p, limits, on_progress)
    taken = limits.nodes, limits.memory
    try:
        return read_json(p, limits)
    except NotStreamable:
        limits.nodes, limits.memory = taken  # (read again, from the start)
    limits.check(p.stat().st_size * JSON_CHAR_BYTES)  # (at the least, before it is read)
    data = p.read_bytes()
    limits.take_json(data)  # the document `json.loads` makes of it, at its worst
    return from_json(json.loads(data.decode("utf-8")), limits)


REASON = 300  # characters of a reason a message gives


def _reason(exc: Exception) -> str:
    """What is wrong, in a message's words and length."""
    if isinstance(exc, KeyError):
        return f"missing field {fields.shown(exc.args[0] if exc.args else '')}"
    text = str(exc)
    if "integer string conversion" in text:  # (json: a number of over 4,300 digits)
        return "a number has too many digits"
    return text if len(text) <= REASON else f"{text[:REASON]}…"


def to_dot(trace: Trace) -> str:
    """The final graph of the last forward pass, as micrograd's `draw_dot` draws it:
    a `label | data | grad` record per node, and an op node feeding each result."""
    forwards = [p for p in trace.passes if p.kind == "forward"]
    ids = trace.graph(forwards[-1]) if forwards else list(range(trace.node_count))
    lines = ["digraph mgtui {", "  rankdir=LR;", "  node [fontname=monospace];"]

    def q(s: str) -> str:
        return s.replace("\\", "\\\\").replace('"', '\\"').replace("|", "\\|") \
                .replace("{", "\\{").replace("}", "\\}").replace("<", "\\<").replace(">", "\\>")

    for nid in ids:
        label = q(trace.label(nid))
        if trace.arrays:  # (arrays: shape and summary)
            data, grad = (q(brief(trace.values.final_value(nid, g))) for g in (False, True))
        else:
            data, grad = f"{trace.replay.final_data[nid]:.4f}", f"{trace.replay.final_grad[nid]:.4f}"
        lines.append(f'  n{nid} [shape=record, label="{{ {label} | data {data} | grad {grad} }}"];')
        op = trace.op(nid)
        if op:
            lines.append(f'  n{nid}_op [label="{q(op)}"];')
            lines.append(f"  n{nid}_op -> n{nid};")
    for nid in ids:
        target = f"n{nid}_op" if trace.op(nid) else f"n{nid}"
        for c in trace.children(nid):
            lines.append(f"  n{c} -> {target};")
    lines.append("}")
    return "\n".join(lines) + "\n"
