"""The topological order of the current graph, with the backward walk marked on it.

The backward pass walks this list from the bottom (the root) up. Rows whose `_backward`
has run are ticked, the one running now is marked `▶`, and the nodes it accumulated into
`+=`. A Line-API view like the node table, so it stays cheap on a 65k-node graph.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from mgtui.settings.bindings import TOPO_KEYS
from mgtui.trace.arrays import brief
from mgtui.trace.names import fitted_name
from mgtui.session import StepState
from mgtui.session.view import GraphView
from mgtui.tui.widgets.node_table import MARKS, clip
from mgtui.tui.widgets.keys import bindings_of
from mgtui.tui.widgets.strips import CompactLines, changed_width


class TopoList(CompactLines, ScrollView, can_focus=True):
    inherit_bindings = False
    BINDINGS = bindings_of(TOPO_KEYS)
    COMPONENT_CLASSES = {
        "topo-list--header",
        "topo-list--run",
        "topo-list--acc",
        "topo-list--done",
    }
    DEFAULT_CSS = """
    TopoList { background: $surface; scrollbar-size-vertical: 1; overflow-x: hidden; }
    TopoList > .topo-list--header { text-style: bold; color: $text-muted; background: $panel; }
    TopoList:focus > .topo-list--header { text-style: bold reverse; }
    TopoList > .topo-list--run { text-style: bold reverse; color: $warning; }
    TopoList > .topo-list--acc { text-style: bold; color: $success; }
    TopoList > .topo-list--done { color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.view: GraphView | None = None
        self.walked = 0
        self.running: int | None = None  # walk step whose _backward just ran
        self.marks: dict[int, str] = {}
        self.grad = None
        self.hidden: frozenset[int] = frozenset()  # quiz mode: grads shown as ?
        self._cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self._drawn: dict[int, tuple] = {}  # line on screen -> (its row's key, its strip)

    def show(self, state: StepState, single_step: bool = False) -> None:
        """Show the walk at one step. Within the same graph only the lines whose row
        changed are drawn again, however far the move (`single_step` is not needed)."""
        view = state.view
        new_view = view is not self.view
        if new_view:
            self.view = view
            self._cache.clear()
            self._drawn.clear()
            n = len(view.topo) if view is not None else 0
            self.virtual_size = Size(0, n + 1)  # rows are clipped: no sideways scrolling
        self.grad, self.marks, self.walked = state.grad, state.marks, state.walked
        self.running = self.walked - 1 if state.running else None
        if view is not None and view.topo:
            n = len(view.topo)
            # the walk runs from the last row up: keep the next row to run in view
            row = n - self.walked - (0 if self.running is None else -1)
            self._walk_row = max(0, min(row, n - 1))
            self._follow()
        if new_view or view is None:
            self.refresh()
            self.call_after_refresh(self._follow)
            return
        top = round(self.scroll_y)
        width, height = self.scrollable_content_region.size
        for y in range(1, height):
            key = self._line_key(top + y - 1, width)
            old_key, old_strip = self._drawn.get(y, (False, None))
            if old_key == key:
                continue
            cut = width
            if key is not None and old_strip is not None:
                cut = changed_width(old_strip, self._strip(key), width)
            if cut:
                self.refresh(Region(0, y, cut, 1))  # not the scrollbar beside it

    _walk_row = 0

    def _follow(self) -> None:
        """Keep the row where the walk is in view."""
        row = self._walk_row
        visible = max(self.scrollable_content_region.height - 1, 1)
        top = round(self.scroll_y)
        if not top <= row < top + visible:
            self.scroll_to(y=max(row - visible // 2, 0), animate=False, immediate=True)

    def on_resize(self) -> None:
        self.call_after_refresh(self._follow)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def action_scroll_by(self, delta: int) -> None:
        self.scroll_to(y=self.scroll_y + delta, animate=False)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        view = self.view
        if y == 0:
            title = "topo order" if view is None or view.ordered() else "creation order"
            title += "     grad  (walked bottom-up)" if view is not None and view.ordered() else ""
            return Strip([Segment(clip(title, width), self.get_component_rich_style("topo-list--header"))])
        if view is None:
            self._drawn[y] = (None, None)
            return Strip.blank(width, self.rich_style)
        key = self._line_key(round(self.scroll_y) + y - 1, width)
        if key is None:
            self._drawn[y] = (None, None)
            return Strip.blank(width, self.rich_style)
        strip = self._strip(key)
        self._drawn[y] = (key, strip)
        return strip

    def _strip(self, key: tuple) -> Strip:
        """The line of the order that `key` (from `_line_key`) describes, cached."""
        strip = self._cache.get(key)
        if strip is None:
            view = self.view
            k, nid, state, grad, width = key
            trace = view.trace
            mark = MARKS[state] if state in ("run", "acc") else ("✓ " if state == "done" else "  ")
            shown = ("?" if grad is None  # (hidden by a quiz; an array's shape and summary)
                     else brief(grad))
            text = (f"{k:>5} {mark} {shown:>8}  {clip(fitted_name(trace, nid, view.label_width), view.label_width)}"
                    f"  {trace.op(nid)}")
            style = self.rich_style
            if state:
                style = style + self.get_component_rich_style(f"topo-list--{state}")
            strip = Strip([Segment(clip(text, width), style)])
            self._cache[key] = strip
        return strip

    def hide_grads(self, nids: frozenset[int]) -> None:
        """Show the grads of `nids` as ? (a prediction is asked for: quiz mode)."""
        if nids != self.hidden:
            self.hidden = frozenset(nids)
            self._drawn.clear()
            self.refresh()

    def _line_key(self, k: int, width: int) -> tuple | None:
        """What row `k` of the order shows (None past its end): its node, its state in
        the walk and its grad."""
        view = self.view
        n = len(view.topo) if view is not None else 0
        if not 0 <= k < n:
            return None
        nid = view.topo[k]
        step = n - 1 - k  # its place in the backward walk
        if self.running is not None and step == self.running:
            state = "run"
        elif self.marks.get(nid) == "acc":
            state = "acc"
        elif step < self.walked and view.ordered():
            state = "done"
        else:
            state = ""
        grad = self.grad[nid] if self.grad is not None else 0.0
        if nid in self.hidden:
            grad = None
        return (k, nid, state, grad, width)
