"""What the panes show for one forward pass: its rows, its topological order and the
backward walk over it. Built once per pass and cached, so a step only does lookups.

Building one costs in proportion to the graph (about a second for a million nodes), so
the app builds the ones it will show first off the UI thread (`prepare`), and the
session takes them from there (`take_prepared`)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Sequence

from mgtui.safe import cell_width
from mgtui.trace.names import fitted_name
from mgtui.trace import Pass, Trace

INPUT_NAME = 16  # columns an input's name takes at most in the inputs column


class TopoIndex(Mapping[int, int]):
    """Node id -> its place in a topological order: an array indexed by id from the
    lowest id in the order to the highest (a dict of a million entries would cost ten
    times the memory and time; an array over every node of a big trace, 4 bytes a node
    for each graph shown), or a dict where those ids lie far apart."""

    def __init__(self, topo: Sequence[int], node_count: int) -> None:
        lo = min(topo) if len(topo) else 0
        span = max(topo) + 1 - lo if len(topo) else 0
        self._lo, self._len, self._span = lo, len(topo), span
        if span > 4 * len(topo) + 1024:  # (a few parameters made long before the pass)
            self._at = None
            self._of = {nid: k for k, nid in enumerate(topo)}
            return
        at = array("i", [-1]) * span  # (int32)
        for k, nid in enumerate(topo):
            at[nid - lo] = k
        self._at = at

    def __getitem__(self, nid: int) -> int:
        if self._at is None:
            return self._of[nid]
        k = self._at[nid - self._lo] if 0 <= nid - self._lo < self._span else -1
        if k < 0:
            raise KeyError(nid)
        return k

    def __contains__(self, nid: object) -> bool:
        if self._at is None:
            return nid in self._of
        return (isinstance(nid, int) and 0 <= nid - self._lo < self._span
                and self._at[nid - self._lo] >= 0)

    def __iter__(self) -> Iterator[int]:
        if self._at is None:
            return iter(sorted(self._of))
        return (self._lo + i for i, k in enumerate(self._at) if k >= 0)

    def __len__(self) -> int:
        return self._len


@dataclass
class GraphView:
    """The current graph: the nodes of forward pass `forward` plus the earlier leaves it
    uses, and `backward`, the backward pass that walks it (None if there is none)."""

    trace: Trace
    forward: Pass | None
    backward: Pass | None
    used: Sequence[int] = field(default_factory=list)  # earlier nodes it uses, sorted ids
    made: Sequence[int] = field(default_factory=list)  # nodes the pass made, increasing ids
    topo: Sequence[int] = field(default_factory=list)  # topological order (leaves first)
    topo_of: Mapping[int, int] = field(default_factory=dict)
    walk_events: Sequence[int] = field(default_factory=list)  # BACKWARD event indices of `backward`
    label_width: int = 5
    inputs_width: int = 6

    @classmethod
    def build(cls, trace: Trace, forward: Pass | None, backward: Pass | None) -> GraphView:
        view = cls(trace, forward, backward)
        if forward is not None:
            view.made = trace.made_ids(forward)
            view.used = trace.inputs_before(forward)
        if backward is not None:
            view.walk_events = array("i", trace.backward_calls(backward))
            order = array("i", trace.backward_order(backward))
            order.reverse()
            view.topo = order
        else:
            view.topo = array("i", view.used)
            view.topo.extend(view.made)
        view.topo_of = TopoIndex(view.topo, trace.node_count)
        sample = list(view.used[:2000]) + list(view.used[-2000:]) + list(view.made[:2000]) \
            + list(view.made[-2000:])  # widths from a sample: labels are alike in big graphs
        view.label_width = max([5] + [cell_width(trace.label(n)) for n in sample])
        view.label_width = min(view.label_width, 18)
        widest = max([6] + [cell_width(view.inputs_text(n)) for n in sample])
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

    def uses(self, nid: int) -> int:
        """How many nodes of this graph take node `nid` as an input (not those of other
        training steps' graphs)."""
        made = self.made
        if not isinstance(made, range):
            made = range(made[0], made[-1] + 1) if made else range(0)
        return self.trace.index.uses_within(nid, made)

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


def view_key(trace: Trace, pass_index: int) -> tuple[tuple[int, int], Pass | None, Pass | None]:
    """The cache key of the graph shown during pass `pass_index`, and its passes."""
    forward, backward = views_for(trace, pass_index)
    return (forward.index if forward else -1, backward.index if backward else -1), forward, backward


# Views built off the UI thread for the next session of one trace (see `prepare`).
_prepared: tuple[Trace, dict[tuple[int, int], GraphView]] | None = None


def prepare(trace: Trace, steps: Iterable[int]) -> None:
    """Build the views shown at `steps` (say the first step, the last and the one the
    app opens at), in the thread that calls this, for the next `Session` of `trace` to
    take. Views prepared for another trace are dropped."""
    global _prepared
    views: dict[tuple[int, int], GraphView] = {}
    for step in steps:
        p = trace.pass_at(max(min(step, len(trace)) - 1, 0))
        key, forward, backward = view_key(trace, p.index if p is not None else 0)
        if key != (-1, -1) and key not in views:
            views[key] = GraphView.build(trace, forward, backward)
    _prepared = (trace, views)


def take_prepared(trace: Trace) -> dict[tuple[int, int], GraphView]:
    """The views `prepare` built for `trace` (handed over once), else none."""
    global _prepared
    ready = _prepared
    if ready is None or ready[0] is not trace:
        return {}
    _prepared = None
    return dict(ready[1])
