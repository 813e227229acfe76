"""Look where I look (issue 23, item 2) over real SSH: students follow the teacher's
Graph pane (open, turned, panned) and the notes full screen (`N`), see the node the
teacher points at (`*`) and the line the teacher sends to the class (`!`) until the
next step, and a paused student's banner says where the teacher is."""

from __future__ import annotations

import pytest

asyncssh = pytest.importorskip("asyncssh")
pytest.importorskip("pyte")

from sshclient import ScreenClient  # noqa: E402
from tests.serve.test_serve import PASSWORD, at_step, keys, lessons, server  # noqa: E402,F401
from mgtui.session.follow import TeacherView  # noqa: E402
from mgtui.tui.widgets.graph import GraphPane  # noqa: E402

TABLE = "id label op"  # the node table's heading: not on screen while the Graph pane is


async def join(server, **options) -> ScreenClient:
    client = await ScreenClient.connect(server.port, size=(120, 34), **options)
    server.clients.append(client)
    assert await client.wait_for(lambda t: "step " in t or "pick a scenario" in t, 15)
    if "pick a scenario" in client.text():
        client.send("\r")
    assert await client.wait_for(lambda t: "step " in t and "pick a" not in t, 15), client.text()
    return client


def pane_of(server, user: str) -> GraphPane:
    session = next(s for s in server.klass.sessions if s.user == user)
    return session.app.debugger.query_one(GraphPane)


async def test_students_follow_the_graph_pane_and_the_notes(server, keys):
    teacher = await join(server, key=keys["teacher"], user="teacher")
    students = [await join(server, password=PASSWORD, user=f"s{i}") for i in range(2)]
    teacher.send("nnnn")
    for student in students:
        assert await at_step(student, 4) and TABLE in student.text()
    teacher.send("m")  # the Graph pane, in place of the node table
    assert await teacher.wait_for(lambda t: TABLE not in t), teacher.text()
    for student in students:
        assert await student.wait_for(lambda t: TABLE not in t), student.text()
        assert await student.wait_for(lambda t: "(*)─" in t and "(+)─" in t), student.text()
    turned = "TB" if pane_of(server, "teacher").picture.orientation == "LR" else "LR"
    teacher.send("T")  # the pane has the focus: T turns it
    assert await teacher.wait_for(lambda _: pane_of(server, "teacher").orientation == turned)
    for i, student in enumerate(students):
        assert await student.wait_for(
            lambda _: pane_of(server, f"s{i}").orientation == turned), student.text()
    teacher.send("n")  # a step with the pane open: still open for everyone
    for student in students:
        assert await at_step(student, 5) and TABLE not in student.text()
    teacher.send("m")
    for student in students:
        assert await student.wait_for(TABLE), student.text()
    teacher.send("N")  # the notes, full screen
    assert await teacher.wait_for("Notes · "), teacher.text()
    for student in students:
        assert await student.wait_for("Notes · The chain rule"), student.text()
    teacher.send("\x1b")
    for student in students:
        assert await student.wait_for(lambda t: "Notes · " not in t and TABLE in t), student.text()
    assert isinstance(server.klass.classroom.position, TeacherView)


async def test_the_pointer_and_the_line_reach_every_student_until_the_next_step(server, keys):
    teacher = await join(server, key=keys["teacher"], user="teacher")
    student = await join(server, password=PASSWORD, user="stu")
    paused = await join(server, password=PASSWORD, user="away")
    teacher.send("nnnnnnn")  # step 7: L = d * f made
    assert await at_step(student, 7) and await at_step(paused, 7)
    paused.send("p")
    assert await paused.wait_for("following paused — press f to rejoin · teacher at step 7")
    teacher.send("*")  # the selected node: L
    assert await student.wait_for("☞ look at L (node 6)"), student.text()
    assert await teacher.wait_for("pointing at L"), teacher.text()
    teacher.send("!")
    assert await teacher.wait_for("One line to the class"), teacher.text()
    teacher.send("what is dL/dd? [b]not markup[/b]\r")
    for client in (student, paused):  # a paused student hears it too
        assert await client.wait_for("teacher: what is dL/dd? [b]not markup[/b]"), client.text()
    assert "☞ look at L" in student.text()
    teacher.send("n")  # the next step: the line and the pointer go
    assert await at_step(student, 8)
    assert await student.wait_for(lambda t: "teacher: what" not in t and "☞" not in t)
    assert await paused.wait_for("teacher at step 8"), paused.text()
    assert "teacher: what" not in paused.text()
    paused.send("f")
    assert await at_step(paused, 8)
    assert await paused.wait_for(lambda t: "following paused" not in t)
