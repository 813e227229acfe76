"""The class's shared state, headless (mgtui/session/follow.py): the roster and its
counts, one teacher leading at a time, the class's end, and the `Look` that carries
where the teacher looks (its round trip, and what it refuses)."""

from __future__ import annotations

import json

import pytest

from mgtui.session import Position
from mgtui.session.follow import Classroom, Follower, Look, same_place


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


def test_a_look_travels_and_is_checked():
    look = Look(9, 4, "notes", "chain.py", graph=True, flip="TB", pan=(12, 3), notes=True,
                pointer=6, line="what is dL/dd?")
    wire = json.loads(json.dumps(look.to_dict()))
    assert Look.from_dict(wire) == look
    assert Look.from_dict(Position(2).to_dict()) == Look(2)  # an older peer's position
    for bad in ({"flip": "XY"}, {"pan": [1]}, {"pan": [-1, 0]}, {"pointer": -2},
                {"graph": "yes"}, {"line": 5}):
        with pytest.raises(ValueError):
            Look.from_dict({**look.to_dict(), **bad})
    assert len(Look.from_dict({**look.to_dict(), "line": "x" * 5000}).line) == 200
    assert same_place(Position(9, 4, "notes", "chain.py"), look)
    room = Classroom()
    student = Follower(room)
    room.publish(look)
    assert not student.moved(Position(9, 4, "notes", "chain.py"))  # where the teacher is
    assert student.following
    heard = []
    room.subscribe(heard.append)
    room.publish(Look.of(look, graph=False))  # only the look changed: still news
    assert heard and heard[-1].graph is False


def test_the_roster_of_other_processes_counts_too():
    worker, front = Classroom(), Classroom()
    worker.enter("Ms Rivera", teacher=True)  # leads there: not a student anywhere
    ada = worker.enter("ada")
    worker.update(ada, following=False, step=3)
    front.set_others(worker.here())
    assert str(front.counts()) == "1 connected · 0 following · 1 paused"
    assert front.roster()[0].name == "ada" and front.roster()[0].step == 3
    front.set_others([["x" * 10, True, True, "not a step", ""], "junk", 5])  # (malformed)
    assert front.counts().connected == 0
    assert len(worker.members[worker.enter("y" * 1000)].name) == 64
