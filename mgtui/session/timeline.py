"""A cursor over a trace: the `data` and `grad` of every node at any step, both ways.

The cursor sits between events: `position` is the number of events applied. Moving one
step applies or undoes that one event's writes, so a step costs time in proportion to
its own writes, never to the size of the graph.

The state is held as the trace's own per-node arrays with this cursor's changes over
them (`Layer`): at the start, the values the nodes were made with and no grads; at the
end, the trace's final state. It copies nothing at either end (at 3M nodes, a copy of
both is 48 MB, and `G` made one beside the final state it copied), and only once its
changes grow many does it keep an array of its own.
"""

from __future__ import annotations

from array import array

from mgtui.trace import Event, Pass, Trace
from mgtui.trace.replay import Layer


def _many(n: int) -> int:
    """How many changes a `Layer` over `n` nodes holds before an array of its own costs
    less (a dict entry and its two numbers: about ten times a double)."""
    return max(1 << 12, n >> 4)


class Timeline:
    def __init__(self, trace: Trace, position: int = 0) -> None:
        self.trace = trace
        self._start()
        self.seek(position)

    def _start(self) -> None:
        t = self.trace
        self._limit = _many(t.node_count)
        self.data = Layer(t.node_data, t.node_count)
        self.grad = Layer(None, t.node_count)
        self.created = 0  # ids follow creation order, so nodes [0, created) exist
        self.position = 0

    def _end(self) -> None:
        t = self.trace
        self.data = Layer.over(t.replay.final_data, t.node_count)
        self.grad = Layer.over(t.replay.final_grad, t.node_count)
        self.created = t.node_count
        self.position = len(t)

    def _own(self) -> None:
        """An array of its own for a state whose changes have grown many."""
        for name in ("data", "grad"):
            state = getattr(self, name)
            if type(state) is Layer and len(state.changes) > _many(state._len):
                setattr(self, name, state.array())

    def grow(self, trace: Trace) -> None:
        """Go on over `trace`, the same run recorded further, from where this is: its
        new nodes are not made yet at this position, so they start as made."""
        old, n = self.trace, trace.node_count
        self.trace = trace
        self._limit = _many(n)
        for name in ("data", "grad"):
            state = getattr(self, name)
            if type(state) is Layer:
                if state.base is None or state.base is old.node_data:  # (a prefix of the new)
                    state.base = trace.node_data if state.base is not None else None
                    state._len = n
                    continue
                state = state.array()
                setattr(self, name, state)
            known = len(state)
            if n > known:
                if name == "data":
                    state.extend(trace.node_data[known:])
                else:
                    state.frombytes(bytes(8 * (n - known)))

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
        i, t = self.position, self.trace
        if i >= len(t):
            return False
        data, grad = self.data, self.grad  # (a layer's changes: a dict, written at C speed)
        data = data.changes if type(data) is Layer else data
        grad = grad.changes if type(grad) is Layer else grad
        self.created += t.replay.apply(i, data, grad)
        self.position = i + 1
        if (type(grad) is dict and len(grad) > self._limit) or \
                (type(data) is dict and len(data) > self._limit):
            self._own()
        return True

    def back(self) -> bool:
        """Undo the current event. False at the start."""
        if self.position == 0:
            return False
        i = self.position - 1
        data, grad = self.data, self.grad
        data = data.changes if type(data) is Layer else data
        grad = grad.changes if type(grad) is Layer else grad
        self.created -= self.trace.replay.undo(i, data, grad)
        self.position = i
        if (type(grad) is dict and len(grad) > self._limit) or \
                (type(data) is dict and len(data) > self._limit):
            self._own()
        return True

    def _ahead(self, position: int) -> None:
        """Move forward to `position` in bulk (`Trace.replay.between`), as stepping there would."""
        t = self.trace
        data, grad = self.data, self.grad
        data = data.changes if type(data) is Layer else data
        grad = grad.changes if type(grad) is Layer else grad
        t.replay.between(self.position, position, data, grad)
        self.created += t.made_between(self.position, position)
        self.position = position
        self._own()

    def seek(self, position: int) -> None:
        """Move to `position` (clamped). The end and the start are reached directly."""
        t = self.trace
        position = max(0, min(position, len(t)))
        if position == len(t) and abs(position - self.position) > 64:
            self._end()
            return
        if position < self.position - position:  # closer to the start than to here
            self._start()
        if position - self.position > 64 and type(self.data) in (Layer, array) \
                and type(self.grad) in (Layer, array):
            self._ahead(position)
        while self.position < position:
            self.step()
        while self.position > position:
            self.back()
