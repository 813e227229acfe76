"""The headless parts of a class: following the teacher, notes tied to steps, lessons
as directories."""

from __future__ import annotations

import json
from pathlib import Path

from mgtui.session.follow import Classroom, Follower
from mgtui.run.lessons import lessons_in
from mgtui.session.notes import notes_in
from mgtui.session import Position, Session

ROOT = Path(__file__).resolve().parent.parent.parent


# -- following ------------------------------------------------------------------------------

def test_a_student_follows_until_their_own_move_then_rejoins_where_the_teacher_is():
    room = Classroom()
    student = Follower(room)
    heard = []
    room.subscribe(lambda p: heard.append(student.heard(p)))
    assert not student.moved(Position(4))  # nobody leads yet: nothing to pause
    assert student.following
    teacher = room.enter("teacher", teacher=True)
    at2 = Position(2, 3, "source", "chain.py")
    room.publish(at2)
    assert heard == [at2] and student.following and student.status == ""
    assert not student.moved(at2)  # being where the teacher is pauses nothing
    assert student.moved(Position(1, 0, "source", "chain.py"))
    assert student.status == "following paused — press f to rejoin · teacher at step 2"
    room.leave(teacher)  # (issue 35: not "teacher at step 2" while nobody leads)
    assert student.status == "following paused — press f to rejoin · no teacher leads now"
    room.enter("teacher", teacher=True)
    room.publish(Position(5, 4, "notes", "chain.py"))
    assert heard[-1] is None  # paused: nowhere to go
    assert student.rejoin() == Position(5, 4, "notes", "chain.py")
    assert student.following


def test_a_late_joiner_and_a_position_that_travels():
    room = Classroom()
    room.publish(Position(7, None, "output", "neuron.py"))
    late = Follower(room)
    assert late.teacher == Position(7, None, "output", "neuron.py")
    wire = json.loads(json.dumps(late.teacher.to_dict()))
    assert Position.from_dict(wire) == late.teacher


def test_publishing_the_same_position_twice_tells_no_one_twice():
    room = Classroom()
    calls = []
    stop = room.subscribe(calls.append)
    room.publish(Position(1))
    room.publish(Position(1))
    stop()
    room.publish(Position(2))
    assert calls == [Position(1)] and room.listeners == 0


# -- notes tied to steps ----------------------------------------------------------------------

def test_notes_are_comments_that_start_with_hash_colon_not_strings():
    source = 'x = 1  #: one\ny = "#: not a note"\n# plain comment\nz = 3  #:   three  \n'
    assert notes_in(source) == {1: "one", 4: "three"}
    # source that does not tokenize to the end keeps the notes before the fault
    assert notes_in("f(1,\n  2  #: still read\n") == {2: "still read"}
    assert notes_in("a = 1 #: at ten", first_line=10) == {10: "at ten"}


def test_chain_notes_show_on_the_forward_step_and_on_that_nodes_backward_step():
    from mgtui.run.runner import run

    session = Session(run(ROOT / "scenarios" / "chain.py").trace)
    trace = session.trace
    product = "a product: backward, each input gets the other input times e.grad"
    e = trace.find("e")[0]
    made = trace.index.created_at(e) + 1
    assert product in session.goto(made).detail.notes
    assert product in session.goto(session.backward_step(e)).detail.notes
    assert session.goto(1).detail.notes == ()  # `a = Value(2.0)`: no note on its line


def test_the_sessions_on_one_trace_read_its_notes_once(monkeypatch):
    """A class's sessions share their lesson's trace, and its notes: the source is
    tokenized at the first step of the first session, not of each."""
    from mgtui.run.runner import run
    from mgtui.session import step_panes

    reads = []
    monkeypatch.setattr(step_panes, "notes_in",
                        lambda source, first=1: reads.append(first) or notes_in(source, first))
    trace = run(ROOT / "scenarios" / "chain.py").trace
    product = "a product: backward, each input gets the other input times e.grad"
    made = trace.index.created_at(trace.find("e")[0]) + 1
    first, second = Session(trace), Session(trace)
    assert product in first.goto(made).detail.notes
    assert product in second.goto(made).detail.notes
    assert reads == [1]
    other = Session(run(ROOT / "scenarios" / "chain.py").trace)  # another trace: its own
    assert product in other.goto(made).detail.notes and reads == [1, 1]


def test_notes_in_a_class_the_scenario_defines(write_scenario):
    from mgtui.run.runner import run

    path = write_scenario("own", '''
        class V:
            def __init__(self, data, _children=(), _op=''):
                self.data = data; self.grad = 0.0
                self._prev = set(_children); self._op = _op
                self._backward = lambda: None
            def __mul__(self, other):
                out = V(self.data * other.data, (self, other), '*')
                def _backward():
                    self.grad += other.data * out.grad  #: the other factor times out.grad
                    other.grad += self.data * out.grad
                out._backward = _backward
                return out
        a = V(3.0)
        b = V(4.0)
        c = a * b
        c.grad = 1.0  #: the seed
        c._backward()
    ''')
    session = Session(run(path).trace)
    notes = [session.goto(step).detail.notes for step in range(1, session.total + 1)]
    assert ("the seed",) in notes
    assert any("the other factor times out.grad" in n for n in notes)


# -- lessons as directories ---------------------------------------------------------------------

def test_a_lesson_directory_lists_scenarios_notebooks_and_traces_with_titles(tmp_path):
    (tmp_path / "one.py").write_text('"""First lesson\n\nmore"""\nx = 1\n')
    (tmp_path / "two.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": ["x = 1"]},
        {"cell_type": "markdown", "source": ["# Backprop by hand\n", "text"]}]}))
    (tmp_path / "three.json").write_text(json.dumps({"format": "mgtui-trace", "title": "Saved"}))
    (tmp_path / "notes.txt").write_text("not a lesson")
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / ".hidden.py").write_text("")
    found = {f.name: f.title for f in lessons_in(tmp_path)}
    assert found == {"one.py": "First lesson", "two.ipynb": "Backprop by hand",
                     "three.json": "Saved"}



def test_a_binary_trace_is_listed_by_the_title_in_its_header(tmp_path):
    from mgtui.trace import binary as tracefile

    (tmp_path / "saved.mgtrace").write_bytes(
        tracefile.encode_header("x.py", "  Recorded once\nand more", "", "")
        + tracefile.encode_end(None, "", []))
    (tmp_path / "broken.mgtrace").write_bytes(tracefile.encode_head() + b"H\x05")
    (tmp_path / "empty.mgtrace").write_bytes(tracefile.encode_head())
    found = {f.name: f.title for f in lessons_in(tmp_path)}
    assert found == {"saved.mgtrace": "Recorded once", "broken.mgtrace": "", "empty.mgtrace": ""}

async def test_mgtui_on_a_directory_opens_its_picker_and_o_opens_it_again(tmp_path, clean_env):
    from mgtui.tui.app import MgtuiApp

    (tmp_path / "first.py").write_text(
        '"""First lesson"""\nfrom engine import Value\na = Value(1.0)\n')
    (tmp_path / "second.py").write_text('"""Second lesson"""\nx = 1\n')
    app = MgtuiApp(None)
    app.lesson_dir = tmp_path
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        options = app.screen.query_one("#picker-list").options
        assert [o.id for o in options] == [str(tmp_path / "first.py"), str(tmp_path / "second.py")]
        assert [(name, title) for name, _, title in app.screen.scenarios] == [
            ("first.py", "First lesson"), ("second.py", "Second lesson")]
        await pilot.press("enter")
        for _ in range(50):
            await pilot.pause(0.1)
            if app.debugger.trace is not None:
                break
        assert app.debugger.trace is not None and app.debugger.trace.title == "First lesson"
        await pilot.press("o")
        await pilot.pause()
        assert type(app.screen).__name__ == "PickerScreen"
        await pilot.press("escape")  # back to the lesson on screen, not out of the app
        await pilot.pause()
        assert app.screen is app.debugger and app.is_running
