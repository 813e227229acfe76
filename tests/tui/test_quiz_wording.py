"""Quiz mode's wording (issue 35 point 6): a compound label is bracketed in the prompt as
the step text brackets it, the answer dialog shows the whole question at 80×24, shares
are rounded to the nearest per cent, and a `+=` question says what the hidden grad was
before the step."""

from __future__ import annotations

import re

import pytest

from mgtui.run.lessons import record_lesson
from mgtui.session import Session
from mgtui.session.quiz import Quiz, question_at
from mgtui.tui.app import MgtuiApp
from mgtui.tui.widgets.roster import SayScreen

from tests.conftest import SCENARIOS
from tests.tui.test_app import loaded

pytestmark = pytest.mark.usefixtures("clean_env", "no_user_config")


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture(scope="module")
def neuron():
    return record_lesson(SCENARIOS / "neuron.py", "neuron.py").trace


def question_of(trace, label: str):
    for step in range(1, len(trace) + 1):
        q = question_at(trace, step)
        if q is not None and q.label == label:
            return q
    raise AssertionError(f"no question about {label}")


def test_a_compound_label_is_bracketed_as_the_step_text_brackets_it(neuron):
    q = question_of(neuron, "x1*w1 + x2*w2")
    assert "predict (x1*w1 + x2*w2).grad after this step" in q.prompt
    assert q.what == "(x1*w1 + x2*w2).grad"
    # the step that asks it says the same in its working: `n._backward` routes n.grad
    working = Session(neuron).goto(q.step).detail.explanation
    text = " ".join(c.formula for c in working.contributions)
    assert "(x1*w1 + x2*w2).grad" in text, text
    assert question_of(neuron, "n").what == "n.grad"  # a plain name stays bare


def test_shares_are_rounded_to_the_nearest_per_cent():
    chain = record_lesson(SCENARIOS / "chain.py", "chain.py").trace
    quiz = Quiz(chain)
    quiz.answer("ada", 13, 6.0)  # dL/da = 6: right
    quiz.answer("bob", 13, 6.01)  # right
    quiz.answer("cy", 13, -6.0)  # wrong
    assert quiz.histogram_line(13).endswith("2/3 right (67%)")
    session = Session(chain, quiz=True)
    for step, value in ((9, -2.0), (11, -2.0), (13, 0.0)):
        session.goto(step)
        session.answer(value)
    assert "quiz score: 2 of 3 right (67%)" in session.end().quiz


def test_a_plus_equals_question_says_the_grad_it_adds_to(write_scenario):
    # a is used twice: d = a + c, c = a * b. Backward, d._backward gives a.grad 1, then
    # c._backward adds b * c.grad = 2 * 1: a.grad = 1 + 2 = 3 (dd/da = 1 + b).
    path = write_scenario("twice", '''
        from engine import Value
        a = Value(3.0, label='a')
        b = Value(2.0, label='b')
        c = a * b; c.label = 'c'
        d = a + c; d.label = 'd'
        d.backward()
    ''')
    trace = record_lesson(path, "twice.py").trace
    asked = [question_at(trace, s) for s in range(1, len(trace) + 1)]
    about_a = [q for q in asked if q is not None and q.label == "a"]
    first, second = sorted(about_a, key=lambda q: q.step)
    assert (first.answer, first.before) == (1.0, 0.0) and "before" not in first.prompt
    assert (second.answer, second.before) == (3.0, 1.0)
    assert "(it is 1.0 before it, and += adds to that; right within ± 0.03)" in second.prompt, second.prompt


def screen_rows(app) -> list[str]:
    """The screen as text, row by row."""
    from rich.console import Console
    import io

    console = Console(width=app.size.width, file=io.StringIO(), record=True,
                      color_system=None, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text().splitlines()


async def test_the_answer_dialog_shows_the_whole_question_at_80x24():
    app = MgtuiApp(SCENARIOS / "neuron.py")
    app.debugger.quiz = True
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        q = question_of(screen.trace, "x1*w1 + x2*w2")
        screen.goto(q.step)
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, SayScreen)
        box = app.screen.query_one("#say").region
        rows = screen_rows(app)[box.y:box.bottom]
        inside = " ".join(row[box.x:box.right].strip("│╭╮╰╯─ ") for row in rows)
        inside = re.sub(r"\s+", " ", inside)
        assert f"Your prediction: {q.prompt}" in inside, inside
        assert "(right within ± 0.01)" in inside
