"""The pass bar: every pass of the trace as one letter, the cursor on the current one,
and in training scenarios the loss as a sparkline, one point per backward pass.

Written by hand rather than with Textual's `Sparkline` because both strips share one
line at 80 columns and the current point must be marked in text, not only in colour.
"""

from __future__ import annotations

import math

from rich.text import Text
from textual.widget import Widget

from mgtui.explain import fmt
from mgtui.trace import Trace

LETTER = {"forward": "F", "backward": "B", "zero_grad": "Z", "update": "U", "other": "·"}
BARS = "▁▂▃▄▅▆▇█"


def window(n: int, current: int, width: int) -> tuple[int, int]:
    """A slice of `width` items out of `n` that holds `current`."""
    if n <= width:
        return 0, n
    start = max(0, min(current - width // 2, n - width))
    return start, start + width


class PassBar(Widget):
    DEFAULT_CSS = """
    PassBar { height: 2; background: $panel; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.trace: Trace | None = None
        self.current = 0  # pass index
        self.error = False  # the cursor is on the error step after the last pass
        self._losses: list[tuple[int, float]] = []

    def show(self, trace: Trace | None, current: int, error: bool = False) -> None:
        if trace is not self.trace:
            self.trace = trace
            self._losses = trace.losses() if trace is not None else []
        elif current == self.current and error == self.error:
            return
        self.current, self.error = current, error
        self.refresh()

    def render(self) -> Text:
        trace = self.trace
        width = self.size.width
        if trace is None or not trace.passes:
            return Text(" no passes", style="dim")
        passes_line = self._passes(width)
        sparkline = self._sparkline(width)
        if self.size.height >= 2:
            if not sparkline:  # no training loop: say what the letters mean
                kinds = dict.fromkeys(p.kind for p in trace.passes)
                sparkline = Text(" " + " · ".join(f"{LETTER.get(k, '?')} {k}" for k in kinds),
                                 style="dim")
            return Text("\n").join([passes_line, sparkline])
        if sparkline and passes_line.cell_len + sparkline.cell_len + 2 <= width:
            return Text.assemble(passes_line, "  ", sparkline)
        return passes_line

    def _passes(self, width: int) -> Text:
        trace = self.trace
        n = len(trace.passes)
        prefix = f" pass {self.current + 1}/{n} "
        room = max(width - len(prefix) - 4, 4)
        lo, hi = window(n, self.current, room)
        out = Text(prefix, style="bold")
        out.append("…" if lo > 0 else " ", style="dim")
        for p in trace.passes[lo:hi]:
            letter = LETTER.get(p.kind, "?")
            if p.index == self.current and not self.error:
                out.append(letter, style="bold reverse")
            elif p.index < self.current:
                out.append(letter, style="dim")
            else:
                out.append(letter)
        if hi == n and trace.error is not None:
            out.append("✗", style="bold reverse" if self.error else "bold")
        out.append("…" if hi < n else "", style="dim")
        return out

    def _sparkline(self, width: int) -> Text:
        losses = self._losses
        if len(losses) < 2:
            return Text("")
        values = [v for _, v in losses]
        finite = [v for v in values if math.isfinite(v)]
        if not finite:
            return Text("")
        lo, hi = min(finite), max(finite)
        span = (hi - lo) or 1.0
        done = [k for k, (index, _) in enumerate(losses) if index <= self.current]
        here = done[-1] if done else -1
        label = f" loss {fmt(values[0])} → {fmt(values[-1])} "
        room = max(width - len(label) - 4, 4)
        first, last = window(len(values), max(here, 0), room)
        out = Text(label, style="bold")
        for k in range(first, last):
            v = values[k]
            if math.isfinite(v):
                bar = BARS[min(int((v - lo) / span * (len(BARS) - 1) + 0.5), len(BARS) - 1)]
            else:
                bar = "?"
            out.append(bar, style="bold reverse" if k == here else ("" if k < here else "dim"))
        if here >= 0:
            out.append(f"  now {fmt(values[here])}", style="dim")
        return out
