"""The class server's messages between processes (mgtui/serve/messages.py): each goes
over the wire and comes back equal; what no mgtui sends is refused with a line in the
log, never a traceback; the classroom's news and the quiz's come through unchanged."""

from __future__ import annotations

import json
import logging
import socket

import pytest

from mgtui.serve import messages as m
from mgtui.serve.workers import receive, send
from mgtui.session.follow import Classroom, TeacherView

LOOK = TeacherView(step=3, node=0, tab="source", lesson="chain", graph=True, flip="LR", pan=(4, 2), notes=False, pointer=7,
            line="look at the grad of b")

EVERY = [
    m.QuizOn(True), m.Answer("chain", "ada", 3, -0.5, "Ada"), m.Reveal("chain", 3),
    m.QuizState(True, (m.Answer("chain", "ada", 3, 1.0, "Ada"),), (m.Reveal("chain", 2),)),
    m.Lead("rivera"), m.Lead(""), m.LeadElsewhere("okafor"), m.PositionMessage(LOOK),
    m.End(), m.Connect("10.0.0.7:5512"),
    m.Elsewhere(4, {"logins": {"ada": 1}, "addresses": {"10.0.0.7": 2}}),
    m.Others([["ada", False, True, 3, "chain", "ada", False]]), m.Join("ssh -p 2222 host"),
    m.Evict("10.0.0.9"), m.Retire(),
    m.LessonReady("mlp", "/tmp/mgtui-lessons-x/000.mgtrace", "lessons/mlp.py", "A tiny MLP",
                  "", 7, ["chain", "mlp"]), m.Ready(4242),
    m.Count(5, 3, {"10.0.0.7": 1}, 7, {"logins": {"ada": 1}, "addresses": {}}),
    m.Roster([["bob", False, True, 2, "chain", "bob", False]]), m.Retiring(), m.Fork(2),
]


def test_every_kind_is_tested_here():
    assert {type(message) for message in EVERY} == set(m.KINDS.values())


@pytest.mark.parametrize("message", EVERY, ids=lambda message: message.KIND)
def test_a_message_comes_back_as_it_went(message):
    data = m.encode(message)
    assert json.loads(data)["kind"] == message.KIND
    assert m.decode(data) == message


def test_a_positions_fields_alone_read_as_a_teacher_view_showing_nothing():
    fields = {"step": 2, "node": 0, "tab": "source", "lesson": "chain"}
    back = m.decode(json.dumps({"kind": "position", "position": fields}).encode())
    assert back == m.PositionMessage(TeacherView(step=2, node=0, lesson="chain"))
    assert m.decode(m.encode(back)) == back


@pytest.mark.parametrize("bad", [{"flip": "XY"}, {"pan": [1]}, {"pan": [-1, 0]},
                                 {"pointer": -2}, {"graph": "yes"}, {"line": 5}, {"step": -1},
                                 {"tab": "nowhere"}])
def test_a_teacher_view_with_a_malformed_field_is_refused(bad, caplog):
    wire = json.loads(m.encode(m.PositionMessage(LOOK)))
    wire["position"].update(bad)
    with caplog.at_level(logging.WARNING, logger="mgtui.serve"):
        assert m.decode(json.dumps(wire).encode()) == m.Nothing()
    assert "position" in caplog.text


def test_a_teacher_views_line_is_cut_to_its_length():
    wire = json.loads(m.encode(m.PositionMessage(LOOK)))
    wire["position"]["line"] = "x" * 5000
    assert len(m.decode(json.dumps(wire).encode()).position.line) == 200


@pytest.mark.parametrize("data, why", [
    (b"\xff", "can't decode"),
    (b"not json", "Expecting value"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"count": [1, 2]}', "unknown kind"),  # (the old, untyped form)
    (b'{"kind": "shout", "text": "hi"}', "unknown kind of message: 'shout'"),
    (b'{"kind": "ready"}', "ready without its pid"),
    (b'{"kind": "ready", "pid": "42"}', "ready's pid: not a whole number"),
    (b'{"kind": "ready", "pid": true}', "ready's pid: not a whole number"),
    (b'{"kind": "quiz_on", "on": 1}', "quiz_on's on: not a bool"),
    (b'{"kind": "answer", "lesson": "chain", "student": "ada", "step": 3, "value": "x"}',
     "answer's value: not a number"),
    (b'{"kind": "position", "position": {"lesson": "chain", "step": "three"}}', "position's"),
    (b'{"kind": "position", "position": [1]}', "position's position: not a dict"),
    (b'{"kind": "lesson", "name": "mlp", "file": 7, "path": "mlp.py"}',
     "lesson's file: not a str"),
    (b'{"kind": "quiz_state", "on": true, "answers": [["chain", "ada", 3]]}',
     "quiz_state's answers: a row that is not 5 values"),
    (b'{"kind": "quiz_state", "on": true, "reveals": [["chain", "two"]]}',
     "quiz_state's reveals: not a whole number"),
])
def test_what_mgtui_never_sends_is_refused_with_a_line_in_the_log(data, why, caplog):
    with caplog.at_level(logging.WARNING, logger="mgtui.serve"):
        assert m.decode(data, "worker 3: ") == m.Nothing()
    assert len(caplog.records) == 1
    line = caplog.records[0].getMessage()
    assert line.startswith("worker 3: a message it cannot read, ignored: ") and why in line
    assert caplog.records[0].exc_info is None  # (a line, no traceback)


def test_counts_from_another_process_keep_only_what_they_can_be():
    data = json.dumps({"kind": "count", "connections": 1, "sessions": 1, "taken": 0,
                       "logging_in": {"a": 1, "b": "many"},
                       "seats": {"logins": {"ada": 1, "bob": None}, "addresses": [1],
                                 "other": {}}}).encode()
    back = m.decode(data)
    assert back.logging_in == {"a": 1}
    assert back.seats == {"logins": {"ada": 1}}


def test_a_packet_on_the_link_is_read_or_refused_and_the_link_goes_on(caplog):
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        assert send(ours, m.Ready(7))
        assert receive(theirs) == (m.Ready(7), [])
        ours.send(b'{"kind": "ready", "pid": "seven"}')
        with caplog.at_level(logging.WARNING, logger="mgtui.serve"):
            assert receive(theirs, "the front: ") == (m.Nothing(), [])
        assert "the front: a message it cannot read" in caplog.text
        theirs.setblocking(False)
        assert receive(theirs) == (m.Nothing(), [])  # (nothing to read yet)
        assert send(ours, m.End())
        assert receive(theirs)[0] == m.End()
        ours.close()
        assert receive(theirs) == (None, [])  # (the other side has gone)


def test_the_classroom_news_goes_across_as_it_is():
    said: list = []
    here = Classroom()
    here.relay = said.append
    here.start_quiz(True)
    here.led_elsewhere("")
    assert said == [m.QuizOn(True)]  # (the session's own typed news: no words to translate)
    here.enter("rivera", teacher=True)
    assert said[-1] == m.Lead("rivera")
    for news in (m.QuizOn(False), m.Answer("chain", "ada", 3, 1.5, "Ada"), m.Reveal("chain", 2),
                 m.Lead("")):
        assert m.decode(m.encode(news)) == news
    state = m.QuizState(True, (m.Answer("chain", "ada", 3, 1.5, "Ada"),), (m.Reveal("chain", 2),))
    assert m.decode(m.encode(state)) == state


async def test_the_front_relays_a_workers_position_to_the_others_and_not_back():
    """The front publishes a worker's position to its own sessions; its own teacher's
    positions go to every worker, but that one goes to the other workers only."""
    from mgtui.serve.front import Front, Worker

    links = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(3)]
    classroom = Classroom()
    front = Front(links[2][0], (links[2][1], 0), 2, classroom)
    for number in range(2):
        links[number][0].setblocking(False)
        links[number][1].setblocking(False)
        front.workers.append(Worker(number, links[number][0], ready=True))
    classroom.subscribe(front._from_here)
    heard_here: list = []
    classroom.subscribe(heard_here.append)

    def sent_to(number: int) -> list:
        out = []
        while (message := receive(links[number][1])[0]) not in (None, m.Nothing()):
            out.append(message)
        return out

    try:
        assert send(links[0][1], m.PositionMessage(LOOK))
        front._heard(front.workers[0])
        assert heard_here == [LOOK]
        assert sent_to(1) == [m.PositionMessage(LOOK)]
        assert sent_to(0) == []  # (not back to where it came from)
        own = TeacherView(step=4, node=0, lesson="chain")
        classroom.publish(own)  # the front's own teacher (`--teach`) moves
        assert sent_to(0) == sent_to(1) == [m.PositionMessage(own)]
    finally:
        for pair in links:
            for end in pair:
                end.close()
