"""The debugger's footer: Textual's, except that a key greying out or coming back is
restyled where it is. Textual's own footer builds all its keys again at every change
of the bindings, some 40 ms of a step that crosses a pass in a class's server (all
sessions share one CPU); only a change in which keys show does that here."""

from __future__ import annotations

from textual import events
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

# Columns from which the command palette's key (ctrl+p) shows too: the debugger's keys
# take 72 at the default key map, and with the palette's beside them they ran under it
# at 80 columns ("q ▏^p palette": Quit hidden). The palette still opens with ctrl+p.
PALETTE_FROM = 90


class KeyFooter(Footer):
    """A `Footer` that updates its keys in place when only their enabled state changes,
    and leaves the palette's key out when it is narrow."""

    def on_resize(self, event: events.Resize) -> None:
        wide = event.size.width >= PALETTE_FROM
        if wide != self.show_command_palette:
            self.show_command_palette = wide
            self.call_after_refresh(self.recompose)

    def bindings_changed(self, screen: Screen) -> None:
        if (self._bindings_ready and self.is_attached and screen is self.screen
                and screen.app.app_focus and self._restyle_keys()):
            return
        if (not screen.app.app_focus and self.is_attached and screen is self.screen
                and not self.query(FooterKey)):
            # Textual's footer composes nothing while the app has no focus, and a
            # browser's page starts without it (Textual's web driver): a class's web
            # visitors at 100x30 never had keys (at 80x24 `on_resize` composed them)
            self._bindings_ready = True
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
            if footer_key._disabled == enabled:
                footer_key._disabled = not enabled
                footer_key.set_class(not enabled, "-disabled")
        return True
