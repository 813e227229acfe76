"""The node table: every node of the current graph with its data and grad at this step.

A Line-API `ScrollView` (as toolong's `LogLines`), not a DataTable: it renders only the
rows on screen and keeps their `Strip`s in an LRU cache keyed by what changes a row, so a
step costs the same with 10 rows as with 100,000.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from mgtui.settings.bindings import TABLE_KEYS
from mgtui.trace.array_text import fitted
from mgtui.trace.arrays import ARRAY_CELL, is_finite
from mgtui.trace.explain import fmt
from mgtui.trace.names import fitted_name
from mgtui.session import StepState
from mgtui.session.view import GraphView
from mgtui.tui.widgets.keys import bindings_of
from mgtui.tui.widgets.strips import CompactLines, changed_width

# The row marks. Each is text, so it reads without colour (NO_COLOR, 16 colours).
MARKS = {
    "run": "▶ ",  # this node's _backward is running
    "acc": "+=",  # the running _backward accumulated into this node's grad
    "assign": "= ",  # the running _backward assigned this node's grad (`x.grad = …`)
    "new": "● ",  # created by this (forward) step
    "set": "= ",  # written outside a _backward (seed, zero_grad, update)
    "err": "✗ ",
}
BREAKPOINT = "◆"
FLAGGED = "!"  # the gradient doctor found a problem at this node

COLUMNS = ("id", "label", "op", "data", "grad", "inputs", "uses", "topo")


def clip(text: str, width: int) -> str:
    """`text` in exactly `width` terminal cells: padded, or cut with `…` (a wide CJK
    character or emoji takes two cells; cutting by length let a row overflow)."""
    cells = cell_len(text)
    if cells <= width:
        return text + " " * (width - cells)
    return set_cell_size(text, max(width - 1, 0)) + "…"


def number(x, width: int) -> str:
    text = fitted(x, width, cell_len)  # an array in full if it fits, else its shape and a summary
    if text is not None:
        return text.rjust(width) if cell_len(text) <= width else clip(text, width)
    text = fmt(x)
    return text.rjust(width) if len(text) <= width else f"{x:.{max(width - 7, 1)}g}".rjust(width)[:width]


class NodeTable(CompactLines, ScrollView, can_focus=True):
    """Rows are the current graph's nodes; the cursor row is the selected node."""

    inherit_bindings = False
    BINDINGS = bindings_of(TABLE_KEYS)
    COMPONENT_CLASSES = {
        "node-table--header",
        "node-table--cursor",
        "node-table--run",
        "node-table--acc",
        "node-table--assign",
        "node-table--new",
        "node-table--set",
        "node-table--changed",
        "node-table--breakpoint",
        "node-table--flagged",
        "node-table--dim",
        "node-table--nonfinite",
    }
    DEFAULT_CSS = """
    NodeTable {
        background: $surface;
        scrollbar-size-vertical: 1;
    }
    NodeTable > .node-table--header { text-style: bold; color: $text-muted; background: $panel; }
    NodeTable:focus > .node-table--header { text-style: bold reverse; }
    NodeTable > .node-table--cursor { background: $accent 35%; text-style: underline; }
    NodeTable:focus > .node-table--cursor { background: $accent 60%; }
    NodeTable > .node-table--run { text-style: bold reverse; color: $warning; }
    NodeTable > .node-table--acc { text-style: bold; color: $success; }
    NodeTable > .node-table--assign { text-style: bold; color: $error; }
    NodeTable > .node-table--new { text-style: bold; color: $primary; }
    NodeTable > .node-table--set { text-style: bold; color: $secondary; }
    NodeTable > .node-table--changed { text-style: bold reverse; color: $success; }
    NodeTable > .node-table--breakpoint { color: $error; text-style: bold; }
    NodeTable > .node-table--flagged { color: $error; text-style: bold reverse; }
    NodeTable > .node-table--dim { color: $text-muted; }
    NodeTable > .node-table--nonfinite { color: $error; text-style: bold reverse; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, init=False)
    breakpoints: reactive[frozenset[int]] = reactive(frozenset, init=False)
    flagged: reactive[frozenset[int]] = reactive(frozenset, init=False)  # the doctor's nodes

    class Selected(Message):
        """The user moved the cursor to a node (by key or mouse)."""

        def __init__(self, table: NodeTable, nid: int) -> None:
            super().__init__()
            self.table = table
            self.nid = nid

        @property
        def control(self) -> NodeTable:
            return self.table

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.view: GraphView | None = None
        self.data = None
        self.grad = None
        self.created = 0
        self.marks: dict[int, str] = {}
        self.hidden: frozenset[int] = frozenset()  # grads shown as ? (quiz mode)
        self._rows = 0
        self._cache: LRUCache[tuple, Strip] = LRUCache(2048)
        self._widths: tuple[int, ...] = ()
        self._drawn: dict[int, tuple] = {}  # line on screen -> (its row's key, its strip)

    # -- state from the session ------------------------------------------------------------
    def show(self, state: StepState, single_step: bool = False) -> None:
        """Show the state of one step, the cursor on its selected node. Within the same
        graph only the lines whose row changed are drawn again, however far the move
        (so `single_step` is no longer needed; callers may still pass it)."""
        view = state.view
        new_view = view is not self.view
        if new_view:
            self._show_view(view)
        self.data, self.grad, self.created, self.marks = (state.data, state.grad,
                                                          state.created, state.marks)
        self.breakpoints = state.breakpoints  # a change redraws every row
        if state.node is not None and view is not None:
            row = view.row_of(state.node, view.trace.node_count)
            if row is not None:
                self.set_cursor(row, center=True, notify=False, repaint=False)
        if new_view or view is None:
            self.refresh()
            if view is not None:  # a new virtual size applies after this refresh
                self.call_after_refresh(self.scroll_to_row, self.cursor, center=True)
            return
        self.refresh_changed()

    def refresh_changed(self) -> None:
        """Draw again only the lines on screen whose row is not what was drawn there,
        and of each only as far as it changed (a scroll repaints everything by itself)."""
        top, scroll_x = round(self.scroll_y), round(self.scroll_x)
        drawn = self._drawn
        width, height = self.scrollable_content_region.size
        for y in range(1, height):
            row = top + y - 1
            key = self._row_key(row) if 0 <= row < self._rows else None
            old_key, old_strip = drawn.get(y, (False, None))
            if old_key == key:
                continue
            cut = width
            if key is not None and old_strip is not None:
                strip = self._row(row, key).crop_extend(scroll_x, scroll_x + width, self.rich_style)
                cut = changed_width(old_strip, strip, width)
            if cut:
                self.refresh(Region(0, y, cut, 1))  # not the scrollbar beside it

    def _show_view(self, view: GraphView | None) -> None:
        self.view = view
        self._cache.clear()
        self._drawn.clear()
        self._widths = self._column_widths()
        # Every row of the graph, made yet or not: a fixed size, so a step needs no
        # layout pass. Rows not made yet are drawn dim.
        self._rows = view.row_count(view.trace.node_count) if view is not None else 0
        self.virtual_size = Size(sum(self._widths) + len(self._widths), self._rows + 1)

    @property
    def row_count(self) -> int:
        return self._rows

    @property
    def rows_needed(self) -> int:
        """The rows the whole table takes: its header, its rows, a scrollbar under them
        where it is wider than the pane (the screen gives the rest to the step detail)."""
        wide = self.size.width and self.virtual_size.width > self.size.width
        return self._rows + 1 + (1 if wide else 0)

    @property
    def selected_node(self) -> int | None:
        if self.view is None or not self._rows:
            return None
        return self.view.row_node(min(self.cursor, self._rows - 1), self.view.trace.node_count)

    def set_cursor(self, row: int, *, center: bool = False, notify: bool = True,
                   repaint: bool = True) -> None:
        if not self._rows:
            return
        row = max(0, min(row, self._rows - 1))
        self.set_reactive(NodeTable.cursor, row)
        self.scroll_to_row(row, center=center)
        if repaint:
            self.refresh_changed()
        if notify and self.view is not None:
            self.post_message(self.Selected(self, self.view.row_node(row, self.view.trace.node_count)))

    def scroll_to_row(self, row: int, *, center: bool = False) -> None:
        visible = max(self.scrollable_content_region.height - 1, 1)
        top = round(self.scroll_y)
        if top <= row < top + visible:
            return
        if center:
            target = row - visible // 2
        elif row < top:
            target = row
        else:
            target = row - visible + 1
        self.scroll_to(y=max(target, 0), animate=False, immediate=True)

    # -- keys and mouse -------------------------------------------------------------------
    def action_cursor(self, delta: int) -> None:
        self.set_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.set_cursor(self.cursor + direction * max(self.scrollable_content_region.height - 2, 1))

    def action_cursor_to(self, row: int) -> None:
        self.set_cursor(row if row >= 0 else self._rows - 1)

    def on_click(self, event) -> None:
        row = round(self.scroll_y) + event.y - 1
        if event.y >= 1 and 0 <= row < self._rows:
            self.set_cursor(row)

    def on_resize(self) -> None:
        # the first size (and any new one) may hide the cursor row: bring it back
        self.call_after_refresh(self.scroll_to_row, self.cursor, center=True)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    # -- rendering --------------------------------------------------------------------------
    def _column_widths(self) -> tuple[int, ...]:
        view = self.view
        n = view.trace.node_count if view is not None else 0
        idw = max(len(str(max(n - 1, 0))), 2)
        lw = view.label_width if view is not None else 5
        iw = view.inputs_width if view is not None else 6
        vw = ARRAY_CELL if view is not None and view.trace.arrays else 10  # (shapes)
        return (3, idw, lw, 5, vw, vw, iw, 4, max(len(str(n)), 4))

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x = round(self.scroll_x)
        if y == 0:
            strip = self._header()
        else:
            row = round(self.scroll_y) + y - 1
            if self.view is None or not 0 <= row < self._rows:
                self._drawn[y] = (None, None)
                return Strip.blank(width, self.rich_style)
            key = self._row_key(row)
            strip = self._row(row, key).crop_extend(scroll_x, scroll_x + width, self.rich_style)
            self._drawn[y] = (key, strip)
            return strip
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)

    def _header(self) -> Strip:
        key = ("header", self._widths)
        strip = self._cache.get(key)
        if strip is None:
            style = self.get_component_rich_style("node-table--header")
            names = ("",) + COLUMNS
            cells = []
            for k, (name, w) in enumerate(zip(names, self._widths)):
                right = k in (4, 5, 7, 8)
                cells.append(name.rjust(w) if right else clip(name, w))
            text = " ".join(cells) + " "
            total = sum(self._widths) + len(self._widths) + 200
            strip = Strip([Segment(text.ljust(total), style)])
            self._cache[key] = strip
        return strip

    def hide_grads(self, nids: frozenset[int]) -> None:
        """Show the grads of `nids` as ? (a prediction is asked for: quiz mode)."""
        if nids != self.hidden:
            self.hidden = frozenset(nids)
            self.refresh()

    def _row_key(self, row: int) -> tuple:
        """What row `row` shows: its node, mark, cursor, breakpoint, flag, data and grad."""
        view = self.view
        nid = view.row_node(row, view.trace.node_count)
        if nid >= self.created:  # not made yet at this step
            mark, data, grad = "future", 0.0, 0.0
        else:
            mark = self.marks.get(nid, "")
            data, grad = self.data[nid], (None if nid in self.hidden else self.grad[nid])
        return (nid, mark, row == self.cursor, nid in self.breakpoints, data, grad,
                nid in self.flagged, self._widths)

    def _row(self, row: int, key: tuple | None = None) -> Strip:
        """The strip of row `row` (cached by what it shows)."""
        key = key or self._row_key(row)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(*key[:7])
            self._cache[key] = strip
        return strip

    def _render_row(self, nid: int, mark: str, is_cursor: bool, bp: bool,
                    data: float, grad: float, flag: bool = False) -> Strip:
        view = self.view
        trace = view.trace
        w = self._widths
        base = self.rich_style
        row_style = base
        if mark == "future":
            row_style = base + self.get_component_rich_style("node-table--dim")
        elif mark:
            row_style = base + self.get_component_rich_style(f"node-table--{mark}")
        if is_cursor and mark in ("run", "acc", "assign", "new", "set"):
            row_style = row_style + Style(underline=True)  # keep the mark's own colours
        elif is_cursor:
            row_style = row_style + self.get_component_rich_style("node-table--cursor")
        changed = self.get_component_rich_style("node-table--changed") if mark in ("acc", "assign", "set") else None
        topo = view.topo_of.get(nid)
        nonfinite = self.get_component_rich_style("node-table--nonfinite")
        cells: list[tuple[str, Style | None]] = [
            ((BREAKPOINT if bp else " ") + MARKS.get(mark, "  "),
             self.get_component_rich_style("node-table--breakpoint") if bp and not mark else None),
            (str(nid).rjust(w[1]), None),
            (clip(FLAGGED + fitted_name(trace, nid, w[2] - 1) if flag
                  else fitted_name(trace, nid, w[2]), w[2]),
             self.get_component_rich_style("node-table--flagged") if flag else None),
            (clip(trace.op(nid), w[3]), None),
            ("·".rjust(w[4]) if mark == "future" else number(data, w[4]),
             None if is_finite(data) else nonfinite),
            ("·".rjust(w[5]) if mark == "future" else "?".rjust(w[5]) if grad is None
             else number(grad, w[5]), changed if grad is None or is_finite(grad) else nonfinite),
            (clip(view.inputs_text(nid), w[6]), None),
            (str(view.uses(nid)).rjust(w[7]), None),
            (("" if topo is None else str(topo)).rjust(w[8]), None),
        ]
        segments = []
        for k, (text, extra) in enumerate(cells):
            style = row_style + extra if extra is not None else row_style
            segments.append(Segment(text, style))
            segments.append(Segment(" ", row_style))
        total = sum(w) + len(w)
        return Strip(segments, total)
