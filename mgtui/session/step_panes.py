"""How each pane's part of a `StepState` is worked out from the trace at one step: the
nodes' marks, the header, the step detail with its notes, and the code the source pane
shows (the scenario's line, the `_backward` closure that ran, a finding's line).
`Session` calls these on every move; they read the trace and change nothing.
"""

from __future__ import annotations

import math
import weakref
from array import array
from dataclasses import replace
from pathlib import Path
from typing import Callable

from mgtui.trace.array_text import is_number, non_finite_warning
from mgtui.trace.values import state_values
from mgtui.session.assigns import assigning_lines
from mgtui.trace.engines import explain
from mgtui.trace.working import name as formula_name
from mgtui.session.notes import notes_in
from mgtui.session.step_state import Detail, Header, Source
from mgtui.trace import EventKind, Trace

# the `#:` notes of the files a trace's steps have shown: file -> line -> note
NoteCache = dict[str, dict[int, str]]
_NOTES: dict[int, NoteCache] = {}  # id(trace) -> its notes, while the trace lives


def notes_of(trace: Trace) -> NoteCache:
    """The notes read for `trace` so far, shared by every session on it (a class's
    sessions share their lesson's trace: its source is tokenized once, not at each
    session's first step, 10 ms for `mlp`). Only ever added to, a file whole at once.
    (By the trace's id: a trace is not hashable.)"""
    key = id(trace)
    notes = _NOTES.get(key)
    if notes is None:
        notes = _NOTES[key] = {}
        weakref.finalize(trace, _NOTES.pop, key, None)
    return notes


def short_path(filename: str) -> str:
    """A path as a pane title: relative to the working directory when it is under it,
    else its last two parts (`micrograd/engine.py`)."""
    p = Path(filename)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return "/".join(p.parts[-2:]) if len(p.parts) > 1 else filename


def marks(trace: Trace, event: int | None) -> dict[int, str]:
    """`run` on the node whose `_backward` runs and `acc` on the nodes it added to
    (`assign` on those a line like `x.grad = …` assigned); `new` on a node just made;
    `set` on one written outside a `_backward`."""
    if event is None:
        return {}
    kind, nid = trace.kind(event), trace.event_node(event)
    if kind is EventKind.BACKWARD:
        closure = trace.closure_of(event)
        assigns = assigning_lines(closure) if closure is not None else frozenset()
        marked = {w.node: "assign" if w.line in assigns else "acc" for w in trace.writes(event)}
        marked[nid] = "run"
        return marked
    return {nid: "new" if kind is EventKind.CREATE else "set"}


def header(trace: Trace, step: int, total: int, event: int | None, at_error: bool) -> Header:
    title = trace.title or Path(trace.scenario).name
    if at_error:
        return Header(title, f"✗ {trace.error.type} · step {step}/{total}")
    if event is None:
        return Header(title, f"start · step 0/{total}")
    p = trace.pass_at(event)
    n = len(trace.passes)
    where = (f"{p.kind} pass {p.index + 1}/{n} · {event - p.start + 1}/{len(p)} in pass · "
             f"step {step}/{total}")
    return Header(title, where, f"{p.kind} {p.index + 1}/{n} · {step}/{total}")


def detail(trace: Trace, data: array, grad: array, step: int, total: int, event: int | None,
           at_error: bool, numerical: dict[int, float] | None, notes: NoteCache) -> Detail:
    """The step detail: the start, the error, or event `event`'s working out with the
    values it touched (`data` and `grad`, the state at the step) and its notes.
    `numerical` is the doctor's local derivative of the event, by input, if measured."""
    shown = Detail(step, total, trace.title, where=trace.places.where)
    if at_error:
        return replace(shown, error=trace.error)
    if event is None:  # (values that were not recorded are said at the start)
        note = trace.arrays.unrecorded_note()
        return replace(shown, warnings=(f"⚠ {note}",)) if note else shown
    exp = explain(trace, data, grad, event, numerical)
    closure = trace.closure_of(event)
    warnings = []
    data, grad = state_values(trace, event + 1, data, grad)  # (arrays, where they are)
    for nid in dict.fromkeys([exp.node] + [c.target for c in exp.contributions]):
        for name, value in (("data", data[nid]), ("grad", grad[nid])):
            said = non_finite_warning(trace.label(nid), name, value)  # (an array's)
            if said is not None:
                warnings.append(said)
            elif is_number(value) and not math.isfinite(value):
                warnings.append(f"⚠ {trace.label(nid)}.{name} is {value}: not a finite "
                                "number, and everything computed from it will not be either")
    return replace(shown, explanation=exp, line=trace.line_of(event),
                   closure_file=Path(closure.filename).name if closure is not None else "",
                   warnings=tuple(warnings), notes=step_notes(trace, event, notes))


def step_notes(trace: Trace, event: int, notes: NoteCache) -> tuple[str, ...]:
    """The `#:` notes (`mgtui.session.notes`) of the lines event `event` happened on: its
    scenario line and, for a `_backward` call, the line that made the node (the
    forward half of its op) and the closure's lines that wrote; each note once. A
    backward pass (or a zero_grad, an update) runs many steps from one scenario line,
    `loss.backward()`: its note shows at the first of them, where the pass starts. The
    notes of each file are read once, into `notes`."""
    if trace.scenario not in notes:
        notes[trace.scenario] = notes_in(trace.source)
    where = [] if _runs_on(trace, event) else [(trace.scenario, trace.line_of(event))]
    closure = trace.closure_of(event)
    if trace.kind(event) is EventKind.BACKWARD:
        made = trace.index.created_at(trace.event_node(event))
        if made is not None:
            where.append((trace.scenario, trace.line_of(made)))
    if closure is not None and trace.kind(event) is EventKind.BACKWARD:
        if closure.filename not in notes:
            notes[closure.filename] = notes_in("\n".join(closure.lines), closure.first_line)
        where += [(closure.filename, w.line) for w in trace.writes(event)]
    found = (notes.get(filename, {}).get(line) for filename, line in where if line)
    return tuple(dict.fromkeys(note for note in found if note))


def _runs_on(trace: Trace, event: int) -> bool:
    """Is event `event` one of a run of steps from the same scenario line (not its
    first) in a pass that is not a forward one (there, each step makes a node of its
    own)?"""
    p = trace.pass_at(event)
    return (p is not None and p.kind != "forward" and event > p.start
            and trace.line_of(event - 1) == trace.line_of(event))


# -- the source pane ------------------------------------------------------------------------------

def source(trace: Trace, event: int | None, at_error: bool) -> Source:
    """The scenario line of a forward step or a write; the `_backward` closure that ran,
    with the lines that wrote marked `▶` (`!` a line that assigns a grad: `mgtui.session.assigns`);
    the line that raised, marked `✗`."""
    lines = tuple(trace.source.splitlines())
    name = Path(trace.scenario).name
    numbers = trace.places.line_number
    if event is not None and not at_error:
        closure_index = trace.closure_index(event)
        if trace.kind(event) is EventKind.BACKWARD and closure_index is not None:
            return closure_source(trace, event, closure_index)  # (from the closure's file)
    if not lines:
        return Source(("none",), f"{name}: no source in this trace")
    if at_error:
        line = trace.error.line
        return Source(("error", line), f"{_at(trace, line)}  raised {trace.error.type}",
                      lines, 1, {line: "✗"} if line else {}, numbers)
    if event is None:
        return Source(("start",), name, lines, numbers=numbers)
    kind = trace.kind(event)
    line = trace.line_of(event)
    what = {EventKind.CREATE: "made here", EventKind.GRAD: "seeded here"}.get(kind, "written here")
    return Source(("scenario", line), f"{_at(trace, line)}  {what}", lines, 1,
                  {line: "▶"} if line else {}, numbers)


def closure_source(trace: Trace, event: int, closure_index: int) -> Source:
    """The `_backward` closure event `event` ran, the lines that wrote marked."""
    closure = trace.closures[closure_index]
    assigns = assigning_lines(closure)
    marked = {w.line: "!" if w.line in assigns else "▶" for w in trace.writes(event) if w.line}
    nid = trace.event_node(event)
    title = (f"{formula_name(trace.label(nid))}._backward ({trace.op(nid) or 'leaf'}) · "
             f"{trace.places.place(closure.filename, closure.first_line, short_path(closure.filename))}")
    if closure.default:
        title += "  (the default no-op)"
    return Source(("closure", closure_index, tuple(sorted(marked))), title,
                  closure.lines, closure.first_line, marked, _numbers(trace, closure.filename))


def finding_source(trace: Trace, finding) -> Source | None:
    """The doctor's `finding`'s own line, marked `!`: in the scenario, or in the
    `_backward` closure that holds it."""
    if not finding.line:
        return None
    where = f"{trace.places.place(finding.file, finding.line, short_path(finding.file))}  {finding.title}"
    marked = {finding.line: "!"}
    numbers = _numbers(trace, finding.file)
    if Path(finding.file).resolve() == Path(trace.scenario).resolve():
        return Source(("finding", finding.line), where, tuple(trace.source.splitlines()),
                      1, marked, numbers)
    for closure in trace.closures:
        if closure.covers(finding.file, finding.line):
            return Source(("finding", finding.file, finding.line), where, closure.lines,
                          closure.first_line, marked, numbers)
    return None


def _at(trace: Trace, line: int | None) -> str:
    """`neuron.py:12`, or `lecture.ipynb, cell 3, line 2`."""
    return trace.places.place(trace.scenario, line or None, Path(trace.scenario).name) \
        + ("" if line else ":?")


def _numbers(trace: Trace, filename: str) -> Callable[[int], str] | None:
    """The gutter numbers of a file's lines: the notebook's own, in cells."""
    return trace.places.line_number if trace.places.in_cells(filename) else None
