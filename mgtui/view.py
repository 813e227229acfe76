"""What the panes show for one forward pass: its rows, its topological order and the
backward walk over it. Built once per pass and cached, so a step only does lookups."""

from __future__ import annotations

from array import array
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
    # Flat arrays, not lists of ints: moons' graph has 65,000 nodes.
    used: array = field(default_factory=lambda: array("q"))  # earlier nodes it uses, sorted
    made: array = field(default_factory=lambda: array("q"))  # nodes the pass made, increasing
    topo: array = field(default_factory=lambda: array("q"))  # topological order, leaves first
    topo_of: Positions = field(default_factory=lambda: Positions(array("q")))
    walk_events: array = field(default_factory=lambda: array("q"))  # its `_backward` events
    label_width: int = 5
    inputs_width: int = 6

    @classmethod
    def build(cls, trace: Trace, forward: Pass | None, backward: Pass | None) -> GraphView:
        view = cls(trace, forward, backward)
        if forward is not None:
            rows = trace.graph(forward)
            made = set(trace.made_in(forward))
            view.used = array("q", (n for n in rows if n not in made))
            view.made = array("q", (n for n in rows if n in made))
        if backward is not None:
            view.walk_events = array("q", trace.backward_calls(backward))
            view.topo = array("q", map(trace.event_node, reversed(view.walk_events)))
        else:
            view.topo = view.used + view.made
        view.topo_of = Positions(view.topo)
        sample = list(view.used + view.made)
        if len(sample) > 4000:  # widths from a sample: labels are alike in big graphs
            sample = sample[:2000] + sample[-2000:]
        view.label_width = max([5] + [len(trace.label(n)) for n in sample])
        view.label_width = min(view.label_width, 18)
        widest = max([6] + [len(view.inputs_text(n)) for n in sample])
        view.inputs_width = min(widest, 22)
        return view

    def rebind(self, trace: Trace) -> GraphView:
        """This view over `trace`, the same run recorded further, in which this view's
        passes are unchanged (so no older trace is kept alive by a view)."""
        self.trace = trace
        return self

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


class Positions:
    """Where each node stands in a sequence of distinct node ids: a read-only mapping
    from id to index, kept as one flat array over the span of ids (a graph's nodes are
    mostly a run of consecutive ids), not as a dict of 65,000 entries."""

    def __init__(self, ids: array) -> None:
        self._lo = min(ids) if ids else 0
        self._at = array("q", [-1]) * ((max(ids) - self._lo + 1) if ids else 0)
        at, lo = self._at, self._lo
        for k, nid in enumerate(ids):
            at[nid - lo] = k
        self._len = len(ids)

    def get(self, nid: int, default: int | None = None) -> int | None:
        k = nid - self._lo
        if 0 <= k < len(self._at):
            at = self._at[k]
            if at >= 0:
                return at
        return default

    def __contains__(self, nid: object) -> bool:
        return isinstance(nid, int) and self.get(nid) is not None

    def __getitem__(self, nid: int) -> int:
        at = self.get(nid)
        if at is None:
            raise KeyError(nid)
        return at

    def __len__(self) -> int:
        return self._len

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Positions):
            return NotImplemented
        return (self._lo, self._at) == (other._lo, other._at)

    __hash__ = None  # type: ignore[assignment]


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
