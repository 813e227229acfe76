"""What the panes show for one forward pass: its rows, its topological order and the
backward walk over it. Built once per pass and cached, so a step only does lookups."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from mgtui.naming import fitted_name
from mgtui.trace import Pass, Trace

INPUT_NAME = 16  # columns an input's name takes at most in the inputs column


@dataclass
class GraphView:
    """The current graph: the nodes of forward pass `forward` plus the earlier leaves it
    uses, and `backward`, the backward pass that walks it (None if there is none)."""

    trace: Trace
    forward: Pass | None
    backward: Pass | None
    used: list[int] = field(default_factory=list)  # earlier nodes it uses, sorted ids
    made: list[int] = field(default_factory=list)  # nodes the pass made, increasing ids
    topo: list[int] = field(default_factory=list)  # topological order (leaves first)
    topo_of: dict[int, int] = field(default_factory=dict)
    walk_events: list[int] = field(default_factory=list)  # BACKWARD event indices of `backward`
    label_width: int = 5
    inputs_width: int = 6

    @classmethod
    def build(cls, trace: Trace, forward: Pass | None, backward: Pass | None) -> GraphView:
        view = cls(trace, forward, backward)
        if forward is not None:
            rows = trace.graph(forward)
            made = set(trace.made_in(forward))
            view.used = [n for n in rows if n not in made]
            view.made = [n for n in rows if n in made]
        if backward is not None:
            view.walk_events = trace.backward_calls(backward)
            view.topo = [trace.event_node(i) for i in reversed(view.walk_events)]
        else:
            view.topo = view.used + view.made
        view.topo_of = {nid: k for k, nid in enumerate(view.topo)}
        sample = view.used + view.made
        if len(sample) > 4000:  # widths from a sample: labels are alike in big graphs
            sample = sample[:2000] + sample[-2000:]
        view.label_width = max([5] + [len(trace.label(n)) for n in sample])
        view.label_width = min(view.label_width, 18)
        widest = max([6] + [len(view.inputs_text(n)) for n in sample])
        view.inputs_width = min(widest, 22)
        return view

    # -- rows of the node table ----------------------------------------------------------
    def visible(self, created: int) -> tuple[int, int]:
        """How many of `used` and of `made` exist when `created` nodes have been made."""
        return bisect_left(self.used, created), bisect_left(self.made, created)

    def row_count(self, created: int) -> int:
        a, b = self.visible(created)
        return a + b

    def row_node(self, row: int, created: int) -> int:
        a, _ = self.visible(created)
        return self.used[row] if row < a else self.made[row - a]

    def row_of(self, nid: int, created: int) -> int | None:
        """The row of node `nid`, or None if it is not in the graph (or not made yet)."""
        if nid >= created:
            return None
        a, _ = self.visible(created)
        k = bisect_left(self.used, nid)
        if k < len(self.used) and self.used[k] == nid:
            return k
        k = bisect_left(self.made, nid)
        if k < len(self.made) and self.made[k] == nid:
            return a + k
        return None

    def inputs_text(self, nid: int) -> str:
        return ", ".join(fitted_name(self.trace, c, INPUT_NAME) for c in self.trace.children(nid))

    # -- the backward walk -----------------------------------------------------------------
    def walked(self, position: int) -> int:
        """How many `_backward` calls of the walk have run once `position` events are applied."""
        return bisect_left(self.walk_events, position)

    def ordered(self) -> bool:
        """True when `topo` comes from a real backward pass, not from creation order."""
        return self.backward is not None


def views_for(trace: Trace, index: int) -> tuple[Pass | None, Pass | None]:
    """The (forward, backward) passes that make the current graph at pass `index`:
    the latest forward pass up to it (else the first one), and the first backward pass
    after that forward pass and before the next one."""
    passes = trace.passes
    if not passes:
        return None, None
    forward = None
    for k in range(min(index, len(passes) - 1), -1, -1):
        if passes[k].kind == "forward":
            forward = passes[k]
            break
    if forward is None:
        forward = next((p for p in passes if p.kind == "forward"), None)
    start = forward.index + 1 if forward is not None else 0
    backward = None
    for p in passes[start:]:
        if p.kind == "backward":
            backward = p
            break
        if p.kind == "forward" and forward is not None:
            break
    if index < len(passes) and passes[index].kind == "backward":
        backward = passes[index]
    return forward, backward
