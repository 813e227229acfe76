"""How the debugger screen lays itself out: its breakpoint classes for the terminal's
size, the room the node table takes above the step detail, and the Graph pane in the
table's place (`TableRoom`, an object the screen holds).
"""

from __future__ import annotations

from textual.css.scalar import Scalar
from textual.screen import Screen

from mgtui.tui.widgets.node_table import NodeTable

HUGE = (160, 48)  # from this size on, the Graph pane is always shown, below the table


def is_huge(size: tuple[int, int]) -> bool:
    return size[0] >= HUGE[0] and size[1] >= HUGE[1]


def take_breakpoints(screen: Screen, size: tuple[int, int]) -> None:
    """Give `screen` the breakpoint classes of a terminal of `size` (and `-huge`), without
    restyling it: at compose, rather than at the first resize, which would restyle every
    pane once more before the first paint."""
    width, height = size
    for breakpoints, value in ((screen.HORIZONTAL_BREAKPOINTS, width),
                               (screen.VERTICAL_BREAKPOINTS, height)):
        chosen = [name for limit, name in breakpoints if value >= limit][-1:]
        for _, name in breakpoints:
            screen.set_class(name in chosen, name, update=False)
    screen.set_class(is_huge(size), "-huge", update=False)


class TableRoom:
    """The room of the node table (`#top`) on the debugger `screen`: fitted to the
    table's rows, or given to the Graph pane (`graph_shown`, the `m` key)."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self.graph_shown = False  # the Graph pane in place of the node table
        self._fitted_for: tuple[int, int] | None = None  # the terminal size last fitted to

    def fit(self) -> None:
        fit_table(self.screen, self.graph_shown or self.screen.has_class("-huge"))

    def resized(self) -> None:
        """The terminal was resized: fit the table again, after the new layout (a
        scrollbar under the table, or not). Not at the screen's own resizes as it lays
        out, each of which would ask for another refresh."""
        size = tuple(self.screen.app.size)
        if self._fitted_for != size:
            self._fitted_for = size
            self.screen.call_after_refresh(self.fit)

    def show_graph(self, shown: bool) -> None:
        """The Graph pane shown in place of the table and the topo list (`#top`), or not.
        Set on the two as their own display, not as a class of the screen's: that
        restyles every widget on the screen (some 30-180 ms a session; a class's `m`
        in the teacher's and every group's session at once)."""
        self.graph_shown = shown
        self.fit()  # (the pane shown: at once, in the same layout)
        if not shown:
            self.screen.call_after_refresh(self.fit)  # (hidden: from the table's room)
        self.screen.query_one("#top").styles.display = "none" if shown else None
        for graph in self.screen.query("#graph"):  # (not mounted before the first paint)
            graph.styles.display = "block" if shown else None  # (None: the style sheet's
            # again: hidden, or shown below the table on a huge screen)


def fit_table(screen: Screen, graph_room: bool) -> None:
    """A table shorter than its room takes only the rows it needs, and the step detail
    below it gets the others (its notes need not scroll out of sight): `#top` at most the
    table's rows, `#bottom` the rest (its height in mgtui.tcss is its least). Restyled
    only when that changes (a new graph, a new size), not at a step; not where the Graph
    pane takes the room (`graph_room`: in the table's place, or below it)."""
    table, top, bottom = (screen.query_one_optional(NodeTable), screen.query_one("#top"),
                          screen.query_one("#bottom"))
    room = top.outer_size.height + bottom.outer_size.height
    least = bottom.styles.base.height
    if graph_room:
        rows = None
    elif table is None or not table.row_count or not room or least is None:
        return
    else:
        need = table.rows_needed
        rows = need if need < room - least.resolve(screen.size, screen.app.size) else None
    if top.styles.inline.max_height != (None if rows is None else Scalar.from_number(rows)):
        top.styles.max_height = rows
        bottom.styles.height = None if rows is None else "1fr"
