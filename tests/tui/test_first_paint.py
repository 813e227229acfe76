"""The app's start (issue 36, point 7): what it defers until after its first paint comes
back, and leaves no trace of the deferral."""

from __future__ import annotations

import gc

import pytest

from mgtui.memory import pause_collector
from mgtui.tui.app import MgtuiApp

from tests.conftest import SCENARIOS
from tests.tui.test_app import loaded

pytestmark = pytest.mark.usefixtures("clean_env")


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_pause_collector_resumes_once_and_keeps_a_pause_it_found():
    gc.enable()
    resume = pause_collector()
    assert not gc.isenabled()
    resume()
    assert gc.isenabled()
    gc.disable()
    resume()  # (a second call changes nothing)
    assert not gc.isenabled()
    try:
        resume_inner = pause_collector()  # paused already: it stays paused
        resume_inner()
        assert not gc.isenabled()
    finally:
        gc.enable()


class Watched(MgtuiApp):
    """Notes whether the collector runs when the app is mounted (before the first paint:
    this handler runs before MgtuiApp's own)."""

    def on_mount(self) -> None:
        self.collecting_at_mount = gc.isenabled()


async def test_the_collector_paused_for_the_start_is_back_after_the_first_paint(collector_on):
    app = Watched(SCENARIOS / "chain.py")
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        assert gc.isenabled()
        assert app.debugger.trace is not None
    assert app.collecting_at_mount is False
    assert gc.isenabled()


async def test_an_app_that_ends_before_its_first_paint_resumes_the_collector(collector_on):
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(80, 24)):
        app.exit()
    assert gc.isenabled()
