"""Quiz mode's rules, headless (mgtui/session/quiz.py): the questions of the chain
lesson's backward steps (the lecture's gradients: dL/dd = f = -2, dL/de = -2,
dL/da = b * dL/de = 6), answers right within the tolerance, reveal, the histogram, the
share right and the CSV of scores."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from mgtui.run.lessons import record_lesson
from mgtui.session.quiz import Quiz, parse_number, question_at

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def chain():
    return record_lesson(ROOT / "scenarios" / "chain.py", "chain.py").trace


def test_each_backward_step_asks_for_the_grad_it_accumulates(chain):
    asked = {s: question_at(chain, s) for s in range(len(chain) + 1)}
    questions = {s: q for s, q in asked.items() if q is not None}
    assert sorted(questions) == [9, 11, 13]  # L's, d's and e's _backward
    d, e, a = questions[9], questions[11], questions[13]
    assert (d.label, d.answer) == ("d", -2.0)  # dL/dd = f
    assert {chain.label(n) for n in d.hidden} == {"d", "f"}  # dL/df = d, hidden too
    assert (e.label, e.answer) == ("e", -2.0)  # the + passes dL/dd on
    assert (a.label, a.answer) == ("a", 6.0)  # b * dL/de = -3 * -2
    assert a.tolerance == pytest.approx(0.06) and "± 0.06" in a.prompt
    assert d.tolerance == pytest.approx(0.02)
    assert question_at(chain, 0) is None and question_at(chain, 1) is None  # forward


def test_predict_then_see_reveal_histogram_and_csv(chain):
    quiz = Quiz(chain)
    assert not quiz.shows("ada", 13) and quiz.shows("ada", 12)  # only backward steps hide
    assert quiz.answer("ada", 13, 6.05) is True  # within ± 0.06
    assert quiz.answer("ada", 13, -4) is True  # the first answer counts
    assert quiz.shows("ada", 13) and not quiz.shows("bob", 13)
    assert quiz.answer("bob", 13, -6.0) is False  # the sign wrong
    assert quiz.answer("=cmd()", 13, 2.0) is False
    assert quiz.answer("bob", 9, -2.0) is True
    assert quiz.answer("bob", 12, 1.0) is None  # no question there: nothing kept
    assert quiz.share_right(13) == (1, 3)
    hist = quiz.histogram(13, bins=4)
    assert [n for *_range, n in hist] == [1, 0, 1, 1] and hist[0][0] == -6.0
    assert hist[-1][1] == pytest.approx(6.05)
    assert "1/3 right (33%)" in quiz.histogram_line(13)
    assert quiz.histogram_line(11) == "no answers yet"
    quiz.reveal(11)
    assert quiz.shows("cy", 11) and not quiz.shows("cy", 9)
    rows = list(csv.reader(io.StringIO(quiz.to_csv())))
    assert rows[0] == ["student", "right", "answered", "step 9", "step 13"]
    assert rows[1:] == [["'=cmd()", "0", "1", "", "2.0"], ["ada", "1", "1", "", "6.05"],
                        ["bob", "1", "2", "-2.0", "-6.0"]]


def test_a_prediction_is_a_number():
    assert parse_number(" -0.5 ") == -0.5 and parse_number("3/4") == 0.75
    assert parse_number("−2") == -2.0 and parse_number("1e-3") == 0.001
    for text in ("", "abc", "1/0", "nan", "inf", "2 3"):
        assert parse_number(text) is None


def test_an_array_grad_is_asked_one_element_the_one_the_step_changed_most():
    """The tensor neuron (x (1, 2), w (2, 1)): the lecture's grads are x1 -1.5, x2 0.5,
    n 0.5. An array grad is asked one element, named by its index: before, the answer
    was the nan standing in the scalar column, and no prediction could be right."""
    pytest.importorskip("numpy")
    trace = record_lesson(ROOT / "scenarios" / "tensor_neuron.py", "tensor_neuron.py").trace
    asked = [q for s in range(len(trace) + 1) if (q := question_at(trace, s)) is not None]
    by_node = {q.label: q for q in asked}
    x = by_node["x"]  # the matmul's _backward: x.grad = o.grad · wᵀ = [[-1.5, 0.5]]
    assert x.index == (0, 0) and x.answer == pytest.approx(-1.5)
    assert x.what == "x.grad[0, 0]" and "predict x.grad[0, 0]" in x.prompt
    assert {trace.label(n) for n in x.hidden} == {"x", "w"}
    assert by_node["n"].answer == pytest.approx(0.5)  # dtanh: 1 - o² = 0.5
    quiz = Quiz(trace)
    assert quiz.answer("ada", x.step, -1.5) is True
    assert quiz.answer("bob", x.step, 0.5) is False  # x2's grad, not the one asked
