"""The debugger's footer: Textual's, except that a key greying out or coming back is
restyled where it is, and that keys that do not fit one row go on in a second.
Textual's own footer builds all its keys again at every change of the bindings, some
40 ms of a step that crosses a pass in a class's server (all sessions share one CPU);
only a change in which keys show does that here."""

from __future__ import annotations

from rich.cells import cell_len
from textual import events
from textual.containers import HorizontalGroup
from textual.screen import Screen
from textual.widgets import Footer

from mgtui.tui.textual_private import (FooterKey, footer_bindings_ready,
                                       mark_footer_bindings_ready, set_footer_key_enabled)

# Columns from which the command palette's key (ctrl+p) shows too, if the keys leave it
# room on their row: the debugger's keys take 79 at the default key map, and with the
# palette's beside them they ran under it at 80 columns ("q ▏^p palette": Quit hidden).
# The palette still opens with ctrl+p, and the help says so.
PALETTE_FROM = 90
PALETTE_WIDTH = 13  # `▏^p palette` and its margins


def key_width(key: FooterKey) -> int:
    """A compact footer key's columns: `k Description`, and the margin after it."""
    return cell_len(key.key_display) + (1 + cell_len(key.description) if key.description
                                        else 0) + 1


def rows_of(widths: list[int], room: int) -> list[int]:
    """How many keys of `widths` go on each row `room` columns wide, in order."""
    rows: list[int] = []
    used = room
    for width in widths:
        if used + width > room and (not rows or rows[-1]):
            rows.append(0)
            used = 0
        rows[-1] += 1
        used += width
    return rows or [0]


class KeyFooter(Footer):
    """A `Footer` that updates its keys in place when only their enabled state changes,
    leaves the palette's key out when the keys need its room, and puts the keys that do
    not fit one row on a second (a teacher's, at 80 or 100 columns)."""

    DEFAULT_CSS = """
    KeyFooter.-rows { layout: vertical; }
    KeyFooter HorizontalGroup.key-row { height: 1; width: 1fr; }
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._width = 0  # the width the keys were put in rows for

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width:
            self.call_after_refresh(self.recompose)

    def compose(self):
        width = self.app.size.width
        self._width = width
        self.set_reactive(Footer.show_command_palette, False)  # (the palette's key: below)
        keys = [key for key in super().compose() if isinstance(key, FooterKey)]
        counts = rows_of([key_width(key) for key in keys], width)
        self.set_class(len(counts) > 1, "-rows")
        self.styles.height = len(counts)
        if len(counts) == 1:
            if width >= PALETTE_FROM and sum(map(key_width, keys)) + PALETTE_WIDTH <= width:
                self.set_reactive(Footer.show_command_palette, True)
                keys += [key for key in super().compose() if isinstance(key, FooterKey)
                         and key.has_class("-command-palette")]
            yield from keys
            return
        for count in counts:
            yield HorizontalGroup(*keys[:count], classes="key-row")
            keys = keys[count:]

    def bindings_changed(self, screen: Screen) -> None:
        if (footer_bindings_ready(self) and self.is_attached and screen is self.screen
                and screen.app.app_focus and self._restyle_keys()):
            return
        if (not screen.app.app_focus and self.is_attached and screen is self.screen
                and not self.query(FooterKey)):
            # Textual's footer composes nothing while the app has no focus, and a
            # browser's page starts without it (Textual's web driver): a class's web
            # visitors at 100x30 never had keys (at 80x24 `on_resize` composed them)
            mark_footer_bindings_ready(self)
            self.call_after_refresh(self.recompose)
            return
        super().bindings_changed(screen)

    def _shown(self) -> list[tuple[str, str, bool]]:
        """(key, action, enabled) of each key the footer shows, in the order Textual's
        `Footer.compose` puts them: the first binding of each action, then the palette's."""
        active = self.screen.active_bindings
        first: dict[str, tuple[str, str, bool]] = {}
        for _node, binding, enabled, _tooltip in active.values():
            if binding.show and binding.action not in first:
                first[binding.action] = (binding.key, binding.action, enabled)
        shown = list(first.values())
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            palette = active.get(self.app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                shown.append((palette[1].key, palette[1].action, palette[2]))
        return shown

    def _restyle_keys(self) -> bool:
        """Grey out or enable the keys shown; False if the keys themselves changed."""
        keys = list(self.query(FooterKey))
        shown = self._shown()
        if [(k.key, k.action) for k in keys] != [(key, action) for key, action, _ in shown]:
            return False
        for footer_key, (_key, _action, enabled) in zip(keys, shown):
            set_footer_key_enabled(footer_key, enabled)
        return True
