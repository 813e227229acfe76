"""A class's edges over real SSH (issue 35): the teacher leaving and coming back, a
student dropping out and back in. Real asyncssh clients on an in-process server, with
grouping on (students who show the same screen are drawn once: a notice each one must
see wakes them)."""

from __future__ import annotations

import asyncio
import re

import pytest

asyncssh = pytest.importorskip("asyncssh")
pytest.importorskip("pyte")

from sshclient import ScreenClient  # noqa: E402
from tests.serve.test_serve import PASSWORD, at_step, keys, lessons  # noqa: E402,F401
from tests.serve.test_serve_unison import TOAST, asleep, connect, drawn, settled, start  # noqa: E402

LEFT = "The teacher has left the class"
BACK = "A teacher leads the class now"


def roster_line(client: ScreenClient, name: str) -> str:
    """The roster's line of `name` (its frame's borders stripped), or ""."""
    for line in client.text().splitlines():
        line = line.strip().strip("│").strip()
        if re.match(rf"{re.escape(name)}\s", line):
            return line
    return ""


async def test_the_teacher_leaving_and_a_student_dropping_are_seen(lessons, keys, clean_env,
                                                                  monkeypatch):
    srv = await start(lessons, keys, monkeypatch, unison=True)
    clients: list[ScreenClient] = []
    try:
        teacher = await connect(srv, clients, key=keys["teacher"], user="teacher",
                                size=(120, 40))
        ada, bob, cy, dan = [await connect(srv, clients, password=PASSWORD, user=user)
                             for user in ("ada", "bob", "cy", "dan")]
        for student in (ada, bob, cy, dan):
            assert await student.wait_for(lambda t: TOAST not in t, 30), student.text()
        for step in (1, 2, 3):
            teacher.send("n")
            await settled([ada, bob, cy, dan], step)
            await drawn(srv)
        cy.send("p")  # paused, told where the teacher is
        assert await cy.wait_for("teacher at step 3"), cy.text()
        teacher.send("n")
        await settled([ada, bob, dan], 4)
        await drawn(srv)

        await bob.close()  # bob drops: on the roster as gone, not vanished
        clients.remove(bob)
        assert await teacher.wait_for("3 connected · 2 following · 1 paused · 1 gone"), \
            teacher.text()
        teacher.send("R")
        assert await teacher.wait_for(lambda _: "gone" in roster_line(teacher, "bob")), \
            teacher.text()
        assert "paused" in roster_line(teacher, "cy"), teacher.text()
        teacher.send("\x1b")
        assert await teacher.wait_for(lambda t: "The class:" not in t), teacher.text()

        teacher.send("n")
        await settled([ada, dan], 5)
        await drawn(srv)
        assert len(asleep(srv)) == 1, "ada and dan: one draws for both"
        teacher.send("q")  # the teacher leaves; the class goes on
        assert await teacher.wait_for("End the class?"), teacher.text()
        teacher.send("l")
        await asyncio.wait_for(teacher.closed.wait(), 20)
        clients.remove(teacher)
        for student in (ada, cy, dan):  # (one of ada and dan sleeps: its group draws it)
            assert await student.wait_for(LEFT, 30), student.text()
        assert await cy.wait_for(lambda t: "no teacher leads now" in t), cy.text()
        assert "teacher at step" not in cy.text()

        again = await connect(srv, clients, key=keys["teacher"], user="teacher",
                              size=(120, 40))
        assert await at_step(again, 5), again.text()
        for student in (ada, cy, dan):
            assert await student.wait_for(BACK, 30), student.text()
        assert await cy.wait_for("teacher at step 5"), cy.text()
        bob = await connect(srv, clients, password=PASSWORD, user="bob")  # back: one row
        assert await again.wait_for("4 connected · 3 following · 1 paused · R roster"), \
            again.text()  # (none gone)
        again.send("R")
        assert await again.wait_for(lambda _: "following" in roster_line(again, "bob")), \
            again.text()
        assert sum(line.strip().strip("│").strip().startswith("bob ")
                   for line in again.text().splitlines()) == 1, again.text()
    finally:
        for client in clients:
            await client.close()
        await srv.close()
