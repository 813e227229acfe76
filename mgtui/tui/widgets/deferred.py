"""A widget held back until the screen has painted once, then mounted in its place.

Like Textual's `Lazy`, which it follows, but it says when the widget is in: it posts
`Deferred.Mounted`, so the screen can hand the new pane what it shows. The debugger
defers the panes that are hidden at 80×24, so they cost nothing before the first paint.
"""

from __future__ import annotations

from textual.message import Message
from textual.widget import MountError, Widget


class Deferred(Widget):
    DEFAULT_CSS = """
    Deferred { display: none; }
    """

    class Mounted(Message):
        """The deferred widget is mounted now."""

        def __init__(self, widget: Widget) -> None:
            super().__init__()
            self.widget = widget

    def __init__(self, widget: Widget) -> None:
        self._widget = widget
        super().__init__()

    def compose_add_child(self, widget: Widget) -> None:
        self._widget.compose_add_child(widget)

    async def mount_composed_widgets(self, widgets: list[Widget]) -> None:
        parent = self.parent
        if not isinstance(parent, Widget):
            return

        async def mount() -> None:
            try:
                await parent.mount(self._widget, after=self)
            except MountError:
                return  # the app closed before its second frame
            await self.remove()
            parent.post_message(self.Mounted(self._widget))

        self.call_after_refresh(mount)
