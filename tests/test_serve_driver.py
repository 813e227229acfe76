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
