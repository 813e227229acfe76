"""The views the debugger screen opens over itself: find, the notes full screen, and the
help. Each is imported when first opened (they are not in the first frame).
"""

from __future__ import annotations

from pathlib import Path

from textual.screen import Screen

from mgtui.settings.bindings import APP_KEYS, help_rows


def open_find(screen: Screen) -> None:
    """Ask what to find; the screen's `find` goes there."""
    if screen.session is not None:
        from mgtui.tui.widgets.dialogs import FindScreen

        screen.app.push_screen(FindScreen(), screen.find)


def open_notes(screen: Screen) -> None:
    """The step's `#:` notes and the lesson notes, full screen."""
    if screen.session is None or screen.state is None:
        return
    from mgtui.tui.widgets.notes_view import NotesScreen

    trace, state = screen.session.trace, screen.state
    screen.app.push_screen(NotesScreen(trace.title or Path(trace.scenario).name,
                                       state.step, state.detail.notes, trace.notes))


def open_help(screen: Screen) -> None:
    """Every key that works on the screen now, and what it does."""
    from mgtui.tui.widgets.dialogs import HelpScreen

    screen.app.push_screen(HelpScreen(screen_help_rows(screen)))


def screen_help_rows(screen: Screen) -> list[tuple[str, str]]:
    """The help's rows: (keys, what they do) for every key active on `screen`, in the
    user's keymap, with the screen's own texts for some (`help_texts`)."""
    active = {b.binding.id for b in screen.active_bindings.values()}
    return help_rows(screen.keymap, APP_KEYS + screen.KEYS, lambda key: key.id in active,
                     screen.help_texts())
