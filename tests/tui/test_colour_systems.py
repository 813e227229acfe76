"""One process draws for terminals of different colours, and each gets its own colours.

Textual keeps a strip's terminal text in the strip and rich keeps a style's SGR codes in the
style, in the colours of whichever console drew them first, and apps share styles through
caches: in one process (the class server's worker, an SVG export beside a terminal, the
test run) a 16-colour terminal was sent the 24-bit colours another app drew with.
"""

from __future__ import annotations

import re

import pytest
from rich.color import ColorSystem
from textual._compositor import CompositorUpdate

from mgtui.tui.app import MgtuiApp

from tests.conftest import SCENARIOS

pytestmark = pytest.mark.usefixtures("clean_env")

TRUECOLOR_CODE = re.compile(r"\x1b\[[0-9;]*[34]8;2;")  # a 24-bit colour
EIGHT_BIT_CODE = re.compile(r"\x1b\[[0-9;]*[34]8;5;")  # one of 256 colours


async def drawn(system: ColorSystem, size=(100, 30)) -> str:
    """Everything `mlp.py`'s app writes to a terminal of colour `system`, stepping."""
    app = MgtuiApp(SCENARIOS / "mlp.py")
    written: list[str] = []
    display = app._display

    def keep(screen, renderable) -> None:
        if isinstance(renderable, CompositorUpdate):
            written.append(renderable.render_segments(app.console))
        display(screen, renderable)

    app._display = keep
    async with app.run_test(size=size) as pilot:
        app.console._color_system = system
        while app.loading or app.debugger.trace is None:
            await pilot.pause(0.02)
        await app.workers.wait_for_complete()
        backward = next(p for p in app.debugger.trace.passes if p.kind == "backward")
        app.debugger.goto(backward.start + len(backward) // 2)
        await pilot.pause()
        for key in ["n", "n", "p", "b", "down", "n", "G", "g", "c", "C"]:
            await pilot.press(key)
            await pilot.pause()
        app.screen.refresh()  # the whole screen once more
        await pilot.pause(0.1)
    return "".join(written)


async def test_a_16_colour_terminal_gets_no_24_bit_colour_after_a_24_bit_one():
    first = await drawn(ColorSystem.TRUECOLOR)
    assert TRUECOLOR_CODE.search(first)  # (the first app did draw in 24-bit colour)
    after = await drawn(ColorSystem.STANDARD)
    assert len(after) > 10_000
    found = TRUECOLOR_CODE.findall(after) + EIGHT_BIT_CODE.findall(after)
    assert not found, f"{len(found)} codes a 16-colour terminal cannot show, e.g. {found[:3]}"


async def test_a_256_colour_terminal_between_others_gets_its_own():
    await drawn(ColorSystem.STANDARD)
    await drawn(ColorSystem.TRUECOLOR)
    between = await drawn(ColorSystem.EIGHT_BIT)
    assert EIGHT_BIT_CODE.search(between)
    assert not TRUECOLOR_CODE.search(between)
    last = await drawn(ColorSystem.TRUECOLOR)  # and a 24-bit one after them all gets 24-bit
    assert TRUECOLOR_CODE.search(last) and not EIGHT_BIT_CODE.search(last)
