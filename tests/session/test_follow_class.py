"""The class's shared state, headless (mgtui/session/follow.py): the roster and its
counts, one teacher leading at a time, the class's end, and the `TeacherView` that
carries where the teacher looks (its wire form is tests/serve/test_serve_messages.py's)."""

from __future__ import annotations

from mgtui.session import Position
from mgtui.session.follow import (Answer, Classroom, Follower, Lead, QuizState, Reveal,
                                  TeacherView, same_place)


def test_the_roster_counts_students_and_one_teacher_leads():
    room = Classroom()
    roster_news, other_news = [], []
    room.watch(lambda: roster_news.append(1))
    room.watch(lambda: other_news.append(1), roster=False)
    first = room.enter("Ms Rivera", teacher=True)
    assert room.lead == first and len(other_news) == 1  # a lead: everyone hears
    ada, bob = room.enter("ada"), room.enter("bob")
    second = room.enter("Mr Okafor", teacher=True)
    assert room.lead == first  # a second teacher does not lead by joining
    assert str(room.counts()) == "3 connected · 3 following · 0 paused"
    news = len(other_news)
    room.update(bob, following=False, step=4)
    assert str(room.counts()) == "3 connected · 2 following · 1 paused"
    assert len(other_news) == news  # a student's step wakes only the teachers' consoles
    room.update(bob, following=False, step=4)
    assert len(roster_news) == 5  # (4 joined, 1 paused) and no change: nobody told
    room.take_lead(second)
    assert room.leader().name == "Mr Okafor" and len(other_news) == news + 1
    assert [m.name for m in room.roster()] == ["Ms Rivera", "ada", "bob"]
    room.leave(second)
    assert room.lead is None
    room.leave(ada)
    assert room.counts().connected == 2
    room.end()
    assert room.ended and len(other_news) == news + 3


def test_a_teacher_view_is_where_the_teacher_is_whatever_is_shown():
    look = TeacherView(9, 4, "notes", "chain.py", graph=True, flip="TB", pan=(12, 3),
                       notes=True, pointer=6, line="what is dL/dd?")
    assert same_place(Position(9, 4, "notes", "chain.py"), look)
    room = Classroom()
    student = Follower(room)
    room.publish(look)
    assert not student.moved(Position(9, 4, "notes", "chain.py"))  # where the teacher is
    assert student.following
    heard = []
    room.subscribe(heard.append)
    room.publish(TeacherView.of(look, graph=False))  # only the view changed: still news
    assert heard and heard[-1].graph is False


def test_the_roster_of_other_processes_counts_too():
    worker, front = Classroom(), Classroom()
    worker.enter("Ms Rivera", teacher=True)  # leads there: not a student anywhere
    ada = worker.enter("ada")
    worker.update(ada, following=False, step=3)
    front.set_others(worker.here())
    assert str(front.counts()) == "1 connected · 0 following · 1 paused"
    assert front.roster()[0].name == "ada" and front.roster()[0].step == 3
    worker.leave(ada)  # dropped there: gone on the front's roster too (issue 35)
    front.set_others(worker.here())
    assert str(front.counts()) == "0 connected · 0 following · 0 paused · 1 gone"
    assert front.roster()[0].name == "ada" and front.roster()[0].gone
    worker.enter("ada")  # back: one row
    front.set_others(worker.here())
    assert str(front.counts()) == "1 connected · 1 following · 0 paused"
    front.set_others([["x" * 10, True, True, "not a step", ""], "junk", 5])  # (malformed)
    assert front.counts().connected == 0
    assert len(worker.members[worker.enter("y" * 1000)].name) == 64


def test_two_processes_of_one_class_share_the_quiz_and_the_lead():
    """Two classrooms joined as the front joins its workers' (each one's `relay` told
    to the other by `told_quiz` and `led_elsewhere`): the quiz's answers, reveals and
    its on/off cross; one teacher leads both; news of a lesson not served changes nothing."""
    from pathlib import Path

    from mgtui.run.lessons import record_lesson

    trace = record_lesson(Path(__file__).resolve().parent.parent.parent / "scenarios" / "chain.py",
                          "chain.py").trace
    a, b = Classroom(), Classroom()
    for room in (a, b):
        room.traces = {"chain.py": trace}

    def link(here: Classroom, there: Classroom):
        def relay(news) -> None:
            if isinstance(news, Lead):
                there.led_elsewhere(news.name)
            else:
                there.told_quiz(news)
        here.relay = relay

    link(a, b)
    link(b, a)
    rivera = a.enter("rivera", teacher=True)
    assert a.lead == rivera and b.lead_elsewhere == "rivera"
    okafor = b.enter("okafor", teacher=True)
    assert b.lead is None and b.leader().name == "rivera"  # asked, not leading
    a.start_quiz(True)
    assert b.quiz_on
    assert b.answer("chain.py", trace, "ada #0-2", 9, -2.0) is True  # dL/dd = f = -2
    assert a.answer("chain.py", trace, "bob #1-3", 9, 4.0) is False
    assert a.quiz("chain.py", trace).share_right(9) == (1, 2)
    assert b.quiz("chain.py", trace).share_right(9) == (1, 2)
    a.reveal("chain.py", trace, 9)
    assert 9 in b.quiz("chain.py", trace).revealed
    late = Classroom()
    late.traces = {"chain.py": trace}
    late.told_quiz(a.quiz_state())  # a process that starts late
    assert late.quiz_on and late.quiz("chain.py", trace).share_right(9) == (1, 2)
    assert 9 in late.quiz("chain.py", trace).revealed
    for elsewhere in (Answer("nope.py", "x", 9, 1.0), Reveal("nope.py", 9),
                      QuizState(True, (Answer("nope.py", "x", 9, 1.0),))):
        late.told_quiz(elsewhere)  # (a lesson this process does not serve)
    assert late.quiz_on and late.quiz("chain.py", trace).share_right(9) == (1, 2)
    b.take_lead(okafor)  # okafor takes over: rivera watches
    assert b.lead == okafor and a.lead is None and a.lead_elsewhere == "okafor"
    b.leave(okafor)  # and leaves: nobody leads anywhere until a teacher takes it
    assert a.lead_elsewhere == "" and a.lead is None
