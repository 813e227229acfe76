"""A class's lesson picker lists the lessons recorded after it opened (issue 35: an
open picker showed a lesson recorded later only when it was opened again)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList

from mgtui.run.lessons import record_lesson
from mgtui.serve.app import ServedApp
from mgtui.serve.later import shelve
from mgtui.session.follow import Classroom
from mgtui.tui.widgets.dialogs import PickerScreen

ROOT = Path(__file__).resolve().parent.parent.parent


def listed(app) -> list[str]:
    picker = app.screen
    assert isinstance(picker, PickerScreen)
    options = picker.query_one(OptionList)
    return [options.get_option_at_index(i).id for i in range(options.option_count)]


async def test_an_open_picker_lists_a_lesson_recorded_since_it_opened():
    chain = record_lesson(ROOT / "scenarios" / "chain.py", "chain.py")
    neuron = record_lesson(ROOT / "scenarios" / "neuron.py", "neuron.py")
    lessons = {"chain.py": chain}
    app = ServedApp(lessons, Classroom())
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.action_pick()
        await pilot.pause()
        assert listed(app) == [str(chain.path)]
        shelve(lessons, neuron, ["chain.py", "neuron.py"], app.classroom)
        await pilot.pause()
        await pilot.pause()
        assert listed(app) == [str(chain.path), str(neuron.path)]  # open, and it has it
        assert "neuron.py" in app.classroom.traces
        await pilot.press("down", "enter")  # and it opens
        await pilot.pause()
        assert app.lesson == "neuron.py" and app.debugger.trace is neuron.trace
