"""The SSH channel's driver hands a burst of keys to its app one per turn of the event
loop, in order, so that one client's burst does not hold up the server's other sessions."""

from __future__ import annotations

import asyncio

from mgtui.serve.driver import ChannelDriver


class Terminal:
    def write(self, data: str) -> None:
        pass

    def terminal_size(self) -> tuple[int, int]:
        return (80, 24)

    def shown(self) -> None:
        pass


class App:
    terminal = Terminal()


async def test_a_burst_of_keys_reaches_the_app_one_per_turn_in_order():
    driver = ChannelDriver(App())
    handed: list[tuple[int, str]] = []
    turn = 0
    driver.process_message = lambda event: handed.append((turn, event.key))
    driver._input = True
    driver.feed("abc")
    assert handed == [(0, "a")]
    for turn in range(1, 4):
        await asyncio.sleep(0)
    assert [key for _, key in handed] == ["a", "b", "c"]
    assert len({t for t, _ in handed}) == 3  # each in a turn of its own
    driver.disable_input()
    driver._input = True
    driver.feed("xy")
    driver.disable_input()  # the session ends: what was still to hand over is dropped
    await asyncio.sleep(0)
    assert [key for _, key in handed] == ["a", "b", "c", "x"]


async def test_the_window_is_capped_and_a_size_among_the_keys_is_not_the_windows():
    driver = ChannelDriver(App())
    handed = []
    driver.process_message = handed.append
    driver._input = True
    driver.resize(65535, 65535)
    driver.resize(0, 0)
    assert [(e.size.width, e.size.height) for e in handed] == [(500, 200), (1, 1)]
    handed.clear()
    driver.feed("\x1b[48;65535;65535;0;0tn")  # an in-band resize, then a key
    for _ in range(3):
        await asyncio.sleep(0)
    assert [type(e).__name__ for e in handed] == ["Key"] and handed[0].key == "n"
    driver.disable_input()
