"""The app against a scenario that ignores SIGINT (issue 22 item 8): ctrl+c used to let
the recording go on (879 -> 1,863 steps), and after q the app and its child were still
alive 32 s later. Now ctrl+c stops it (SIGTERM, then SIGKILL, if SIGINT is not heeded)
and q always quits, the scenario's process gone with the app."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from mgtui.tui.app import MgtuiApp

from tests.tui.test_app import loaded

HANG_GUARD = 60  # seconds: only so that a hang fails the test

# Ignores SIGINT, says its pid once it does, and makes nodes for ever (a node every
# millisecond: the app's updates have steps to show all along).
STUBBORN = '''
    """Ignores ctrl+c"""
    import os, signal, time
    from engine import Value

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    a = Value(1.0, label="a")
    open({ready!r}, "w").write(str(os.getpid()))
    while True:
        a = a * 1.0
        time.sleep(0.001)
'''


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] != b"Z"


async def scenario_pid(pilot, ready: Path) -> int:
    """The scenario's process id, once it runs (and ignores SIGINT)."""
    deadline = time.monotonic() + HANG_GUARD
    while not (ready.exists() and ready.read_text()):
        assert time.monotonic() < deadline, "the scenario never started"
        await pilot.pause(0.02)
    return int(ready.read_text())


async def gone(pilot, pid: int) -> bool:
    """Does process `pid` end (waiting on it, with only a hang guard)?"""
    deadline = time.monotonic() + HANG_GUARD
    while alive(pid) and time.monotonic() < deadline:
        await pilot.pause(0.02)
    return not alive(pid)


@pytest.fixture
def stubborn(write_scenario, tmp_path):
    ready = tmp_path / "ready"
    return write_scenario("stubborn", STUBBORN.format(ready=str(ready))), ready


async def test_ctrl_c_stops_a_scenario_that_ignores_sigint(stubborn):
    path, ready = stubborn
    app = MgtuiApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        pid = await scenario_pid(pilot, ready)
        assert app.loading
        await pilot.press("ctrl+c")
        deadline = time.monotonic() + HANG_GUARD
        while app.loading and time.monotonic() < deadline:
            await pilot.pause(0.02)
        assert not app.loading  # the recording stopped
        screen = await loaded(pilot)
        assert screen.trace.error is not None and screen.trace.error.type == "Stopped"
        assert "did not stop when asked, so its process was killed (SIGTERM)" in \
            screen.trace.error.message
        assert screen.trace.node_count > 1  # what it recorded is kept
        assert await gone(pilot, pid)


@pytest.mark.parametrize("key", ["q", "ctrl+q"])
async def test_q_quits_while_a_scenario_that_ignores_sigint_records(stubborn, key):
    path, ready = stubborn
    app = MgtuiApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        pid = await scenario_pid(pilot, ready)
        keeper = app.loader.run.pid  # (the child the app started: the scenario's keeper)
        await asyncio.wait_for(pilot.press(key), HANG_GUARD)
        deadline = time.monotonic() + HANG_GUARD
        while app.is_running and time.monotonic() < deadline:
            await pilot.pause(0.02)
        assert not app.is_running  # the app has quit
        assert not alive(pid) and not alive(keeper)  # and its child with it
    assert app.return_code == 0
