"""The trace as readable text for `--print`: the passes, each step worked out, the nodes."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from mgtui.explain import explain, fmt
from mgtui.timeline import Timeline
from mgtui.trace import Trace

MAX_TABLE_ROWS = 2000


def print_trace(trace: Trace, file: TextIO, *, limit: int | None = 200, width: int = 100) -> None:
    """Write the whole trace. `limit` caps the steps shown per pass (None: all of them)."""
    console = Console(file=file, width=width, highlight=False, markup=False, emoji=False,
                      color_system=None, soft_wrap=False)
    console.print(Text(f"{trace.title}", style="bold"))
    console.print(Text(f"{trace.scenario}: {trace.node_count:,} nodes, {len(trace):,} steps, "
                       f"{len(trace.passes)} passes"))
    timeline = Timeline(trace)
    total = len(trace.passes)
    for p in trace.passes:
        console.print()
        console.print(Text(f"Pass {p.index + 1}/{total}: {p.kind}, steps {p.start + 1}–{p.end}",
                           style="bold"))
        shown = len(p) if limit is None else min(len(p), limit)
        timeline.seek(p.start)
        for index in range(p.start, p.start + shown):
            timeline.step()
            for line in step_lines(trace, timeline, index):
                console.print(line)
        if shown < len(p):
            console.print(Text(f"  … {len(p) - shown:,} more steps in this pass "
                               f"(--all prints every step)", style="dim"))
    console.print()
    print_nodes(trace, console)
    if trace.error is not None:
        console.print()
        console.print(Text(f"error after step {trace.error.after_event}: {trace.error}"))
    if trace.output:
        console.print()
        console.print(Text("scenario output:", style="bold"))
        console.print(Text(trace.output.rstrip("\n")))


def step_lines(trace: Trace, timeline: Timeline, index: int) -> list[Text]:
    ex = explain(trace, timeline.data, timeline.grad, index)
    line = trace.line_of(index)
    where = f"  (line {line})" if line else ""
    head = f"  step {index + 1:>4}  "
    pad = " " * len(head)
    if ex.kind == "backward":
        out = [Text(f"{head}{ex.title}{where}")]
        if ex.local:
            out.append(Text(f"{pad}local derivative: {ex.local}"))
        for c in ex.contributions:
            working = f"{c.formula} = {c.numbers}" if c.numbers else c.formula
            out.append(Text(f"{pad}  {working}"))
            out.append(Text(f"{pad}    {c.change}"))
        out.extend(Text(f"{pad}  note: {n}") for n in ex.notes)
        return out
    text = ex.equation if ex.kind == "create" else f"{ex.title}    {ex.equation}"
    out = [Text(f"{head}{text}{where}")]
    out.extend(Text(f"{pad}  note: {n}") for n in ex.notes if ex.kind != "create")
    return out


def print_nodes(trace: Trace, console: Console) -> None:
    count = trace.node_count
    table = Table(title=f"Nodes at the end ({count:,})", title_justify="left")
    for name in ("id", "label", "op", "data", "grad", "inputs", "line"):
        table.add_column(name, justify="right" if name in ("id", "data", "grad", "line") else "left")
    for nid in range(min(count, MAX_TABLE_ROWS)):
        table.add_row(
            str(nid), trace.label(nid), trace.op(nid), fmt(trace.final_data[nid]),
            fmt(trace.final_grad[nid]), ", ".join(trace.label(c) for c in trace.children(nid)),
            str(trace.line(nid) or ""))
    console.print(table)
    if count > MAX_TABLE_ROWS:
        console.print(Text(f"… and {count - MAX_TABLE_ROWS:,} more nodes", style="dim"))
