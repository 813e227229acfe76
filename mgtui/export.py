"""Traces to and from JSON (format version 1), and the final graph as Graphviz DOT."""

from __future__ import annotations

import json
import math
import os
from array import array
from pathlib import Path
from typing import Any

from mgtui.recorder import ScenarioLoadError
from mgtui.trace import BACKWARD, DATA, EVENT_KINDS, FIELDS, GRAD, Closure, Pass, Trace, TraceError

FORMAT = "mgtui-trace"
VERSION = 1
PASS_KINDS = ("forward", "backward", "zero_grad", "update", "other")


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
    nodes = doc["nodes"]
    for i, n in enumerate(nodes):
        if n["id"] != i:
            raise ValueError(f"node ids must follow creation order (node {i} has id {n['id']})")
    count = len(nodes)
    child_start, child_ids = array("q", [0]), array("q")
    for n in nodes:
        for c in n["children"]:
            if not (isinstance(c, int) and 0 <= c < count):
                raise ValueError(f"node {n['id']} has an unknown child {c!r}")
        child_ids.extend(n["children"])
        child_start.append(len(child_ids))
    ev_kind, ev_node, ev_before, ev_after = array("b"), array("q"), array("d"), array("d")
    ev_line, ev_closure, ev_write_start = array("i"), array("i"), array("q")
    wr_node, wr_field, wr_before, wr_after, wr_line = (
        array("q"), array("b"), array("d"), array("d"), array("i"))
    for e in doc["events"]:
        kind = EVENT_KINDS.index(e["kind"])
        node = e["node"]
        if not (isinstance(node, int) and 0 <= node < count):
            raise ValueError(f"an event names an unknown node {node!r}")
        ev_kind.append(kind)
        ev_node.append(node)
        ev_write_start.append(len(wr_node))
        ev_line.append(e.get("line") or 0)
        closure = e.get("closure")
        ev_closure.append(closure if isinstance(closure, int) else -1)
        if kind in (GRAD, DATA):
            ev_before.append(unnum(e["before"]))
            ev_after.append(unnum(e["after"]))
        else:
            ev_before.append(0.0)
            ev_after.append(0.0)
        if kind == BACKWARD:
            for w in e["writes"]:
                if not (isinstance(w["node"], int) and 0 <= w["node"] < count):
                    raise ValueError(f"a write names an unknown node {w['node']!r}")
                wr_node.append(w["node"])
                wr_field.append(FIELDS.index(w.get("field", "grad")))
                wr_before.append(unnum(w["before"]))
                wr_after.append(unnum(w["after"]))
                wr_line.append(w.get("line") or 0)
    ev_write_start.append(len(wr_node))
    passes = tuple(
        Pass(i, p["kind"], int(p["start"]), int(p["end"])) for i, p in enumerate(doc["passes"])
    )
    for p in passes:
        if p.kind not in PASS_KINDS:
            raise ValueError(f"unknown pass kind {p.kind!r}")
    err = doc.get("error")
    return Trace(
        scenario=str(doc.get("scenario", "")),
        title=str(doc.get("title", "")),
        notes=str(doc.get("notes", "")),
        source=str(doc.get("source", "")),
        node_label=tuple("" if n["label"] == f"#{n['id']}" else str(n["label"]) for n in nodes),
        node_op=tuple(str(n["op"]) for n in nodes),
        node_data=array("d", (unnum(n["data"]) for n in nodes)),
        node_line=array("i", (n.get("line") or 0 for n in nodes)),
        child_start=child_start,
        child_ids=child_ids,
        final_data=array("d", (unnum(n["final_data"]) for n in nodes)),
        final_grad=array("d", (unnum(n["final_grad"]) for n in nodes)),
        ev_kind=ev_kind,
        ev_node=ev_node,
        ev_before=ev_before,
        ev_after=ev_after,
        ev_line=ev_line,
        ev_closure=ev_closure,
        ev_write_start=ev_write_start,
        wr_node=wr_node,
        wr_field=wr_field,
        wr_before=wr_before,
        wr_after=wr_after,
        wr_line=wr_line,
        closures=tuple(
            Closure(str(c["name"]), str(c["filename"]), int(c["first_line"]),
                    tuple(str(x) for x in c["lines"]), bool(c.get("default", False)))
            for c in doc.get("closures", [])
        ),
        error=None if err is None else TraceError(
            str(err["type"]), str(err.get("message", "")), err.get("line"),
            int(err.get("after_event", len(ev_kind)))),
        output=str(doc.get("output", "")),
        passes=passes,
    )


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
        op = trace.node_op[nid]
        if op:
            lines.append(f'  n{nid}_op [label="{q(op)}"];')
            lines.append(f"  n{nid}_op -> n{nid};")
    for nid in ids:
        target = f"n{nid}_op" if trace.node_op[nid] else f"n{nid}"
        for c in trace.children(nid):
            lines.append(f"  n{c} -> {target};")
    lines.append("}")
    return "\n".join(lines) + "\n"
