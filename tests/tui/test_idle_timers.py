"""An idle debugger redraws nothing by itself: no widget of it refreshes on a timer
(each one costs every session of `mgtui serve` a wake-up many times a second)."""

from __future__ import annotations

import pytest

from mgtui.tui.app import MgtuiApp

from tests.conftest import SCENARIOS
from tests.tui.test_app import loaded

pytestmark = pytest.mark.usefixtures("clean_env", "no_user_config")


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


async def test_no_widget_of_an_idle_debugger_refreshes_on_a_timer():
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("n", "n")
        await pilot.pause()
        ticking = [type(w).__name__ for w in screen.walk_children() if w.auto_refresh]
        assert ticking == []
