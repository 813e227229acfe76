"""The SSH channel's driver hands what a client sends to its app one event per turn of
the event loop, in order, and none while the app is behind: a client's burst of keys
holds up neither the server's other sessions nor its memory."""

from __future__ import annotations

import asyncio

from mgtui.serve import driver as driver_module
from mgtui.serve.driver import ChannelDriver


class Terminal:
    def __init__(self) -> None:
        self.held: list[bool] = []

    def write(self, data: str) -> None:
        pass

    def terminal_size(self) -> tuple[int, int]:
        return (80, 24)

    def shown(self) -> None:
        pass

    def hold(self, held: bool) -> None:
        self.held.append(held)


class App:
    """An app whose queue holds `message_queue_size` messages (no screen yet)."""

    def __init__(self) -> None:
        self.terminal = Terminal()
        self.message_queue_size = 0


def driver_of(app: App) -> tuple[ChannelDriver, list]:
    driver = ChannelDriver(app)
    handed: list = []
    driver.process_message = handed.append
    driver._input = True
    return driver, handed


def keys(handed: list) -> str:
    return "".join(e.key for e in handed if hasattr(e, "key"))


async def turns(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_burst_of_keys_reaches_the_app_one_per_turn_in_order():
    driver, handed = driver_of(App())
    driver.feed("abc")
    seen = []
    for _ in range(6):
        await asyncio.sleep(0)
        seen.append(keys(handed))
    assert seen[-1] == "abc"
    assert all(len(b) - len(a) <= 1 for a, b in zip(seen, seen[1:]))  # one a turn at most
    driver.feed("xyz")
    await turns(2)
    driver.disable_input()  # the session ends: what was still to hand over is dropped
    await turns(5)
    assert keys(handed) in ("abcx", "abcxy") and "z" not in keys(handed)


async def test_a_key_waits_while_the_app_is_busy_with_the_last_one(monkeypatch):
    monkeypatch.setattr(driver_module, "BUSY_AT_MOST", 0.5)
    app = App()
    driver, handed = driver_of(app)
    app.message_queue_size = driver_module.QUEUED_AT_MOST  # behind: busy with the last keys
    driver.feed("ab")
    await asyncio.sleep(0.1)
    assert keys(handed) == ""
    app.message_queue_size = driver_module.QUEUED_AT_MOST - 1  # a few left: it may take more
    await asyncio.sleep(0.05)
    assert keys(handed) == "ab"
    app.message_queue_size = 100  # an app that stays busy still gets its keys, slowly
    driver.feed("c")
    await asyncio.sleep(0.2)
    assert keys(handed) == "ab"
    await asyncio.sleep(0.6)
    assert keys(handed) == "abc"
    driver.disable_input()


async def test_a_flood_is_held_at_the_bound_and_the_channel_paused_then_resumed(monkeypatch):
    monkeypatch.setattr(driver_module, "INPUT_HELD", 256)
    app = App()
    driver, handed = driver_of(app)
    app.message_queue_size = 10  # an app behind, for now
    driver.feed("n" * 300)
    assert app.terminal.held == [True]  # stop reading the channel
    driver.feed("n" * 500)  # (what the channel had already: kept, and no more)
    await asyncio.sleep(0.05)
    assert len(driver._raw) + len(driver._pending) == 800 and not handed
    app.message_queue_size = 0
    for _ in range(5000):  # (5 s at most)
        await asyncio.sleep(0.001)
        if app.terminal.held == [True, False]:
            break
    assert app.terminal.held == [True, False]  # read again once half of it is taken
    assert len(driver._raw) <= 128 and len(handed) >= 800 - 128 - 64
    driver.disable_input()
    assert driver._raw == "" and not driver._pending  # the rest is dropped


async def test_pasted_text_comes_as_keys_and_a_lone_escape_is_the_escape_key():
    driver, handed = driver_of(App())
    driver.feed("\x1b[200~ab")
    driver.feed("c\x1b[20")  # a paste mark split between two packets ...
    await turns(10)
    driver.feed("1~d")  # ... a moment apart
    await turns(10)
    assert keys(handed) == "abcd" and not any(type(e).__name__ == "Paste" for e in handed)
    driver.feed("\x1b")
    await asyncio.sleep(driver_module.ESCAPE_WAIT + 0.1)
    assert [e.key for e in handed][-1] == "escape"
    driver.disable_input()


async def test_the_window_is_capped_and_a_size_among_the_keys_is_not_the_windows():
    driver, handed = driver_of(App())
    for size in ((65535, 65535), (100, 40), (0, 0)):  # three changes: the app hears one
        driver.resize(*size)
    await turns(3)
    assert [(e.size.width, e.size.height) for e in handed] == [(1, 1)]
    driver.resize(65535, 65535)
    await turns(3)
    assert (handed[-1].size.width, handed[-1].size.height) == (500, 200)
    handed.clear()
    driver.feed("\x1b[48;65535;65535;0;0tn")  # an in-band resize, then a key
    await turns(5)
    assert [type(e).__name__ for e in handed] == ["Key"] and handed[0].key == "n"
    driver.disable_input()
