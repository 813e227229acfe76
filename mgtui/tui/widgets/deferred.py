"""Panes held back until the screen has painted once, then mounted where they belong.

The debugger holds back the panes that are hidden at 80×24 (and the Graph pane, but on a
huge screen): its `compose` notes each as a `Later` (what makes the pane, and the pane it
comes after) instead of yielding it, and `mount_later` mounts them once the first frame
is drawn, their modules imported then. Nothing stands in their place until then: a
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
