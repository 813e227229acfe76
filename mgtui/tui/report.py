"""Text for the terminal: the trace for `--print` (the passes, each step worked out, the
nodes), and the gradient doctor's report for `--check`.

A trace file may hold anything: a label of a megabyte, output of one 50 MB line. What
`--print` shows is bounded as the app bounds it: the output to OUTPUT_BUDGET characters
(`mgtui.safe.bounded`), every line to LINE_BUDGET and a label in the table of nodes to
LABEL_BUDGET, each cut in the middle with a note of how much was left out (so printing
takes time in proportion to what is shown, not to the longest line)."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, TextIO

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from mgtui.trace.engines import explain
from mgtui.trace.explain import fmt
from mgtui.trace.notebook import cells_of
from mgtui.safe import bounded
from mgtui.session import Session
from mgtui.session.timeline import Timeline
from mgtui.trace import EventKind, Trace

if TYPE_CHECKING:
    from mgtui.doctor import Report

MAX_TABLE_ROWS = 2000
OUTPUT_BUDGET = 200_000  # characters of the scenario's output shown (its head and tail)
LINE_BUDGET = 2000  # characters of one line shown
LABEL_BUDGET = 60  # characters of a label (or of its inputs' labels) in the table of nodes


def cut(line: str, budget: int = LINE_BUDGET) -> str:
    """One line of at most about `budget` characters: its head and its tail, with how
    much was left out between them."""
    if len(line) <= budget:
        return line
    half = budget // 2
    return f"{line[:half]} … {len(line) - 2 * half:,} characters left out … {line[-half:]}"


def bounded_lines(text: str, budget: int = LINE_BUDGET) -> str:
    """`text` with every line longer than `budget` cut (`cut`)."""
    if len(text) <= budget:
        return text
    return "\n".join(cut(line, budget) for line in text.split("\n"))


def bounded_text(text: str, style: str = "") -> Text:
    """Text as --print shows it: no line longer than LINE_BUDGET."""
    return Text(bounded_lines(text), style=style)


class Hanging:
    """One line of `--print`: `prefix`, then `body` wrapped to the width left, each of its
    lines after the first indented under the body's start (never back at column 0)."""

    def __init__(self, prefix: str, body: Text) -> None:
        self.prefix = prefix
        self.body = body

    def __str__(self) -> str:
        return self.prefix + self.body.plain

    def __rich_console__(self, console: Console, options: ConsoleOptions):
        indent = cell_len(self.prefix)
        lines = self.body.wrap(console, max(options.max_width - indent, 20), overflow="fold")
        for k, line in enumerate(lines):
            line.rstrip()
            yield Segment(self.prefix if k == 0 else " " * indent)
            yield from line.render(console)
            yield Segment.line()


def hanging(prefix: str, body: str, style: str = "") -> Hanging:
    return Hanging(prefix, bounded_text(body, style))


def print_trace(trace: Trace, file: TextIO, *, limit: int | None = 200, width: int = 100,
                steps: tuple[int, int] | None = None) -> None:
    """Write the trace: its title, its lesson notes, each pass's steps worked out, the
    nodes. `limit` caps the steps shown per pass (None: all of them); `steps` (first,
    last), numbered from 1, prints only those steps, and the nodes they touch as they
    are at the last."""
    console = Console(file=file, width=width, highlight=False, markup=False, emoji=False,
                      color_system=None, soft_wrap=False)

    def say(text: str = "", style: str = "") -> None:
        console.print(bounded_text(text, style))

    say(trace.title, style="bold")
    say(f"{trace.scenario}: {trace.node_count:,} nodes, {len(trace):,} steps, "
        f"{len(trace.passes)} passes")
    first, last = steps or (1, len(trace))
    if steps is not None:
        say(f"steps {first:,}–{last:,} of {len(trace):,}")
    if trace.arrays.unrecorded:  # values neither numbers nor arrays: said out loud
        say(f"⚠ {trace.arrays.unrecorded_note()}")
    print_lesson_notes(trace.notes, console)
    timeline = Timeline(trace)
    notes = Session(trace).step_notes  # each step's `#:` notes, as the app shows them
    total = len(trace.passes)
    for p in trace.passes:
        lo, hi = max(p.start, first - 1), min(p.end, last)  # the events printed
        if lo >= hi:
            continue
        say()
        say(f"Pass {p.index + 1}/{total}: {p.kind}, steps {p.start + 1}–{p.end}", style="bold")
        shown = hi - lo if limit is None else min(hi - lo, limit)
        timeline.seek(lo)
        for index in range(lo, lo + shown):
            timeline.step()
            for line in step_lines(trace, timeline, index, notes(index)):
                console.print(line)
        if shown < hi - lo:
            say(f"  … {hi - lo - shown:,} more steps in this pass (--all prints every step, "
                "--steps A:B a range)", style="dim")
    say()
    if steps is None:
        print_nodes(trace, console)
    else:
        print_nodes(trace, console, touched(trace, first - 1, last), last)
    if trace.error is not None:
        say()
        say(f"error after step {trace.error.after_event}: {trace.places.error_text()}")
    if trace.output:
        say()
        say("scenario output:", style="bold")
        say(bounded(trace.output.rstrip("\n"), OUTPUT_BUDGET))


_LIST_ITEM = re.compile(r"(\s*(?:[-*+]|\d+[.)])\s+)(.*)")


def print_lesson_notes(notes: str, console: Console) -> None:
    """The lesson notes (the scenario's docstring after its title), a paragraph at a
    time, wrapped to the width; a list item's lines go on under its text."""
    from mgtui.tui.export_html_data import paragraphs

    for paragraph in paragraphs(notes):
        console.print()
        for line in paragraph.split("\n"):
            item = _LIST_ITEM.fullmatch(line)
            console.print(hanging(*item.groups()) if item else hanging("", line.strip()))


def touched(trace: Trace, lo: int, hi: int) -> list[int]:
    """The nodes the events `lo`..`hi` (0-based, `hi` excluded) make, call or write."""
    nodes: set[int] = set()
    for index in range(lo, hi):
        node = trace.event_node(index)
        nodes.add(node)
        if trace.kind(index) is EventKind.CREATE:
            nodes.update(trace.children(node))
        nodes.update(w.node for w in trace.writes(index))
    return sorted(nodes)


def step_lines(trace: Trace, timeline: Timeline, index: int,
               notes: tuple[str, ...] = ()) -> list[Hanging]:
    """One step worked out, then its `#:` notes (`✎`); a line too long for the width
    goes on indented under its own start."""
    ex = explain(trace, timeline.data, timeline.grad, index)
    line = trace.line_of(index)
    where = f"  ({trace.places.where(line)})" if line else ""
    head = f"  step {index + 1:>4}  "
    pad = " " * len(head)
    if ex.kind == "backward":
        out = [hanging(head, f"{ex.title}{where}")]
        if ex.values:
            out.append(hanging(pad, f"values at this call: {ex.values}"))
        if ex.local:
            out.append(hanging(pad, f"local derivative: {ex.local}"))
        for c in ex.contributions:
            working = f"{c.formula} = {c.numbers}" if c.numbers else c.formula
            out.append(hanging(f"{pad}  ", working))
            out.append(hanging(f"{pad}    ", c.change))
        out.extend(hanging(f"{pad}  note: ", n) for n in ex.notes)
        out.extend(hanging(f"{pad}  ✎ ", note) for note in notes)
        return out
    text = ex.equation if ex.kind == "create" else f"{ex.title}    {ex.equation}"
    out = [hanging(head, f"{text}{where}")]
    out.extend(hanging(f"{pad}  note: ", n) for n in ex.notes if ex.kind != "create")
    out.extend(hanging(f"{pad}  ✎ ", note) for note in notes)
    return out


def print_nodes(trace: Trace, console: Console, nodes: list[int] | None = None,
                at: int | None = None) -> None:
    """The table of nodes: all of them as they end (the first MAX_TABLE_ROWS), or
    `nodes` as they are after step `at`."""
    count = trace.node_count if nodes is None else len(nodes)
    title = (f"Nodes at the end ({count:,})" if nodes is None
             else f"Nodes of these steps, after step {at:,} ({count:,})")
    table = Table(title=title, title_justify="left")
    line = "cell:line" if cells_of(trace.source) else "line"  # a notebook's lines are in cells
    for name in ("id", "label", "op", "data", "grad", "inputs", line):
        table.add_column(name, justify="right" if name in ("id", "data", "grad", line) else "left")
    if nodes is None:
        rows, data, grad, position = range(min(count, MAX_TABLE_ROWS)), None, None, len(trace)
    else:
        timeline = Timeline(trace, at or 0)
        rows, data, grad, position = nodes[:MAX_TABLE_ROWS], timeline.data, timeline.grad, at
    for nid in rows:
        inputs = ", ".join(cut(trace.label(c), LABEL_BUDGET) for c in trace.children(nid))
        if data is None:
            values = trace.values.final_value(nid, False), trace.values.final_value(nid, True)
        else:
            values = (trace.values.value_at(nid, False, position, data[nid]),
                      trace.values.value_at(nid, True, position, grad[nid]))
        table.add_row(
            str(nid), cut(trace.label(nid), LABEL_BUDGET), cut(trace.op(nid), LABEL_BUDGET),
            fmt(values[0]), fmt(values[1]), cut(inputs, LABEL_BUDGET),
            trace.places.line_number(trace.line(nid)) if trace.line(nid) else "")
    console.print(table)
    if count > MAX_TABLE_ROWS:
        console.print(Text(f"… and {count - MAX_TABLE_ROWS:,} more nodes", style="dim"))


# -- the doctor's report -----------------------------------------------------------------


def display_path(file: str) -> str:
    """`file` relative to the working directory, if it is below it."""
    try:
        rel = os.path.relpath(file)
    except ValueError:
        return file
    return rel if not rel.startswith("..") else file


def format_report(report: Report) -> str:
    """The `--check` report: what was checked, each finding, and the verdict."""
    t = report.trace
    out = [f"{t.title}", f"{display_path(t.scenario)}: {t.node_count:,} nodes, {len(t):,} steps"]
    out.append(f"checked: {report.scope}; {numerically(report)}")
    out.extend(f"note: {n}" for n in report.notes)
    out.append("")
    for f in report.findings:
        p = t.pass_at(f.step)
        where = f", step {f.step + 1}"
        if p is not None and p.kind == "backward":
            where += f", backward pass {report.backward_number(p)}/{report.backward_count}"
        out.append(f"{f.kind}: {f.title}")
        out.append(f"  node   {f.node_name}{where}")
        if f.line:
            out.append(f"  at     {t.places.place(f.file, f.line, display_path(f.file))}: {f.text}")
        out.append(f"  {f.message}")
        out.append("")
    if report.error is not None:
        out.append(f"the scenario raised: {t.places.error_text()} (checked up to there)")
    n = len(report.findings)
    verdict = "no problems found" if n == 0 else f"{n} problem{'s' if n != 1 else ''} found"
    unchecked = report.unchecked
    if unchecked is None:
        out.append(f"{verdict}.")
    else:  # (`--check` exits 3 when that is all: a verdict on what was not checked is none)
        out.append(f"{verdict}, but {unchecked}" + (": not a clean bill." if n == 0 else "."))
    out.append(f"({report.seconds:.1f} s)")
    return "\n".join(out) + "\n"


def numerically(report: Report) -> str:
    """Which backward passes the numerical check covered, and what it took."""
    total = report.backward_count
    checked = [report.backward_number(p) for p in report.checked_passes]
    if not checked:
        return "no backward pass to check numerically"
    which = ("backward pass" if len(checked) == 1 else "backward passes") + " " + \
        ", ".join(map(str, checked)) + f" of {total}"
    if report.passes_asked == "sampled" and len(checked) < report.checkable_passes:
        how = (f"sampled: the first, the last and those between them that fit in "
               f"{report.budget:g} s")
    elif report.passes_asked == "sampled":
        how = f"all {len(checked)} within the {report.budget:g} s budget"
    elif report.passes_asked == "all":
        how = "all, as asked"
    else:
        how = "as asked"
    return (f"numerically, {which} ({how}; {report.numerical_seconds:.1f} s): "
            f"{report.checked_nodes:,} nodes, {report.checked_calls:,} _backward calls, "
            f"{report.runs} runs")
