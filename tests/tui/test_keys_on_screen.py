"""The keys (issue 35 point 4): `o` opens the lesson picker everywhere, the Graph pane
turns with `T`, and its turn stays with its lesson; no key is bound to two actions on
one screen; the footer and the help list the keys that work on the screen, a
teacher's `R * ! Q V` included, and none for whom they do not work."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets._footer import FooterKey

from mgtui.run.lessons import record_lesson
from mgtui.serve.app import ClassScreen, ServedApp
from mgtui.settings.bindings import (APP_KEYS, CLASS_KEYS, DEBUGGER_KEYS, GRAPH_KEYS,
                                    TABLE_KEYS, TEXT_KEYS, TOPO_KEYS, clashes, screen_keys)
from mgtui.session.follow import Classroom
from mgtui.tui.app import MgtuiApp
from mgtui.tui.widgets import dialogs, notes_view, roster
from mgtui.tui.widgets.debugger import DebuggerScreen
from mgtui.tui.widgets.graph import GraphPane
from mgtui.tui.widgets.node_table import NodeTable
from mgtui.tui.widgets.text_pane import TextPane
from mgtui.tui.widgets.topo_list import TopoList

from tests.conftest import SCENARIOS
from tests.tui.test_app import loaded

pytestmark = pytest.mark.usefixtures("clean_env", "no_user_config")
TEACHER_KEYS = {"R", "asterisk", "exclamation_mark", "Q", "V"}


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture(scope="module")
def lessons():
    return {name: record_lesson(SCENARIOS / f"{name}.py", f"{name}.py")
            for name in ("chain", "neuron_exp")}


# -- each key does one thing ---------------------------------------------------------------------

def bound(cls) -> dict[str, str]:
    """key -> action of a class's bindings, merged down its classes as Textual merges
    them: a class's binding of a key replaces its bases' (`inherit_bindings` False:
    none of its bases'). mgtui's own: Textual's (ctrl+c copies a selection, when no
    recording is to be stopped; tab moves the focus) are its own business."""
    keys: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if getattr(base, "_inherit_bindings", True) is False:
            keys.clear()
        if not base.__module__.startswith("mgtui"):
            continue
        for binding in base.__dict__.get("BINDINGS", []):
            key, action = (binding.key, binding.action) if hasattr(binding, "key") else (
                binding[0], binding[1])
            for k in key.split(","):
                keys[k.strip()] = action.removeprefix("app.")
    return keys


SCREENS = [DebuggerScreen, ClassScreen, dialogs.HelpScreen, dialogs.FindScreen,
           dialogs.ErrorScreen, dialogs.PickerScreen, dialogs.LoadingScreen,
           notes_view.NotesScreen, roster.RosterScreen, roster.SayScreen]
PANES = [None, NodeTable, TopoList, TextPane, GraphPane]


@pytest.mark.parametrize("app", [MgtuiApp, ServedApp], ids=["app", "class"])
@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: s.__name__)
def test_no_key_is_bound_to_two_actions_on_one_screen(app, screen):
    panes = PANES if issubclass(screen, DebuggerScreen) else [None]
    for pane in panes:
        actions: dict[str, set[str]] = {}
        for layer in (app, screen, pane):
            for key, action in (bound(layer) if layer is not None else {}).items():
                actions.setdefault(key, set()).add(action)
        two = {key: acts for key, acts in actions.items() if len(acts) > 1}
        assert not two, (screen.__name__, pane and pane.__name__, two)


def test_the_table_of_keys_binds_each_key_to_one_action():
    for screen in (DEBUGGER_KEYS, DEBUGGER_KEYS + CLASS_KEYS):
        for pane in ((), TABLE_KEYS, TOPO_KEYS, TEXT_KEYS, GRAPH_KEYS):
            assert clashes(APP_KEYS, screen_keys(screen), pane) == {}
    # and it finds one: the Graph pane's old turn on `o`, the picker's key
    old = GRAPH_KEYS + (GRAPH_KEYS[0].__class__("graph.old", "o", "flip", "Flip"),)
    assert clashes(screen_keys(DEBUGGER_KEYS), old) == {"o": {"pick", "flip"}}


# -- o and T -----------------------------------------------------------------------------------

async def test_o_opens_the_picker_from_the_graph_pane_and_t_turns_it():
    app = MgtuiApp(SCENARIOS / "chain.py", step=9)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("m")
        await pilot.pause()
        graph = screen.query_one(GraphPane)
        assert app.focused is graph
        before = graph.picture.orientation
        await pilot.press("T")
        await pilot.pause()
        assert graph.picture.orientation != before and graph.orientation is not None
        await pilot.press("o")
        await pilot.pause()
        assert type(app.screen).__name__ == "PickerScreen"


async def test_the_turn_stays_with_its_lesson(lessons):
    async def picture_of_neuron_exp(turn_first: bool):
        app = ServedApp(lessons, Classroom(), teacher=True)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.3)
            await pilot.press("enter")  # the picker: chain
            await pilot.pause(0.3)
            await pilot.press("n", "m")
            await pilot.pause(0.2)
            graph = app.debugger.query_one(GraphPane)
            if turn_first:
                turned = "TB" if graph.picture.orientation == "LR" else "LR"
                await pilot.press("T")
                await pilot.pause(0.2)
                assert graph.orientation == turned
            await pilot.press("o")  # from the Graph pane: the picker
            await pilot.pause(0.2)
            assert type(app.screen).__name__ == "PickerScreen"
            await pilot.press("down", "enter")  # neuron_exp, the Graph pane still shown
            await pilot.pause(0.3)
            await pilot.press("n")
            await pilot.pause(0.3)
            assert app.lesson == "neuron_exp" and graph.display
            return graph.orientation, graph.picture.orientation

    untouched = await picture_of_neuron_exp(turn_first=False)
    assert await picture_of_neuron_exp(turn_first=True) == untouched
    assert untouched[0] is None  # laid out by its size, as if nothing had been turned


# -- the footer and the help ----------------------------------------------------------------------

def footer_keys(app) -> list[FooterKey]:
    return list(app.screen.query(FooterKey))


def help_keys(screen) -> set[str]:
    """Every key the help screen names (its rows' key column, split)."""
    keys = set()
    for shown, _meaning in screen.help_rows():
        keys.update(part for part in shown.replace(" / ", " ").split() if part)
    return keys


NAMES = {"asterisk": "*", "exclamation_mark": "!", "question_mark": "?", "slash": "/",
         "right_square_bracket": "]", "left_square_bracket": "[", "shift+tab": "shift+tab"}


def working_keys(screen) -> dict[str, tuple[str, bool]]:
    """key -> (action, shown in the footer) of every binding of the screen itself and the
    app that works for this session now (not hidden by `check_action`); the panes' own
    keys are in the help's lines about the panes."""
    own = {**bound(type(screen.app)), **bound(type(screen))}
    out = {}
    for key, active in screen.active_bindings.items():
        if key in own and active.binding.id:
            out[key] = (active.binding.action, active.binding.show)
    return out


@pytest.mark.parametrize("size", [(120, 40), (100, 30), (80, 24)])
async def test_the_teacher_sees_every_key_of_the_screen(lessons, size):
    app = ServedApp(lessons, Classroom(), teacher=True)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        await pilot.press("enter", "n")
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, ClassScreen)
        keys = working_keys(screen)
        assert TEACHER_KEYS | {"o", "q", "R"} <= set(keys)
        in_footer = {key.key for key in footer_keys(app)}
        shown = {key for key, (_action, show) in keys.items() if show}
        assert shown <= in_footer and TEACHER_KEYS | {"o"} <= in_footer
        for key in footer_keys(app):  # each whole on the screen, none cut off
            region = key.region
            assert region.x >= 0 and region.right <= size[0] and region.bottom <= size[1], key.key
        named = help_keys(screen)
        for key in keys:
            assert NAMES.get(key, key).replace("_", " ") in named or key in (
                "right", "left", "space"), key  # (n / right / space: one line)
        help_text = dict(screen.help_rows())
        assert help_text["q"].startswith("end the class")
        assert "f" not in named and "a" not in named  # a student's keys


async def test_a_student_sees_none_of_the_teachers_keys(lessons):
    room = Classroom()
    teacher = ServedApp(lessons, room, teacher=True)
    async with teacher.run_test(size=(120, 40)) as lead:
        await lead.pause(0.3)
        await lead.press("enter")
        await lead.pause(0.3)
        student = ServedApp(lessons, room)
        async with student.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.5)
            await pilot.press("n")  # (the student's own move: following paused, f works)
            await pilot.pause(0.3)
            screen = student.screen
            assert isinstance(screen, ClassScreen)
            keys = working_keys(screen)
            assert not TEACHER_KEYS & set(keys) and {"o", "f", "a"} <= set(keys)
            in_footer = {key.key for key in footer_keys(student)}
            assert "o" in in_footer and not TEACHER_KEYS & in_footer
            assert len({key.region.y for key in footer_keys(student)}) == 1  # one row
            named = help_keys(screen)
            assert {"f", "a", "o"} <= named and not {"R", "*", "!", "Q", "V"} & named


async def test_self_study_footer_and_help_list_its_keys():
    app = MgtuiApp(SCENARIOS / "chain.py", step=3)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        in_footer = {key.key for key in footer_keys(app)}
        keys = working_keys(screen)
        assert "o" in in_footer
        assert {key for key, (_a, show) in keys.items() if show} <= in_footer
        assert len({key.region.y for key in footer_keys(app)}) == 1  # one row at 80×24
        named = help_keys(screen)
        assert "a" not in named  # quiz mode's key, and this is no quiz
        for key in keys:
            assert NAMES.get(key, key).replace("_", " ") in named or key in (
                "right", "left", "space"), key
