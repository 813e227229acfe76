"""Traces to and from JSON (format version 1), and the final graph as Graphviz DOT."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from mgtui.recorder import ScenarioLoadError
from mgtui.trace import PASS_KINDS, Closure, EventKind, Field, Trace, TraceBuilder, TraceError

FORMAT = "mgtui-trace"
VERSION = 1


def num(x: float) -> float | str:
    """A float for JSON: non-finite numbers become the strings nan, inf and -inf."""
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def unnum(x: Any) -> float:
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
    """Read a saved trace. Runs no code. Raises ScenarioLoadError if it is not one."""
    p = Path(path)
    if not p.is_file():
        raise ScenarioLoadError(f"no such file: {path}" if not p.exists() else f"{path} is not a file")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioLoadError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ScenarioLoadError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    try:
        return from_json(doc)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ScenarioLoadError(f"{path} is not an mgtui trace: {exc}") from None


def from_json(doc: dict[str, Any]) -> Trace:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f'"format" must be "{FORMAT}"')
    if doc.get("version") != VERSION:
        raise ValueError(f"unsupported version {doc.get('version')!r} (this mgtui reads {VERSION})")
    builder = TraceBuilder(str(doc.get("scenario", "")), str(doc.get("title", "")),
                           str(doc.get("notes", "")), str(doc.get("source", "")))
    nodes = doc["nodes"]
    count = len(nodes)
    for i, n in enumerate(nodes):
        if n["id"] != i:
            raise ValueError(f"node ids must follow creation order (node {i} has id {n['id']})")
        for c in n["children"]:
            if not (isinstance(c, int) and 0 <= c < count):
                raise ValueError(f"node {n['id']} has an unknown child {c!r}")
        label = "" if n["label"] == f"#{i}" else str(n["label"])
        builder.add_node(label, str(n["op"]), n["children"], unnum(n["data"]), n.get("line") or 0)
    for e in doc["events"]:
        kind = EventKind(e["kind"])
        node = e["node"]
        if not (isinstance(node, int) and 0 <= node < count):
            raise ValueError(f"an event names an unknown node {node!r}")
        closure = e.get("closure")
        lone = kind in (EventKind.GRAD, EventKind.DATA)
        builder.add_event(kind, node, unnum(e["before"]) if lone else 0.0,
                          unnum(e["after"]) if lone else 0.0, e.get("line") or 0,
                          closure if isinstance(closure, int) else -1)
        if kind is EventKind.BACKWARD:
            for w in e["writes"]:
                if not (isinstance(w["node"], int) and 0 <= w["node"] < count):
                    raise ValueError(f"a write names an unknown node {w['node']!r}")
                builder.add_write(w["node"], Field(w.get("field", "grad")), unnum(w["before"]),
                                  unnum(w["after"]), w.get("line") or 0)
    for c in doc.get("closures", []):
        builder.add_closure(Closure(str(c["name"]), str(c["filename"]), int(c["first_line"]),
                                    tuple(str(x) for x in c["lines"]), bool(c.get("default", False))))
    passes = [(p["kind"], int(p["start"]), int(p["end"])) for p in doc["passes"]]
    for kind, _, _ in passes:
        if kind not in PASS_KINDS:
            raise ValueError(f"unknown pass kind {kind!r}")
    err = doc.get("error")
    error = None if err is None else TraceError(
        str(err["type"]), str(err.get("message", "")), err.get("line"),
        int(err.get("after_event", builder.event_count)))
    return builder.build(error, str(doc.get("output", "")), passes)


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
