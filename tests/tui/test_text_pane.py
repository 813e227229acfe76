"""A text pane shows its focus line a third of the way down at the height it is shown at,
not at a height it had for a moment while the screen was laid out."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult

from mgtui.tui.widgets.text_pane import TextPane

TEXT = Text("\n".join(f"line {n}" for n in range(1, 81)))  # 80 lines; line n at index n - 1
FOCUS = 24  # index of "line 25"


class OnePane(App):
    def compose(self) -> ComposeResult:
        yield TextPane(id="pane")


def row_of(pane: TextPane, words: str) -> int:
    return pane.render().plain.split("\n").index(words)


async def test_the_focus_line_is_placed_again_at_the_height_the_pane_settles_at():
    app = OnePane()
    async with app.run_test(size=(40, 30)) as pilot:
        pane = app.query_one(TextPane)
        pane.styles.height = 6  # a height of a layout still settling
        pane.set_text(TEXT, focus_line=FOCUS)
        await pilot.pause()
        assert pane.content_size.height == 6
        assert row_of(pane, "line 25") == 6 // 3
        pane.styles.height = 24  # the height it settles at
        await pilot.pause()
        assert pane.content_size.height == 24
        assert row_of(pane, "line 25") == 24 // 3
        assert pane.render().plain.startswith(f"↑ {FOCUS - 24 // 3} lines above")


async def test_once_the_reader_scrolls_a_new_height_keeps_the_scroll():
    app = OnePane()
    async with app.run_test(size=(40, 30)) as pilot:
        pane = app.query_one(TextPane)
        pane.styles.height = 24
        pane.set_text(TEXT, focus_line=FOCUS)
        await pilot.pause()
        assert row_of(pane, "line 25") == 8
        pane.action_scroll_lines(2)  # the reader scrolls down two lines
        await pilot.pause()
        assert row_of(pane, "line 25") == 6
        pane.styles.height = 12
        await pilot.pause()
        assert row_of(pane, "line 25") == 6  # where the reader left it
        pane.set_text(TEXT, focus_line=FOCUS)  # a new step places it again
        await pilot.pause()
        assert row_of(pane, "line 25") == 12 // 3
