"""Pilot tests of small things at 80×24 (issue 9, item 6): notifications clear of the
step detail, a fan-out's key sentence in view, a visible focus, the help on the table's
columns, the palette's way to a node's creation and backward steps."""

from __future__ import annotations

from io import StringIO

import pytest
from rich.console import Console

from mgtui.tui.app import MgtuiApp
from mgtui.tui.widgets.node_table import NodeTable
from mgtui.tui.widgets.step_detail import StepDetail

from tests.conftest import SCENARIOS
from tests.tui.test_app import loaded

pytestmark = pytest.mark.usefixtures("clean_env", "no_user_config")
SMALL = (80, 24)


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def second_contribution_to(trace, label: str) -> int:
    """The step (1-based) of the `_backward` call that adds to `label`'s grad the second
    time in the first backward pass."""
    nid = trace.find(label)[0]
    seen = 0
    for i in range(len(trace)):
        e = trace.event(i)
        if e.kind == "backward" and any(w.node == nid for w in e.writes):
            seen += 1
            if seen == 2:
                return i + 1
    raise AssertionError(f"{label} gets no second contribution")


def event_step(trace, kind: str, label: str) -> int:
    nid = trace.find(label)[0]
    return next(i + 1 for i in range(len(trace))
                if trace.event(i).kind == kind and trace.event_node(i) == nid)


def shown(pane) -> str:
    """What a text pane shows in its height, as plain text."""
    return pane.render().plain


def plain(renderable, width: int = 80) -> str:
    console = Console(width=width, file=StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()


async def test_a_notification_does_not_cover_the_step_detail():
    app = MgtuiApp(SCENARIOS / "neuron_exp.py")
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        screen = await loaded(pilot)
        screen.goto(second_contribution_to(screen.trace, "e"))
        await pilot.press("b")
        await pilot.pause(0.2)
        toasts = list(app.screen.query("Toast"))
        assert toasts, "b gave no notification"
        pane = screen.query_one(StepDetail).region
        for toast in toasts:
            assert toast.region.area and not toast.region.overlaps(pane)


async def test_at_a_fan_out_step_the_key_sentence_is_in_view():
    app = MgtuiApp(SCENARIOS / "neuron_exp.py")
    async with app.run_test(size=SMALL) as pilot:
        screen = await loaded(pilot)
        screen.goto(second_contribution_to(screen.trace, "e"))
        await pilot.pause()
        text = shown(screen.query_one(StepDetail))
        assert "contribution 2 to e.grad" in text
        assert "(+=, not =)" in text  # the end of the sentence too, not cut by "↓ more"
        for line in text.splitlines()[1:]:  # every wrapped line keeps its indent
            assert line.startswith("  ") or line.startswith("↓"), line


async def test_tab_shows_where_the_focus_is_in_words_and_styles():
    app = MgtuiApp(SCENARIOS / "neuron.py", step=14)
    async with app.run_test(size=SMALL) as pilot:
        screen = await loaded(pilot)
        table = screen.query_one(NodeTable)
        bottom = screen.query_one("#bottom")

        def header_reversed() -> bool:
            return any(s.style and s.style.reverse for s in table._header())

        assert app.focused is table and header_reversed() and not bottom.border_title
        await pilot.press("tab")
        await pilot.pause()
        assert isinstance(app.focused, StepDetail)
        assert "step detail" in str(bottom.border_title) and not header_reversed()
        await pilot.press("shift+tab")
        await pilot.pause()
        assert app.focused is table and header_reversed() and not bottom.border_title


async def test_the_help_explains_the_uses_and_topo_columns():
    app = MgtuiApp(SCENARIOS / "neuron.py")
    async with app.run_test(size=SMALL) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        body = " ".join(plain(app.screen.query_one("#help-body Static").content, 200).split())
        assert "uses how many nodes use it as an input: its fan-out" in body
        assert "topo its place in the topological order" in body


@pytest.mark.parametrize("choice, kind", [("where it was made", "create"),
                                          ("where its _backward ran", "backward")])
async def test_the_palette_goes_to_a_nodes_creation_or_backward_step(choice, kind):
    app = MgtuiApp(SCENARIOS / "neuron_exp.py")
    async with app.run_test(size=SMALL) as pilot:
        screen = await loaded(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"node e")
        await pilot.pause(0.5)
        options = app.screen.query_one("OptionList")
        titles = [plain(options.get_option_at_index(i).prompt, 200).split("\n")[0].strip()
                  for i in range(options.option_count)]
        wanted = titles.index(f"Go to node e: {choice}")
        assert "Go to node e" in titles
        for _ in range(wanted + 1 - (options.highlighted is not None)):
            await pilot.press("down")
        assert options.highlighted == wanted
        await pilot.press("enter")
        await pilot.pause()
        trace = screen.trace
        assert screen.position == event_step(trace, kind, "e")
        assert trace.label(screen.selected) == "e"
