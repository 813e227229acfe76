"""Text for the terminal: the trace for `--print` (the passes, each step worked out, the
nodes), and the gradient doctor's report for `--check`.

A trace file may hold anything: a label of a megabyte, output of one 50 MB line. What
`--print` shows is bounded as the app bounds it: the output to OUTPUT_BUDGET characters
(`mgtui.safe.bounded`), every line to LINE_BUDGET and a label in the table of nodes to
LABEL_BUDGET, each cut in the middle with a note of how much was left out (so printing
takes time in proportion to what is shown, not to the longest line)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from mgtui.trace.explain import explain, fmt
from mgtui.trace.notebook import cells_of
from mgtui.safe import bounded
from mgtui.session import Session
from mgtui.session.timeline import Timeline
from mgtui.trace import Trace

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


def print_trace(trace: Trace, file: TextIO, *, limit: int | None = 200, width: int = 100) -> None:
    """Write the whole trace. `limit` caps the steps shown per pass (None: all of them)."""
    console = Console(file=file, width=width, highlight=False, markup=False, emoji=False,
                      color_system=None, soft_wrap=False)

    def say(text: str = "", style: str = "") -> None:
        console.print(bounded_text(text, style))

    say(trace.title, style="bold")
    say(f"{trace.scenario}: {trace.node_count:,} nodes, {len(trace):,} steps, "
        f"{len(trace.passes)} passes")
    if trace.arrays.unrecorded:  # values neither numbers nor arrays: said out loud
        say(f"⚠ {trace.arrays.unrecorded_note()}")
    timeline = Timeline(trace)
    notes = Session(trace).step_notes  # each step's `#:` notes, as the app shows them
    total = len(trace.passes)
    for p in trace.passes:
        say()
        say(f"Pass {p.index + 1}/{total}: {p.kind}, steps {p.start + 1}–{p.end}", style="bold")
        shown = len(p) if limit is None else min(len(p), limit)
        timeline.seek(p.start)
        for index in range(p.start, p.start + shown):
            timeline.step()
            for line in step_lines(trace, timeline, index, notes(index)):
                console.print(line)
        if shown < len(p):
            say(f"  … {len(p) - shown:,} more steps in this pass (--all prints every step)",
                style="dim")
    say()
    print_nodes(trace, console)
    if trace.error is not None:
        say()
        say(f"error after step {trace.error.after_event}: {trace.error_text()}")
    if trace.output:
        say()
        say("scenario output:", style="bold")
        say(bounded(trace.output.rstrip("\n"), OUTPUT_BUDGET))


def step_lines(trace: Trace, timeline: Timeline, index: int,
               notes: tuple[str, ...] = ()) -> list[Text]:
    """One step worked out, then its `#:` notes (`✎`)."""
    ex = explain(trace, timeline.data, timeline.grad, index)
    line = trace.line_of(index)
    where = f"  ({trace.where(line)})" if line else ""
    head = f"  step {index + 1:>4}  "
    pad = " " * len(head)
    if ex.kind == "backward":
        out = [bounded_text(f"{head}{ex.title}{where}")]
        if ex.values:
            out.append(bounded_text(f"{pad}values at this call: {ex.values}"))
        if ex.local:
            out.append(bounded_text(f"{pad}local derivative: {ex.local}"))
        for c in ex.contributions:
            working = f"{c.formula} = {c.numbers}" if c.numbers else c.formula
            out.append(bounded_text(f"{pad}  {working}"))
            out.append(bounded_text(f"{pad}    {c.change}"))
        out.extend(bounded_text(f"{pad}  note: {n}") for n in ex.notes)
        out.extend(bounded_text(f"{pad}  ✎ {note}") for note in notes)
        return out
    text = ex.equation if ex.kind == "create" else f"{ex.title}    {ex.equation}"
    out = [bounded_text(f"{head}{text}{where}")]
    out.extend(bounded_text(f"{pad}  note: {n}") for n in ex.notes if ex.kind != "create")
    out.extend(bounded_text(f"{pad}  ✎ {note}") for note in notes)
    return out


def print_nodes(trace: Trace, console: Console) -> None:
    count = trace.node_count
    table = Table(title=f"Nodes at the end ({count:,})", title_justify="left")
    line = "cell:line" if cells_of(trace.source) else "line"  # a notebook's lines are in cells
    for name in ("id", "label", "op", "data", "grad", "inputs", line):
        table.add_column(name, justify="right" if name in ("id", "data", "grad", line) else "left")
    for nid in range(min(count, MAX_TABLE_ROWS)):
        inputs = ", ".join(cut(trace.label(c), LABEL_BUDGET) for c in trace.children(nid))
        table.add_row(
            str(nid), cut(trace.label(nid), LABEL_BUDGET), cut(trace.op(nid), LABEL_BUDGET),
            fmt(trace.final_value(nid, False)), fmt(trace.final_value(nid, True)),
            cut(inputs, LABEL_BUDGET),
            trace.line_number(trace.line(nid)) if trace.line(nid) else "")
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
            out.append(f"  at     {t.place(f.file, f.line, display_path(f.file))}: {f.text}")
        out.append(f"  {f.message}")
        out.append("")
    if report.error is not None:
        out.append(f"the scenario raised: {t.error_text()} (checked up to there)")
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
