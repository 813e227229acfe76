"""The debugger's footer greys keys out and back in place, and shows what Textual's
bindings say: each shown key disabled exactly when its action cannot run."""

from __future__ import annotations

import pytest

from mgtui.tui.app import MgtuiApp

from tests.conftest import SCENARIOS
from tests.tui.test_app import loaded

pytestmark = pytest.mark.usefixtures("clean_env", "no_user_config")


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def footer_state(screen) -> dict[str, bool]:
    return {key.action: key.has_class("-disabled") for key in screen.query("FooterKey")}


def bindings_state(screen) -> dict[str, bool]:
    """What Textual's bindings say: for each shown action, is it disabled?"""
    state: dict[str, bool] = {}
    for _node, binding, enabled, _tooltip in screen.active_bindings.values():
        if binding.show:
            state.setdefault(binding.action, not enabled)
    return state


async def test_a_key_greys_out_and_back_in_the_same_footer_key():
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        keys = {key.action: key for key in screen.query("FooterKey")}
        assert footer_state(screen)["prev"] is True  # nothing before the first step
        await pilot.press("n")
        await pilot.pause()
        assert footer_state(screen)["prev"] is False
        await pilot.press("G")
        await pilot.pause()
        assert footer_state(screen)["next"] is True and footer_state(screen)["prev"] is False
        shown, said = footer_state(screen), bindings_state(screen)
        assert {a: d for a, d in shown.items() if a in said} == {
            a: d for a, d in said.items() if a in shown}
        assert {key.action: key for key in screen.query("FooterKey")} == keys  # not rebuilt
        await pilot.press("g")
        await pilot.pause()
        assert footer_state(screen)["prev"] is True and footer_state(screen)["next"] is False
