"""Traces from JSON (format version 1, as `mgtui.trace.export.write_json` writes it):
a file read as a stream (`read_json`), or a document already decoded (`from_json`),
each field checked as it goes into a `TraceBuilder` (TraceFormatError)."""

from __future__ import annotations

import json
import math
import re
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from mgtui.trace import engine_kind, fields
from mgtui.memory import collector_paused
from mgtui.trace.load_limits import FIELD_SPARE, LoadLimits, openers
from mgtui.trace import MAX_LINE, EventKind, Field, Trace, TraceBuilder, TraceFormatError
from mgtui.trace.arrays import EVENT, GRAD, NODE, WRITE, ArrayChunk

FORMAT = "mgtui-trace"
VERSION = 1
BATCH = 4096  # records charged to the limits at a time


def unnum(x: Any) -> float:
    """A JSON number (or "nan", "inf", "-inf") as a float; ValueError for anything else,
    OverflowError for an integer too big for a float."""
    if isinstance(x, str):
        if x in ("nan", "inf", "-inf"):
            return float(x)
        raise ValueError(f"not a number: {fields.shown(x)}")
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"not a number: {fields.shown(x)}")
    return float(x)


class NotStreamable(Exception):
    """The file is not laid out as `write_json` lays it out (or is not valid JSON):
    read it whole, with `json.loads`, which also gives the exact message for bad JSON."""


CHUNK = 1 << 20  # characters read at a time
_SPACE = re.compile(r"[ \t\n\r]*")


# One reader, two ways into it. A record exactly as `write_json` writes it is matched by
# one regular expression, without a dict (the fast path); any other (other spacing, a
# field more, a bad value) is read by `json`'s decoder (the slow path). Both hand the
# record's values to `_add_node` and `_add_event`, which hold every rule of what a field
# may be and means: the checks and their messages are the same whichever way it came.
_INT = r"(0|[1-9][0-9]{0,17})"
_NUM = r'(-?(?:0|[1-9][0-9]{0,20})(?:\.[0-9]+)?(?:[eE][+-]?[0-9]{1,3})?|"nan"|"inf"|"-inf")'
_LINE = r"(null|0|[1-9][0-9]{0,7})"
_STR = r'"((?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*)"'
_WRITE = (rf'\{{"node": {_INT}, "before": {_NUM}, "after": {_NUM}, "line": {_LINE}'
          r'(?:, "field": "(grad|data)")?\}')
_END = r"[ \t\n\r]*([,\]])"  # the separator after a record, or the end of the list


def _bare(pattern: str) -> str:
    return pattern.replace("(", "(?:").replace("(?:?:", "(?:")


_WRITE_RECORD = re.compile(_WRITE)
_EVENT_RECORD = re.compile(
    r"[ \t\n\r]*(?:"
    rf'\{{"kind": "create", "node": {_INT}\}}'
    rf'|\{{"kind": "backward", "node": {_INT}, "writes": \[((?:{_bare(_WRITE)}'
    rf'(?:, {_bare(_WRITE)})*)?)\], "line": {_LINE}, "closure": (null|{_bare(_INT)})\}}'
    rf'|\{{"kind": "(grad|data)", "node": {_INT}, "before": {_NUM}, "after": {_NUM}, '
    rf'"line": {_LINE}\}})' + _END)
_NODE_RECORD = re.compile(
    rf'[ \t\n\r]*\{{"id": {_INT}, "label": {_STR}(?:, "name": {_STR})?, "op": {_STR}, '
    rf'"children": \[((?:-1|{_bare(_INT)})(?:, (?:-1|{_bare(_INT)}))*)?\], "data": {_NUM}, '
    rf'"line": {_LINE}, "final_data": {_bare(_NUM)}, "final_grad": {_bare(_NUM)}\}}' + _END)
_CREATE, _BACKWARD = EventKind.CREATE, EventKind.BACKWARD
_LONE = (EventKind.GRAD, EventKind.DATA)


def _add_node(builder: TraceBuilder, i: int, nid: object, label: str, name: str, op: str,
              children: list[int], data: float, line: object) -> None:
    """Node `i`, read either way: its id must be `i`; a label that only repeats its
    `#id` or its name is no label of its own."""
    if nid != i:
        raise TraceFormatError(f"nodes[{i}].id", f"{fields.shown(nid)}: ids follow creation order")
    if line.__class__ is not int or not 0 <= line <= MAX_LINE:  # (a bool's class is bool)
        line = fields.line(line, f"nodes[{i}].line")
    builder.add_node("" if label == f"#{i}" or label == name else label, op, children, data,
                     line)
    if name:
        builder.add_name(i, name)


def _add_event(builder: TraceBuilder, i: int, kind: EventKind, node: int, line: object,
               closure: object = None, before: float = 0.0, after: float = 0.0) -> None:
    """Event `i`, read either way (its writes and values follow): a line may be null,
    and so may a closure; only a lone write (grad, data) has a before and an after."""
    if line.__class__ is not int or not 0 <= line <= MAX_LINE:
        line = fields.line(line, f"events[{i}].line")
    builder.add_event(kind, node, before, after, line,
                      -1 if closure is None else fields.index(closure, f"events[{i}].closure"))


def _add_write(builder: TraceBuilder, i: int, k: int, node: int, field: object,
               before: float, after: float, line: object) -> None:
    """Write `k` of event `i`'s `_backward` call, read either way: grad unless it says
    data."""
    if field == "grad":
        field = Field.GRAD
    elif field == "data":
        field = Field.DATA
    else:
        raise TraceFormatError(f"events[{i}].writes[{k}].field", "must be grad or data")
    if line.__class__ is not int or not 0 <= line <= MAX_LINE:
        line = fields.line(line, f"events[{i}].writes[{k}].line")
    builder.add_write(node, field, before, after, line)


# -- the fast path: records as `write_json` writes them --------------------------------


def _text(raw: str) -> str:
    return json.loads(f'"{raw}"') if "\\" in raw else raw


def _value(raw: str) -> float:
    return float(raw.strip('"'))


def _line_no(raw: str) -> int | None:
    return None if raw == "null" else int(raw)


def _node_record(builder: TraceBuilder, m: re.Match, i: int) -> None:
    nid, label, name, op, children, data, line = m.group(1, 2, 3, 4, 5, 6, 7)
    _add_node(builder, i, int(nid), _text(label), _text(name) if name else "", _text(op),
              [int(c) for c in children.split(", ")] if children else [], _value(data),
              _line_no(line))


def _event_record(builder: TraceBuilder, m: re.Match, i: int) -> None:
    (created, caller, writes, line, closure, kind, node, before, after,
     lone_line) = m.group(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
    if created is not None:
        _add_event(builder, i, _CREATE, int(created), 0)
    elif caller is not None:
        _add_event(builder, i, _BACKWARD, int(caller), _line_no(line),
                   None if closure == "null" else int(closure))
        if writes:
            for k, w in enumerate(_WRITE_RECORD.finditer(writes)):
                w_node, w_before, w_after, w_line, w_field = w.group(1, 2, 3, 4, 5)
                _add_write(builder, i, k, int(w_node), w_field or "grad", _value(w_before),
                           _value(w_after), _line_no(w_line))
    else:
        _add_event(builder, i, EventKind(kind), int(node), _line_no(lone_line), None,
                   _value(before), _value(after))


class _JSONStream:
    """The text of a file, a megabyte at a time, read one JSON value after another with
    `json`'s own decoder (so a value is parsed exactly as `json.loads` would).

    A value longer than what is read is tried again once as much more has been read as
    there was of it (so a value of n bytes is decoded about twice, not n / 1 MB times),
    and each try is checked first against `limits`: what decoding the rest of the text
    read may take at worst (`load_limits.json_cost`, counted once a read)."""

    def __init__(self, file: TextIO, limits: LoadLimits | None = None) -> None:
        self.file, self.buf, self.pos, self.eof = file, "", 0, False
        self.decode = json.JSONDecoder().raw_decode
        self.limits = limits
        self._cost: int | None = None  # of the text from `pos` on, when it was counted

    def _more(self, at_least: int = CHUNK) -> bool:
        if self.eof:
            return False
        chunk = self.file.read(max(at_least, CHUNK))
        if not chunk:
            self.eof = True
            return False
        self.buf, self.pos = self.buf[self.pos:] + chunk, 0  # (what was read is dropped)
        self._cost = None
        return True

    def _check(self) -> None:
        """What decoding a value that starts at `pos` may take, at worst, against the
        limits: the text read from there on bounds it (counted once a read)."""
        if self.limits is not None:
            if self._cost is None:
                self._cost = self.limits.json_bound(self.buf, self.pos)
            self.limits.check(self._cost)

    def peek(self) -> str:
        """The next character that is not white space ("" at the end)."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos: self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise NotStreamable()
        self.pos += 1

    def value(self, most: int | None = None, where: str = "") -> Any:
        """The next value; with `most`, a list or object that may hold more values than
        that (`load_limits.openers`, counted from above) is refused, naming `where`."""
        self.peek()
        while True:
            if len(self.buf) - self.pos < 4096 and self._more():
                continue  # a number must not be cut at the end of the buffer
            self._check()
            if (most is not None and self.buf[self.pos: self.pos + 1] in ("[", "{")
                    and openers(self.buf, self.pos) > most):
                raise TraceFormatError(where, "holds far more values than any field of a trace")
            try:
                with collector_paused():  # (no cycles: a value of millions of lists)
                    value, self.pos = self.decode(self.buf, self.pos)
                return value
            except json.JSONDecodeError:
                if not self._more(len(self.buf) - self.pos):  # (as much again)
                    raise NotStreamable() from None

    def records(self, pattern: re.Pattern, fast, slow, charge) -> None:
        """Read a list of records: each matched by `pattern` goes to `fast(match, i)`,
        any other to `slow(value, i)`; `charge(n)` is told of them a BATCH at a time,
        as they are read."""
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return
        i = 0
        while True:
            if len(self.buf) - self.pos < 65536:
                self._more()
            m = pattern.match(self.buf, self.pos)
            if m is not None:
                fast(m, i)
                self.pos, end = m.end(), m.group(m.lastindex)
            else:
                slow(self.value(), i)
                end = self.peek()
                self.pos += 1
            i += 1
            if i % BATCH == 0 or end == "]":
                charge(i % BATCH or BATCH)
            if end == "]":
                return
            if end != ",":
                raise NotStreamable()


def read_json(path: Path, limits: LoadLimits | None = None) -> Trace:
    """A JSON trace read as a stream: its nodes and events go into the builder one at a
    time, so no document of the whole trace is built, and a record as `write_json`
    writes it is read without even a dict. Raises `NotStreamable` for a
    file that is not an object with "format" and "version" before its nodes and events.
    Its nodes and events are charged to `limits` as they are read, a batch at a time."""
    limits = LoadLimits() if limits is None else limits
    head: dict[str, Any] = {}
    builder: TraceBuilder | None = None
    with open(path, encoding="utf-8") as file:
        s = _JSONStream(file, limits)
        s.expect("{")
        while s.peek() != "}":
            key = s.value()
            s.expect(":")
            if key in ("nodes", "events"):
                if builder is None:
                    if "format" not in head or "version" not in head:
                        raise NotStreamable()
                    builder = _new_builder(head)
                if key in head:
                    raise NotStreamable()
                head[key] = True
                b = builder
                if key == "nodes":
                    s.records(_NODE_RECORD, partial(_node_record, b),
                              lambda n, i: _node(b, fields.obj(n, f"nodes[{i}]"), i),
                              limits.take_nodes)
                else:
                    s.records(_EVENT_RECORD, partial(_event_record, b),
                              lambda e, i: _event(b, fields.obj(e, f"events[{i}]"), i),
                              limits.take_events)
            else:
                start, value = s.pos, s.value(FIELD_SPARE, fields.shown(key))
                if key in _HEAD_KEYS:  # (any other is read, and not kept)
                    head[key] = value
                    limits.take_text(s.pos - start)
            if s.peek() == ",":
                s.pos += 1
        s.pos += 1
        if s.peek() != "" or builder is None or "nodes" not in head or "events" not in head:
            raise NotStreamable()
    return _finish(builder, head)


def _check_format(doc: dict[str, Any]) -> None:
    if doc.get("format") != FORMAT:
        raise TraceFormatError("format", f'must be "{FORMAT}"')
    if doc.get("version") != VERSION:
        raise TraceFormatError("version", f"{fields.shown(doc.get('version'))} (this mgtui reads {VERSION})")


_HEAD = ("scenario", "title", "notes", "source")
# The fields of a document `_finish` reads, besides its nodes and events
_HEAD_KEYS = frozenset(("format", "version", *_HEAD, "closures", "unrecorded", "passes",
                        "error", "output"))


def _new_builder(doc: dict[str, Any]) -> TraceBuilder:
    """The builder for a document whose format and version are these."""
    _check_format(doc)
    return TraceBuilder(*(fields.text(doc.get(k), k) for k in _HEAD))


def _finish(builder: TraceBuilder, doc: dict[str, Any]) -> Trace:
    """The trace of a document whose nodes and events are in `builder`: the rest of
    its fields (which may come before them or after) read, and all of it checked."""
    for k in _HEAD:
        setattr(builder, k, fields.text(doc.get(k), k))
    if "engine" in doc:  # (older files do not say: `engine_kind.infer`, as it is built)
        builder.engine = engine_kind.checked_kind(doc["engine"], "engine")
    for k, c in enumerate(fields.seq(doc.get("closures", []), "closures")):
        builder.add_closure(fields.closure(c, f"closures[{k}]"))
    unrecorded = doc.get("unrecorded")
    if unrecorded is not None:
        pairs = [fields.seq(p, "unrecorded") for p in fields.seq(unrecorded, "unrecorded")]
        builder.add_arrays(ArrayChunk((), tuple(
            (fields.text(p[0], "unrecorded")[:80], fields.index(p[1], "unrecorded"))
            for p in pairs if len(p) == 2)))
    passes = fields.passes(doc.get("passes"))
    error = fields.error(doc.get("error"), builder.event_count)
    builder.validate(passes, error)
    return builder.build(error, fields.text(doc.get("output"), "output"), passes, last=True)


def from_json(doc: dict[str, Any], limits: LoadLimits | None = None) -> Trace:
    """A trace from its JSON document, checked field by field (TraceFormatError): the
    slow path of the same reader, for a file not laid out as `write_json` lays it out."""
    if not isinstance(doc, dict):
        raise TraceFormatError("format", f'must be "{FORMAT}"')
    builder = _new_builder(doc)
    nodes = fields.seq(doc.get("nodes"), "nodes")
    events = fields.seq(doc.get("events"), "events")
    if limits is not None:
        limits.take_nodes(len(nodes))
        limits.take_events(len(events))
    for i, n in enumerate(nodes):
        _node(builder, fields.obj(n, f"nodes[{i}]"), i)
    for i, e in enumerate(events):
        _event(builder, fields.obj(e, f"events[{i}]"), i)
    return _finish(builder, doc)


# -- the slow path: any record, as `json` decodes it --------------------------------------


def _node(builder: TraceBuilder, n: dict, i: int) -> None:
    where = f"nodes[{i}]"
    children = f"{where}.children"
    _add_node(builder, i, n.get("id"), fields.text(n.get("label"), f"{where}.label"),
              fields.text(n.get("name"), f"{where}.name"),  # a name, not a label it was given
              fields.text(n.get("op"), f"{where}.op"),
              [fields.index(c, children) for c in fields.seq(n.get("children"), children)],
              _num(n.get("data"), f"{where}.data"), n.get("line"))
    _arrays(builder, ((NODE, i, 0, n.get("data"), f"{where}.data"),
                      (GRAD, i, 0, n.get("grad"), f"{where}.grad")))


def _event(builder: TraceBuilder, e: dict, i: int) -> None:
    try:
        kind = EventKind(e.get("kind"))
    except ValueError:
        raise TraceFormatError(f"events[{i}].kind", f"{fields.shown(e.get('kind'))} is not a kind") from None
    node = fields.index(e.get("node"), f"events[{i}].node")
    if kind in _LONE:
        _add_event(builder, i, kind, node, e.get("line"), e.get("closure"),
                   _num(e.get("before"), f"events[{i}].before"),
                   _num(e.get("after"), f"events[{i}].after"))
        _arrays(builder, ((EVENT, i, 0, e.get("before"), f"events[{i}].before"),
                          (EVENT, i, 1, e.get("after"), f"events[{i}].after")))
    else:
        _add_event(builder, i, kind, node, e.get("line"), e.get("closure"))
    if kind is not _BACKWARD:
        return
    if e.get("values") is not None:  # optional: what the call read as it began
        ((_, pairs),) = fields.call_values([[i, e["values"]]], f"events[{i}].values")
        builder.add_values(i, pairs)
    for k, w in enumerate(fields.seq(e.get("writes"), f"events[{i}].writes")):
        where = f"events[{i}].writes[{k}]"
        w = fields.obj(w, where)
        _add_write(builder, i, k, fields.index(w.get("node"), f"{where}.node"),
                   w.get("field", "grad"), _num(w.get("before"), f"{where}.before"),
                   _num(w.get("after"), f"{where}.after"), w.get("line"))
        w_index = len(builder.wr_node) - 1
        _arrays(builder, ((WRITE, w_index, 0, w.get("before"), f"{where}.before"),
                          (WRITE, w_index, 1, w.get("after"), f"{where}.after")))


def _arrays(builder: TraceBuilder, values) -> None:
    """The arrays among a record's values (place, index, side, JSON value, where), into
    the builder's table once the record is in (`mgtui.trace.arrays`)."""
    found = tuple((place, index, side, fields.json_array(x, where))
                  for place, index, side, x, where in values if isinstance(x, dict))
    if found:
        builder.add_arrays(ArrayChunk(found))


def _num(x: Any, where: str) -> float:
    if isinstance(x, dict):  # an array (`fields.json_array`): its column holds nan
        return math.nan
    try:
        return unnum(x)
    except (ValueError, OverflowError):
        raise TraceFormatError(where, f"{fields.shown(x)} is not a number") from None
