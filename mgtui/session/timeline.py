"""A cursor over a trace: the `data` and `grad` of every node at any step, both ways.

The cursor sits between events: `position` is the number of events applied. Moving one
step applies or undoes that one event's writes, so a step costs time in proportion to
its own writes, never to the size of the graph.
"""

from __future__ import annotations

from array import array

from mgtui.trace import Event, Pass, Trace


class Timeline:
    def __init__(self, trace: Trace, position: int = 0) -> None:
        self.trace = trace
        self.data = array("d", trace.node_data)
        self.grad = array("d", bytes(8 * trace.node_count))
        self.created = 0  # ids follow creation order, so nodes [0, created) exist
        self.position = 0
        self.seek(position)

    def grow(self, trace: Trace) -> None:
        """Go on over `trace`, the same run recorded further, from where this is: its
        new nodes are not made yet at this position, so they start as made."""
        known = len(self.data)
        self.trace = trace
        if trace.node_count > known:
            self.data.extend(trace.node_data[known:])
            self.grad.frombytes(bytes(8 * (trace.node_count - known)))

    def __len__(self) -> int:
        return len(self.trace)

    # -- where we are ------------------------------------------------------------------
    @property
    def at_start(self) -> bool:
        return self.position == 0

    @property
    def at_end(self) -> bool:
        return self.position == len(self.trace)

    @property
    def event(self) -> Event | None:
        """The event just applied: the current step, or None at the start."""
        return self.trace.event(self.position - 1) if self.position else None

    @property
    def pass_(self) -> Pass | None:
        """The pass of the current step (at the start: the first pass)."""
        if not self.trace.passes:
            return None
        return self.trace.pass_at(max(self.position - 1, 0))

    def exists(self, nid: int) -> bool:
        return 0 <= nid < self.created

    # -- moving ------------------------------------------------------------------------
    def step(self) -> bool:
        """Apply the next event. False at the end."""
        i = self.position
        if i >= len(self.trace):
            return False
        self.created += self.trace.apply(i, self.data, self.grad)
        self.position = i + 1
        return True

    def back(self) -> bool:
        """Undo the current event. False at the start."""
        if self.position == 0:
            return False
        i = self.position - 1
        self.created -= self.trace.undo(i, self.data, self.grad)
        self.position = i
        return True

    def seek(self, position: int) -> None:
        """Move to `position` (clamped). The end and the start are reached directly."""
        t = self.trace
        position = max(0, min(position, len(t)))
        if position == len(t) and abs(position - self.position) > 64:
            self.data = array("d", t.final_data)
            self.grad = array("d", t.final_grad)
            self.created = t.node_count
            self.position = position
            return
        if position < self.position - position:  # closer to the start than to here
            self.data = array("d", t.node_data)
            self.grad = array("d", bytes(8 * t.node_count))
            self.created = 0
            self.position = 0
        while self.position < position:
            self.step()
        while self.position > position:
            self.back()
