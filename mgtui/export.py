"""Traces to and from JSON (format version 1), and the final graph as Graphviz DOT."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from mgtui import fields, tracefile
from mgtui.errors import ScenarioLoadError
from mgtui.trace import EventKind, Field, Trace, TraceBuilder, TraceFormatError

FORMAT = "mgtui-trace"
VERSION = 1


def num(x: float) -> float | str:
    """A float for JSON: non-finite numbers become the strings nan, inf and -inf."""
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def unnum(x: Any) -> float:
    """A JSON number (or "nan", "inf", "-inf") as a float; ValueError for anything else,
    OverflowError for an integer too big for a float."""
    if isinstance(x, str):
        if x in ("nan", "inf", "-inf"):
            return float(x)
        raise ValueError(f"not a number: {x!r}")
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"not a number: {x!r}")
    return float(x)


def to_json(trace: Trace) -> dict[str, Any]:
    nodes = [
        {
            "id": n.id,
            "label": n.label,
            **({"name": name} if (name := trace.derived_name(n.id)) else {}),
            "op": n.op,
            "children": list(n.children),
            "data": num(n.data),
            "line": n.line,
            "final_data": num(n.final_data),
            "final_grad": num(n.final_grad),
        }
        for n in trace.nodes()
    ]
    events: list[dict[str, Any]] = []
    for e in trace.events():
        if e.kind == "create":
            events.append({"kind": "create", "node": e.node})
        elif e.kind == "backward":
            events.append({
                "kind": "backward",
                "node": e.node,
                "writes": [
                    {"node": w.node, "before": num(w.before), "after": num(w.after),
                     "line": w.line, **({"field": w.field} if w.field != "grad" else {})}
                    for w in e.writes
                ],
                "line": e.line,
                "closure": e.closure,
            })
        else:
            events.append({"kind": e.kind, "node": e.node, "before": num(e.before),
                           "after": num(e.after), "line": e.line})
    error = trace.error
    return {
        "format": FORMAT,
        "version": VERSION,
        "scenario": trace.scenario,
        "title": trace.title,
        "notes": trace.notes,
        "nodes": nodes,
        "events": events,
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


def dumps(trace: Trace) -> str:
    return json.dumps(to_json(trace), allow_nan=False)


def load(path: str | os.PathLike) -> Trace:
    """Read a saved trace, JSON or binary (`mgtui.tracefile`). Runs no code, and checks
    every reference and bound. Raises ScenarioLoadError, naming the first bad field, if
    it is not a trace this mgtui can show."""
    p = Path(path)
    if not p.is_file():
        raise ScenarioLoadError(f"no such file: {path}" if not p.exists() else f"{path} is not a file")
    try:
        if tracefile.is_trace_file(p):
            return tracefile.load(p)
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioLoadError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ScenarioLoadError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ScenarioLoadError(f"{path} is not an mgtui trace: nested too deeply") from None
    except (TraceFormatError, MemoryError) as exc:
        raise ScenarioLoadError(f"{path} is not an mgtui trace: {exc}") from None
    try:
        return from_json(doc)
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ScenarioLoadError(f"{path} is not an mgtui trace: {what}") from None


def from_json(doc: dict[str, Any]) -> Trace:
    """A trace from its JSON document, checked field by field (TraceFormatError)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TraceFormatError("format", f'must be "{FORMAT}"')
    if doc.get("version") != VERSION:
        raise TraceFormatError("version", f"{doc.get('version')!r} (this mgtui reads {VERSION})")
    builder = TraceBuilder(*(fields.text(doc.get(k), k)
                             for k in ("scenario", "title", "notes", "source")))
    for i, n in enumerate(fields.seq(doc.get("nodes"), "nodes")):
        _node(builder, fields.obj(n, f"nodes[{i}]"), i)
    for i, e in enumerate(fields.seq(doc.get("events"), "events")):
        _event(builder, fields.obj(e, f"events[{i}]"), i)
    for k, c in enumerate(fields.seq(doc.get("closures", []), "closures")):
        builder.add_closure(fields.closure(c, f"closures[{k}]"))
    passes = fields.passes(doc.get("passes"))
    error = fields.error(doc.get("error"), builder.event_count)
    builder.validate(passes, error)
    return builder.build(error, fields.text(doc.get("output"), "output"), passes)


def _node(builder: TraceBuilder, n: dict, i: int) -> None:
    if n.get("id") != i:
        raise TraceFormatError(f"nodes[{i}].id", f"{n.get('id')!r}: ids follow creation order")
    where = f"nodes[{i}].children"
    children = [fields.index(c, where) for c in fields.seq(n.get("children"), where)]
    label = fields.text(n.get("label"), f"nodes[{i}].label")
    name = fields.text(n.get("name"), f"nodes[{i}].name")  # a name, not a label it was given
    builder.add_node("" if label in (f"#{i}", name) else label,
                     fields.text(n.get("op"), f"nodes[{i}].op"),
                     children, _num(n.get("data"), f"nodes[{i}].data"),
                     fields.line(n.get("line"), f"nodes[{i}].line"))
    if name:
        builder.add_name(i, name)


def _event(builder: TraceBuilder, e: dict, i: int) -> None:
    try:
        kind = EventKind(e.get("kind"))
    except ValueError:
        raise TraceFormatError(f"events[{i}].kind", f"{e.get('kind')!r} is not a kind") from None
    node = fields.index(e.get("node"), f"events[{i}].node")
    lone = kind in (EventKind.GRAD, EventKind.DATA)
    closure = e.get("closure")
    builder.add_event(kind, node,
                      _num(e.get("before"), f"events[{i}].before") if lone else 0.0,
                      _num(e.get("after"), f"events[{i}].after") if lone else 0.0,
                      fields.line(e.get("line"), f"events[{i}].line"),
                      fields.index(closure, f"events[{i}].closure") if closure is not None else -1)
    if kind is not EventKind.BACKWARD:
        return
    for k, w in enumerate(fields.seq(e.get("writes"), f"events[{i}].writes")):
        where = f"events[{i}].writes[{k}]"
        w = fields.obj(w, where)
        try:
            fld = Field(w.get("field", "grad"))
        except ValueError:
            raise TraceFormatError(f"{where}.field", "must be grad or data") from None
        builder.add_write(fields.index(w.get("node"), f"{where}.node"), fld,
                          _num(w.get("before"), f"{where}.before"),
                          _num(w.get("after"), f"{where}.after"),
                          fields.line(w.get("line"), f"{where}.line"))


def _num(x: Any, where: str) -> float:
    try:
        return unnum(x)
    except (ValueError, OverflowError):
        raise TraceFormatError(where, f"{x!r} is not a number") from None


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
        lines.append(
            f'  n{nid} [shape=record, label="{{ {label} | data {trace.final_data[nid]:.4f} '
            f'| grad {trace.final_grad[nid]:.4f} }}"];'
        )
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
