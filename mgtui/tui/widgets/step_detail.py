"""The step detail: what the current step did, worked out with its actual numbers."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.reactive import reactive

from mgtui.trace.explain import Explanation, fmt
from mgtui.session import Detail
from mgtui.trace import TraceError
from mgtui.tui.widgets.text_pane import TextPane

ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}


def line_text(line: int | None) -> str:
    return f"line {line}" if line else ""


def ordinal(n: int) -> str:
    return ORDINAL.get(n, f"{n}th")


def render_detail(detail: Detail) -> Text:
    """The start, the error step, or one event's working with its warnings."""
    if detail.error is not None:
        return render_error(detail.step, detail.total, detail.error, detail.where)
    if detail.explanation is None:
        return render_start(detail.total, detail.title)
    text = render_explanation(detail.step, detail.total, detail.explanation, detail.line,
                              detail.closure_file, detail.where)
    for warning in detail.warnings:
        text.append("\n  " + warning, style="bold reverse")
    for note in detail.notes:  # the scenario's `#:` notes on this step's lines
        text.append("\n  ✎ ", style="bold")
        text.append(note, style="italic")
    return text


def render_explanation(step: int, total: int, exp: Explanation, line: int | None,
                       closure_file: str = "", lines: Callable[[int | None], str] = line_text
                       ) -> Text:
    """An explanation as text. Marks are words and glyphs, so they read without colour.
    `lines` names a scenario line (`line 12`, or a notebook's `cell 3, line 2`)."""
    text = Text()
    where = f"  ({lines(line)})" if line else ""
    text.append(f"step {step}/{total}  ", style="dim")
    text.append(exp.title, style="bold")
    text.append(where + "\n", style="dim")
    if exp.kind == "create":
        text.append("  " + exp.equation + "\n", style="bold")
        if exp.local:
            text.append("  local derivative: ", style="dim")
            text.append(exp.local + "\n")
    elif exp.kind == "backward":
        # the lesson of the step first (a fan-out's `+=`), where a short pane shows it
        for note in exp.notes:
            text.append("  • " + note + "\n", style="italic")
        if exp.values:
            text.append("  values at this call: ", style="dim")
            text.append(exp.values + "\n")
        if exp.local:
            text.append("  local derivative: ", style="dim")
            text.append(exp.local + "\n")
        text.append("  " + exp.equation + "\n", style="dim")
        for c in exp.contributions:
            render_contribution(text, c, closure_file, lines)
    else:
        text.append("  " + exp.equation + "\n", style="bold")
    if exp.kind != "backward":
        for note in exp.notes:
            text.append("  • " + note + "\n", style="italic")
    text.rstrip()
    return text


def render_contribution(text: Text, c, closure_file: str,
                        lines: Callable[[int | None], str] = line_text) -> None:
    """One grad a `_backward` wrote: the formula, the numbers, `before → after (+delta)`."""
    text.append("  • ", style="bold")
    text.append(c.formula)
    if c.numbers:
        text.append(" = " + c.numbers)
    text.append("\n     ")
    text.append(c.change, style="bold reverse" if c.mismatch else "bold")
    if c.nth > 1:
        text.append(f"  ← {ordinal(c.nth)} contribution to {c.label}.grad", style="bold italic")
    elif c.uses > 1:
        text.append(f"  ({ordinal(c.nth)} of {c.uses} uses)", style="italic")
    if c.line:
        if closure_file.endswith(".ipynb"):  # a closure of the notebook: in its cells
            place = f"{closure_file}, {lines(c.line)}"
        else:
            place = f"{closure_file}:{c.line}" if closure_file else lines(c.line)
        text.append(f"  ({place})", style="dim")
    text.append("\n")
    if c.mismatch and c.expected is not None:
        where = getattr(c, "differs_at", None)
        at = f" (first differs at element {where})" if where else ""
        text.append(f"     ⚠ expected {fmt(c.expected)} from the op's derivative{at}\n",
                    style="bold")


def render_error(step: int, total: int, error: TraceError,
                 lines: Callable[[int | None], str] = line_text) -> Text:
    text = Text()
    text.append(f"step {step}/{total}  ", style="dim")
    text.append(f"✗ the scenario raised {error.type}", style="bold reverse")
    if error.line:
        text.append(f"  ({lines(error.line)})", style="dim")
    text.append("\n  " + (error.message or error.type) + "\n", style="bold")
    text.append("  The trace stops here: every step before this one is what the scenario "
                "did up to the error.", style="italic")
    return text


def render_start(total: int, title: str) -> Text:
    text = Text()
    text.append(f"step 0/{total}  ", style="dim")
    text.append("start: nothing has run yet\n", style="bold")
    text.append(f"  {title}\n", style="italic")
    if total == 0:
        text.append("  This scenario made no Values, so there is nothing to step through.",
                    style="bold")
    else:
        text.append("  Press n, → or space to take the first step, ? for help.", style="dim")
    return text


class StepDetail(TextPane):
    """The working of the current step. Wraps; scrolls when focused if it is long."""

    NAME = "step detail"

    detail: reactive[Detail | None] = reactive(None, init=False, repaint=False)

    def watch_detail(self, detail: Detail | None) -> None:
        if detail is not None:
            self.set_text(render_detail(detail))

    def show_message(self, text: Text) -> None:
        """A message in place of a step (no trace yet)."""
        self.set_reactive(StepDetail.detail, None)
        self.set_text(text)
