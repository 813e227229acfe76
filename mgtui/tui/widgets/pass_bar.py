"""The pass bar: every pass of the trace as one letter, the cursor on the current one,
and in training scenarios the loss as a sparkline, one point per backward pass.

Drawn by hand rather than with Textual's `Sparkline` because both strips share one
line at 80 columns and the current point must be marked in text, not only in colour.
The bars themselves come from the session (`Passes.bars`); this widget only windows
them to its width.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from mgtui.trace.explain import fmt
from mgtui.session import Passes
from mgtui.tui.widgets.strips import CompactLines

LETTER = {"forward": "F", "backward": "B", "zero_grad": "Z", "update": "U", "other": "·"}


def window(n: int, current: int, width: int) -> tuple[int, int]:
    """A slice of `width` items out of `n` that holds `current`."""
    if n <= width:
        return 0, n
    start = max(0, min(current - width // 2, n - width))
    return start, start + width


class PassBar(CompactLines, Widget):
    DEFAULT_CSS = """
    PassBar { height: 2; background: $panel; }
    """

    passes: reactive[Passes | None] = reactive(None)

    def render(self) -> Text:
        passes = self.passes
        width = self.size.width
        if passes is None or not passes.kinds:
            return Text(" no passes", style="dim")
        passes_line = self._passes(passes, width)
        sparkline = self._sparkline(passes, width)
        if self.size.height >= 2:
            if not sparkline:  # no training loop: say what the letters mean
                kinds = dict.fromkeys(passes.kinds)
                sparkline = Text(" " + " · ".join(f"{LETTER.get(k, '?')} {k}" for k in kinds),
                                 style="dim")
            return Text("\n").join([passes_line, sparkline])
        if sparkline and passes_line.cell_len + sparkline.cell_len + 2 <= width:
            return Text.assemble(passes_line, "  ", sparkline)
        return passes_line

    @staticmethod
    def _passes(passes: Passes, width: int) -> Text:
        n, current = len(passes.kinds), passes.current
        prefix = f" pass {current + 1}/{n} "
        lo, hi = window(n, current, max(width - len(prefix) - 4, 4))
        out = Text(prefix, style="bold")
        out.append("…" if lo > 0 else " ", style="dim")
        for index in range(lo, hi):
            letter = LETTER.get(passes.kinds[index], "?")
            if index == current and not passes.at_error:
                out.append(letter, style="bold reverse")
            elif index < current:
                out.append(letter, style="dim")
            else:
                out.append(letter)
        if hi == n and passes.has_error:
            out.append("✗", style="bold reverse" if passes.at_error else "bold")
        out.append("…" if hi < n else "", style="dim")
        return out

    @staticmethod
    def _sparkline(passes: Passes, width: int) -> Text:
        if not passes.bars:
            return Text("")
        values, here = passes.losses, passes.loss_at
        label = f" loss {fmt(values[0])} → {fmt(values[-1])} "
        first, last = window(len(values), max(here, 0), max(width - len(label) - 4, 4))
        out = Text(label, style="bold")
        for k in range(first, last):
            out.append(passes.bars[k], style="bold reverse" if k == here
                       else ("" if k < here else "dim"))
        if here >= 0:
            out.append(f"  now {fmt(values[here])}", style="dim")
        return out
