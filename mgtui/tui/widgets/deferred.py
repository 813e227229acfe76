"""Panes held back until the screen has painted once, then mounted where they belong.

The debugger holds back the panes that are hidden at 80×24 (and the Graph pane, but on a
huge screen): its `compose` notes each as a `Later` (what makes the pane, and the pane it
comes after) instead of yielding it (`LatePanes.hold`), and `mount_later` mounts them once
the first frame is drawn, their modules imported then. Nothing stands in their place until then: a
placeholder widget would be styled with the rest before the first paint.
"""

from __future__ import annotations

from typing import Callable

from textual.screen import Screen
from textual.widget import MountError, Widget

# A pane made later: what makes it, and the selector of the pane it comes after.
Later = tuple[Callable[[], Widget], str]


async def mount_later(screen: Screen, later: list[Later],
                      pane_in: Callable[[Widget], None]) -> None:
    """Make and mount each pane of `later` after the one it follows, and hand it to
    `pane_in` (which shows it what it missed)."""
    for make, follows in later:
        anchor = screen.query_one_optional(follows)
        parent = anchor.parent if anchor is not None else None
        if not isinstance(parent, Widget):
            continue
        pane = make()
        try:
            await parent.mount(pane, after=anchor)
        except MountError:
            return  # the app closed before its second frame
        pane_in(pane)


class LatePanes:
    """The debugger's panes made after its first paint: which they are (`hold`), their
    mounting once it has painted (`mount`), and each shown what it missed (`pane_in`)."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen  # the debugger (`DebuggerScreen`), which holds this
        self.held: list[Later] = []
        self.hidden: frozenset[int] = frozenset()  # the grads the quiz hides (`hide_grads`)

    def hold(self, *panes: tuple[Later, bool]) -> None:
        """Each pane (what makes it, the pane it follows) not made now (its flag False)."""
        self.held = [pane for pane, now in panes if not now]

    def mount(self) -> None:
        if self.held:
            self.screen.call_after_refresh(mount_later, self.screen, self.held, self.pane_in)
            self.held = []

    def pane_in(self, pane: Widget) -> None:
        """A pane made after the first paint is mounted: it shows what it missed."""
        screen = self.screen
        screen.side_tabs.panes_in()
        if pane.id == "graph":
            self.graph_in(pane)
        if screen.state is not None:
            screen.side_tabs.show(screen.state, single=False)

    def graph_in(self, graph) -> None:
        """The Graph pane shows the state, the grads the quiz hides, and itself if `m`
        was pressed before it came."""
        screen = self.screen
        graph.hide_grads(self.hidden)
        if screen.graph_shown:
            screen.show_graph(True)
            if screen.focused is screen.query_one("#nodes"):  # (`m` gave the table the focus)
                graph.focus()
        if screen.state is not None:
            graph.show(screen.state)
