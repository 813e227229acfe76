"""A lesson as compact data for a page that replays it (`--export html`): each step's
working is written out here, in Python, by the same code the app uses, and the page only
shows it; each step carries only the values it writes, and the page rebuilds the table by
applying and undoing them, as `mgtui.session.timeline` does.

The data (`pack_lesson(trace).data`), every list columnar so it compresses well:

| key | what |
|---|---|
| `values` | every number shown, once, as the lesson writes it (`fmt`); the rest index it |
| `nodes` | `label` ("" for `#id`), `op` (each op once) and `opof` (per node, its index there), `kids` (each child as its id's distance below the node's, per node `nkids` of them), `data` (value at creation) |
| `events` | `kind` (one letter a step: c create, b backward, g grad, d data), `node` (each id as the difference from the step before's), `after` (the value of each g/d write, in order), `nwrites` per step, and per write `target` (its node's distance from the step's node), `field` (0 grad, 1 data, +2 for a line that assigns instead of adding) and `value` |
| `detail` | per step (0 is the start; a trace that raised has the error as its last) one string: lines apart by newlines, each line runs, each run a tab, a style letter (`STYLES`) and its text |
| `notes` | the lesson notes (the scenario's docstring after its title), as `paragraphs` |
| `passes` | `[kind, start, end]`, and `views` with `pass_view`: the graph each pass shows (`used`, `made`, `topo` as id differences, and `uses`: per node of `used` then `made`, how many nodes of that graph take it as an input, as the app's `uses` column counts) |

Text in `detail` names unlabelled nodes relative to the step's node (`#@-3` for the node
three ids below it; `@@` stands for a literal `@`): the ids of one lesson repeat in
shape from step to step, so the deflated working is 39% smaller (mlp: 713 KB → 438 KB). `decode_ids`
undoes it (and the page does the same).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from mgtui.session.assigns import assigning_lines
from mgtui.trace.engines import explain
from mgtui.trace.explain import Contribution, Explanation, fmt
from mgtui.session.notes import notes_in
from mgtui.safe import inert_line
from mgtui.session import Session, sparkline
from mgtui.session.timeline import Timeline
from mgtui.trace import EventKind, Field, Trace
from mgtui.trace.array_text import fitted
from mgtui.trace.arrays import Value
from mgtui.session.view import GraphView, view_key

FORMAT = "mgtui-lesson"
VERSION = 1
KIND_LETTERS = {EventKind.CREATE: "c", EventKind.BACKWARD: "b", EventKind.GRAD: "g",
                EventKind.DATA: "d"}
ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}
_ID = re.compile(r"#(0|[1-9]\d{0,8})(?!\d)")  # an id as `#id` writes it
_LIST_ITEM = re.compile(r"\s*(?:[-*+]|\d+[.)])\s")
_CODED = re.compile(r"#@(-?\d+)|@@")

STYLES = {"p": "plain", "b": "bold", "d": "dim", "i": "italic", "I": "bold italic",
          "R": "bold reverse"}


# -- relative node ids in text ------------------------------------------------------------------

def encode_ids(text: str, base: int) -> str:
    """`text` with each `#id` written relative to node `base` (`#@-3`), `@` doubled."""
    if "@" in text:
        text = text.replace("@", "@@")
    if "#" not in text:
        return text
    parts = _ID.split(text)  # text, id, text, id, …, text
    parts[1::2] = [f"#@{int(nid) - base}" for nid in parts[1::2]]
    return "".join(parts)


def decode_ids(text: str, base: int) -> str:
    """The inverse of `encode_ids` (the page's own decoder does the same)."""
    return _CODED.sub(lambda m: "@" if m.group(1) is None else f"#{base + int(m.group(1))}",
                      text)


def deltas(ids) -> list[int]:
    """Each id as its difference from the one before (the first from 0)."""
    out, last = [], 0
    for i in ids:
        out.append(i - last)
        last = i
    return out


# -- the numbers ---------------------------------------------------------------------------------

class Values:
    """Every number the page shows, once each, as the lesson writes it (`fmt`); an
    array (`mgtui.trace.arrays`) as the node table shows it: in full where that is
    short, else its shape and a summary."""

    def __init__(self) -> None:
        self._index: dict[float | str | tuple[str, str], int] = {}
        self.numbers: list[Value] = []
        self.texts: list[str] = []

    def __call__(self, x: Value) -> int:
        text = fitted(x, ARRAY_WIDTH)  # (an array's; None for a number)
        if text is not None:
            return self._array(x, text)
        key: float | str = x if x == x else "nan"
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.numbers)
            self.numbers.append(x)
            self.texts.append(fmt(x))
        return i

    def _array(self, x: Value, text: str) -> int:
        i = self._index.get(("array", text))
        if i is None:
            i = self._index[("array", text)] = len(self.numbers)
            self.numbers.append(x)
            self.texts.append(text)
        return i


ARRAY_WIDTH = 28  # an array shown in full up to this many characters, else summarised


# -- a step's working, as the step detail shows it ------------------------------------------------

def ordinal(n: int) -> str:
    return ORDINAL.get(n, f"{n}th")


def run(style: str, text: str) -> str:
    """One run of a step's text: a tab, its style's letter (`STYLES`), the text on one
    line (so a tab or a newline in it cannot end the run: `inert_line`)."""
    if "\t" in text or "\n" in text:
        text = inert_line(text)
    return f"\t{style}{text}"


def explanation_text(exp: Explanation, where: str, closure_file: str, place) -> list[str]:
    """An explanation's lines as the app's step detail writes them (`widgets/step_detail.py`)."""
    lines = [run("b", exp.title) + (run("d", f"  ({where})") if where else "")]
    local = run("d", "  local derivative: ") + run("p", exp.local) if exp.local else ""
    notes = [run("i", "  • " + note) for note in exp.notes]
    if exp.kind == "backward":
        lines += notes
        if exp.values:
            lines.append(run("d", "  values at this call: ") + run("p", exp.values))
        if local:
            lines.append(local)
        lines.append(run("d", "  " + exp.equation))
        for c in exp.contributions:
            lines += contribution_text(c, closure_file, place)
        return lines
    lines.append(run("b", "  " + exp.equation))
    if exp.kind == "create" and local:
        lines.append(local)
    return lines + notes


def contribution_text(c: Contribution, closure_file: str, place) -> list[str]:
    """One grad a `_backward` wrote: the formula, the numbers, `before → after (+delta)`."""
    change = run("p", "     ") + run("R" if c.mismatch else "b", c.change)
    if c.nth > 1:
        change += run("I", f"  ← {ordinal(c.nth)} contribution to {c.label}.grad")
    elif c.uses > 1:
        change += run("i", f"  ({ordinal(c.nth)} of {c.uses} uses)")
    if c.line:
        change += run("d", f"  ({place(closure_file, c.line)})")
    lines = [run("b", "  • ") + run("p", c.formula + (" = " + c.numbers if c.numbers else "")),
             change]
    if c.mismatch and c.expected is not None:
        lines.append(run("b", f"     ⚠ expected {fmt(c.expected)} from the op's derivative"))
    return lines


def start_text(trace: Trace, total: int) -> list[str]:
    lines = [run("b", "start: nothing has run yet"), run("i", "  " + trace.title)]
    if total == 0:
        lines.append(run("b", "  This scenario made no Values, so there is nothing to step through."))
    else:
        lines.append(run("d", "  Press n, → or space to take the first step."))
    return lines


def error_text(trace: Trace) -> list[str]:
    error = trace.error
    where = trace.places.where(error.line) if error.line else ""
    message = (error.message or error.type).splitlines() or [error.type]
    return [run("R", f"✗ the scenario raised {error.type}") + (run("d", f"  ({where})") if where else ""),
            *(run("b", "  " + line) for line in message),
            run("i", "  The trace stops here: every step before this one is what the scenario "
                "did up to the error.")]


# -- the whole lesson ----------------------------------------------------------------------------

@dataclass
class Lesson:
    """The packed lesson: `data` goes into the page as JSON; `views` are the graphs its
    passes show (for the pictures), `values` the numbers `data` indexes."""

    data: dict[str, Any]
    views: list[GraphView]
    values: Values


def pack_lesson(trace: Trace) -> Lesson:
    values = Values()
    values(0.0)  # index 0: a grad before anything is written to it
    data: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "title": trace.title,
        "scenario": trace.scenario.replace("\\", "/").rsplit("/", 1)[-1],  # no local path
        "notes": paragraphs(trace.notes),
        "total": len(trace) + (1 if trace.error is not None else 0),
        "error": trace.error is not None,
        "error_type": trace.error.type if trace.error is not None else "",
    }
    data["nodes"] = pack_nodes(trace, values)
    data["events"] = pack_events(trace, values)
    data["detail"] = pack_detail(trace, data["total"])
    views = pack_passes(trace, data)
    data["values"] = values.texts
    return Lesson(data, views, values)


def paragraphs(markdown: str) -> list[str]:
    """Lesson notes as paragraphs, each one's lines joined as Markdown joins them (a list
    item still starts a line of its own), for a page that wraps them to its width."""
    out = []
    for block in re.split(r"\n\s*\n", markdown.strip()):
        lines: list[str] = []
        for line in block.splitlines():
            if lines and not _LIST_ITEM.match(line):
                lines[-1] += " " + line.strip()
            else:
                lines.append(line.rstrip())
        if lines:
            out.append("\n".join(lines))
    return out


def pack_nodes(trace: Trace, values: Values) -> dict[str, list]:
    ops: dict[str, int] = {}
    label, op, nkids, kids, value = [], [], [], [], []
    for nid in range(trace.node_count):
        text = trace.label(nid)
        label.append("" if text == f"#{nid}" else text)
        op.append(ops.setdefault(trace.op(nid), len(ops)))
        children = trace.children(nid)
        nkids.append(len(children))
        kids.extend(nid - c for c in children)
        value.append(values(trace.values.created_value(nid)))
    return {"label": label, "op": list(ops), "opof": op, "nkids": nkids, "kids": kids,
            "data": value}


def pack_events(trace: Trace, values: Values) -> dict[str, Any]:
    kinds, nodes, after, nwrites, target, fields, wvalue = [], [], [], [], [], [], []
    for i in range(len(trace)):
        kind, nid = trace.kind(i), trace.event_node(i)
        kinds.append(KIND_LETTERS[kind])
        nodes.append(nid)
        if kind in (EventKind.GRAD, EventKind.DATA):
            after.append(values(trace.values.event_value(i, *trace.change(i))[1]))
        writes = trace.writes(i)
        nwrites.append(len(writes))
        if not writes:
            continue
        closure = trace.closure_of(i)
        assigns = assigning_lines(closure) if closure is not None else frozenset()
        for w in writes:
            target.append(w.node - nid)
            fields.append((0 if w.field is Field.GRAD else 1) + (2 if w.line in assigns else 0))
            wvalue.append(values(trace.values.write_value(w.index, w.before, w.after)[1]))
    return {"kind": "".join(kinds), "node": deltas(nodes), "after": after,
            "nwrites": nwrites, "target": target, "field": fields, "value": wvalue}


def pack_detail(trace: Trace, total: int) -> list[str]:
    """Every step's working, its warnings and its `#:` notes, as the step detail shows
    them: one string a step, its lines apart by newlines, each line runs (`run`); node
    ids relative to the step's node (`encode_ids`)."""
    steps = ["\n".join(start_text(trace, total))]
    timeline = Timeline(trace)
    notes = StepNotes(trace)
    place = detail_place(trace)
    for i in range(len(trace)):
        timeline.step()
        exp = explain(trace, timeline.data, timeline.grad, i)
        closure = trace.closure_of(i)
        closure_file = closure.filename.rsplit("/", 1)[-1] if closure is not None else ""
        lines = explanation_text(exp, trace.places.where(trace.line_of(i)), closure_file, place)
        lines += [run("R", "  " + w) for w in notes.warnings(i, exp, timeline)]
        lines += [run("b", "  ✎ ") + run("i", note) for note in notes.of(i)]
        steps.append(encode_ids("\n".join(lines), exp.node))
    if trace.error is not None:
        steps.append("\n".join(error_text(trace)))
    return steps


def detail_place(trace: Trace):
    """Where a `_backward`'s write is, as the step detail says it (`neuron.py:12`)."""
    def place(closure_file: str, line: int) -> str:
        if closure_file.endswith(".ipynb"):  # a closure of the notebook: in its cells
            return f"{closure_file}, {trace.places.where(line)}"
        return f"{closure_file}:{line}" if closure_file else trace.places.where(line)
    return place


class StepNotes:
    """A step's `#:` notes and its non-finite warnings, as the session gives them. The
    session is asked only when there is something to ask: it costs a step's whole state."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.session: Session | None = None
        self.any_notes = bool(notes_in(trace.source)) or any(
            notes_in("\n".join(c.lines), c.first_line) for c in trace.closures)
        first = trace.values.first_non_finite()
        self.finite_before = len(trace) if first is None else first

    def _session(self) -> Session:
        if self.session is None:
            self.session = Session(self.trace)
        return self.session

    def of(self, index: int) -> tuple[str, ...]:
        return self._session().step_notes(index) if self.any_notes else ()

    def warnings(self, index: int, exp: Explanation, timeline: Timeline) -> tuple[str, ...]:
        if index < self.finite_before:
            return ()
        touched = [exp.node] + [c.target for c in exp.contributions]
        if all(math.isfinite(timeline.data[n]) and math.isfinite(timeline.grad[n])
               for n in touched):
            return ()
        return self._session().goto(index + 1).detail.warnings


def pack_passes(trace: Trace, data: dict[str, Any]) -> list[GraphView]:
    """The passes, and the graph each one shows (`mgtui.session.view`), built once per graph."""
    data["passes"] = [[p.kind, p.start, p.end] for p in trace.passes]
    keys: dict[tuple[int, int], int] = {}
    views: list[GraphView] = []
    pass_view = []
    for p in trace.passes:
        key, forward, backward = view_key(trace, p.index)
        if key not in keys:
            keys[key] = len(views)
            views.append(GraphView.build(trace, forward, backward))
        pass_view.append(keys[key])
    data["views"] = [{"used": deltas(v.used), "made": deltas(v.made), "topo": deltas(v.topo),
                      "uses": [v.uses(nid) for nid in (*v.used, *v.made)]}
                     for v in views]
    data["pass_view"] = pass_view
    losses = trace.losses()
    data["losses"] = {"passes": [i for i, _ in losses], "bars": sparkline(tuple(v for _, v in losses))}
    return views
