"""The array engine's JSON: a trace whose values may be arrays written as JSON
(`mgtui.trace.export` writes the rest), each array an object with its shape, dtype
and values, the reader's `fields.json_array`."""

from __future__ import annotations

import json
from functools import partial
from json.encoder import encode_basestring_ascii
from typing import Any, TextIO

from mgtui.trace import EventKind, Trace
from mgtui.trace.arrays import ArrayValue
from mgtui.trace.fields import json_number as num

_quote = encode_basestring_ascii


def json_value(v: float | ArrayValue) -> Any:
    """A value for JSON: a float (non-finite as a string), or an array as an object with
    its shape, dtype and values as nested lists (a big one: its first values and a
    summary), the reader's `fields.json_array`."""
    if not isinstance(v, ArrayValue):
        return num(v)
    if v.whole:
        flat = [num(x) for x in v.values]
        nested: Any = flat
        if v.shape:
            for n in reversed(v.shape[1:]):
                nested = [nested[k:k + n] for k in range(0, len(nested), n)] if n else []
        else:
            nested = flat[0]
        return {"shape": list(v.shape), "dtype": v.dtype, "values": nested}
    low, high, mean, norm, bad = v.summary
    return {"shape": list(v.shape), "dtype": v.dtype, "first": [num(x) for x in v.values],
            "summary": [num(low), num(high), num(mean), num(norm), bad,
                        *([v.basis] if v.basis else [])]}


def write_json_arrays(trace: Trace, out: TextIO, head: str, tail: dict[str, Any]) -> None:
    """`mgtui.trace.export.write_json` for a trace with arrays (`head`: its fields before its
    nodes, `tail` those after its events): each record built as a dict (such a trace has
    few records, each of them large); an array node also gives the grad it was made with
    (`"grad"`), and values not recorded are listed (`"unrecorded"`)."""
    dumps_ = partial(json.dumps, allow_nan=False, ensure_ascii=True)
    t, v = trace, json_value
    out.write(head + '\n"nodes": [\n')
    nodes = []
    for n in range(t.node_count):
        rec = {"id": n, "label": t.label(n), "op": t.op(n), "children": list(t.children(n)),
               "data": v(t.values.created_value(n)), "line": t.line(n),
               "final_data": v(t.values.final_value(n, False)), "final_grad": v(t.values.final_value(n, True))}
        if t.derived_name(n):
            rec["name"] = t.derived_name(n)
        if n in t.arrays.grads:
            rec["grad"] = v(t.arrays.grads[n])
        nodes.append(dumps_(rec))
    out.write(",\n".join(nodes) + '\n],\n"events": [\n')
    events = []
    for i in range(len(t)):
        e = t.event(i)
        rec = {"kind": e.kind.value, "node": e.node}
        if e.kind is EventKind.BACKWARD:
            rec["writes"] = [
                {"node": w.node, **dict(zip(("before", "after"), map(v, t.values.write_value(
                    w.index, w.before, w.after)))), "line": w.line, "field": w.field.value}
                for w in e.writes]
            rec["line"], rec["closure"] = e.line, e.closure
        elif e.kind is not EventKind.CREATE:
            before, after = t.values.event_value(i, e.before, e.after)
            rec.update(before=v(before), after=v(after), line=e.line)
        events.append(dumps_(rec))
    out.write(",\n".join(events) + "\n],\n")
    if t.arrays.unrecorded:
        tail["unrecorded"] = [[k, n] for k, n in sorted(t.arrays.unrecorded.items())]
    out.write(",\n".join(f"{_quote(k)}: {dumps_(x)}" for k, x in tail.items()) + "}\n")
