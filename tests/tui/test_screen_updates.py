"""What a terminal shows after many partial updates is what a full repaint shows.

The panes send only the lines, and the parts of lines, that changed, and the driver
sends of those only the cells that differ from what the terminal shows (`ScreenDiff`).
Here every update the app would write to the terminal is fed to two terminal emulators
(pyte), one as Textual writes it and one through a `ScreenDiff`, and after each key both
screens are compared, cell by cell, with a full repaint of the app at that moment: a
line left stale by a partial update, or a cell wrongly left out, would show up as a
difference. (Run after other apps in one process, it found a cell drawn in the colours of
another app's terminal: tests/tui/test_colour_systems.py.)
"""

from __future__ import annotations

import time

import pyte
import pytest
from textual._compositor import CompositorUpdate

from mgtui.tui.app import MgtuiApp
from mgtui.tui.screen_diff import ScreenDiff

from tests.conftest import SCENARIOS

pytestmark = pytest.mark.usefixtures("clean_env")


def shown(screen: pyte.Screen) -> list[list[tuple]]:
    """Each cell's character and look. A blank shows only its background (unless it is
    underlined, struck through or reversed), so its other attributes are not compared."""
    rows = []
    for y in range(screen.lines):
        row = []
        for x in range(screen.columns):
            c = screen.buffer[y][x]
            if c.data == " " and not (c.underscore or c.reverse or c.strikethrough):
                row.append((" ", c.bg))
            else:
                row.append((c.data, c.fg, c.bg, c.bold, c.italics, c.underscore, c.reverse,
                            c.strikethrough))
        rows.append(row)
    return rows


class Terminal:
    """A pyte screen fed with every update the app writes (headless apps write none)."""

    def __init__(self, app: MgtuiApp, size: tuple[int, int]) -> None:
        self.app = app
        self.screen = pyte.Screen(*size)  # fed as Textual writes
        self.stream = pyte.Stream(self.screen)
        self.cut = pyte.Screen(*size)  # fed through a ScreenDiff, as the driver writes
        self.cut_stream = pyte.Stream(self.cut)
        self.diff = ScreenDiff(erase=True)  # as for TERM=xterm-256color (pyte erases as bce)
        self.sent = [0, 0]  # characters written: as Textual writes them, as cut
        app._display = self._display  # what App._display would write to the terminal

    def _display(self, screen, renderable) -> None:
        if isinstance(renderable, CompositorUpdate):
            data = renderable.render_segments(self.app.console).replace("\n", "\r\n")
            cut = self.diff.write(data)
            self.stream.feed(data)
            self.cut_stream.feed(cut)
            self.sent[0] += len(data)
            self.sent[1] += len(cut)

    def repainted(self) -> pyte.Screen:
        """The screen as a full repaint of the app draws it now. A full render clears the
        regions the compositor has still to draw (between a layout and its paint, in a
        batch of Textual's): they are put back, or the app's next partial update would
        leave them out, and a line the test itself kept from the terminal would read as
        the app's fault."""
        fresh = pyte.Screen(self.screen.columns, self.screen.lines)
        compositor = self.app.screen._compositor
        pending = set(compositor._dirty_regions)
        update = compositor.render_update(full=True)
        compositor._dirty_regions.update(pending)
        pyte.Stream(fresh).feed(update.render_segments(self.app.console))
        return fresh

    def painting(self) -> bool:
        """Whether the app has a frame on its way: widgets to repaint, a layout, regions
        not yet drawn, or a batch of updates not yet ended."""
        screen = self.app.screen
        return bool(self.app._batch_count or screen._dirty_widgets or screen._layout_required
                    or screen._repaint_required or screen._compositor._dirty_regions)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_partial_updates_leave_the_screen_as_a_full_repaint_draws_it(size):
    app = MgtuiApp(SCENARIOS / "mlp.py")
    terminal = Terminal(app, size)
    async with app.run_test(size=size) as pilot:
        while app.loading or app.debugger.trace is None:
            await pilot.pause(0.02)
        await app.workers.wait_for_complete()
        backward = next(p for p in app.debugger.trace.passes if p.kind == "backward")
        app.debugger.goto(backward.start + len(backward) // 2)
        await pilot.pause()
        # From a terminal that shows one whole frame: the partial updates of the keys below
        # are what is tested, not what a loading screen shown meanwhile may have left
        app.screen.refresh()
        await pilot.pause()
        settled = time.monotonic() + 5.0
        while terminal.painting() and time.monotonic() < settled:
            await pilot.pause(0.02)
        keys = ["n", "n", "n", "p", "n", "b", "down", "down", "n", "]", "n", "[", "p",
                "G", "p", "p", "g", "n", "n", "n", "c", "C", "end", "home"]
        differences, visited = [], set()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
            await pilot.pause()
            visited.add(app.debugger.position)
            # (a refresh still on its way on a loaded machine is waited for, up to 5 s; a
            # partial update that left the screen wrong stays wrong however long one waits)
            deadline = time.monotonic() + 5.0
            while True:
                while terminal.painting() and time.monotonic() < deadline:
                    await pilot.pause(0.02)
                expected = shown(terminal.repainted())
                wrong = [(name, screen) for name, screen in (("as written", terminal.screen),
                                                             ("cut", terminal.cut))
                         if shown(screen) != expected]
                if not wrong or time.monotonic() > deadline:
                    break
                await pilot.pause(0.05)
            for name, screen in wrong:
                got = shown(screen)
                rows = [y for y in range(len(got)) if got[y] != expected[y]]
                y = rows[0]
                cells = [(x, got[y][x], expected[y][x]) for x in range(len(got[y]))
                         if got[y][x] != expected[y][x]][:3]
                differences.append((name, key, app.debugger.position, rows,
                                    screen.display[y], cells))
        assert not differences
        assert len(visited) > 10  # the keys went through the trace, far and near
        assert terminal.sent[1] < terminal.sent[0] / 2  # and the cut sent far less
