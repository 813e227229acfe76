"""A class spread over two worker processes (`mgtui serve --workers 2`, run as a user
runs it) is still one class: quiz mode, the answers, the teacher's histogram, a
reveal and the CSV of scores cross the workers (through the front process), and one
teacher leads the whole class (a second, in the other worker, chooses to take over
or to watch). Real asyncssh clients; each connection goes to the worker serving the
fewest, so the first is in worker 0, the second in worker 1, and so on. The chain
lesson's step 9 is L's _backward: dL/dd = f = -2."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import re

import pytest

asyncssh = pytest.importorskip("asyncssh")
pytest.importorskip("pyte")

from sshclient import PASSWORD, ScreenClient, ServerProcess  # noqa: E402
from tests.serve.test_serve_quiz import answer, grad_of  # noqa: E402
from tests.serve.test_serve_workers import at_step  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")

PROMPT = "quiz: predict d.grad after this step (right within ± 0.02)"


async def join(server: ServerProcess, worker: int, **options) -> ScreenClient:
    client = await server.join(size=(120, 34), **options)
    assert await client.wait_for(lambda t: re.search(r"step \d+/", t), 15), client.text()
    await server.logged(rf"\[worker {worker}\] session start {options.get('user', 'class')}@")
    return client


async def test_the_quiz_crosses_the_workers(tmp_path):
    scores = tmp_path / "scores.csv"
    server = ServerProcess(tmp_path, "--workers", "2", "--quiz-scores", str(scores))
    try:
        teacher = await join(server, 0, key=server.teacher_key, user="teacher")
        ada = await join(server, 1, password=PASSWORD, user="ada")
        bob = await join(server, 0, password=PASSWORD, user="bob")
        teacher.send("Q")  # quiz mode on: in worker 1 too
        assert await teacher.wait_for("quiz on (Q stops it)"), teacher.text()
        teacher.send("n" * 9)
        for student in (ada, bob):
            assert await at_step(student, 9)
            assert await student.wait_for(PROMPT), student.text()
            assert grad_of(student, "d") == "?"
        await answer(ada, "-2")  # in worker 1: counted on the teacher's console in 0
        assert await ada.wait_for("right ✓"), ada.text()
        assert await teacher.wait_for("1/1 right (100%)"), teacher.text()
        await answer(bob, "4")
        assert await teacher.wait_for("1/2 right (50%)"), teacher.text()
        carl = await join(server, 1, password=PASSWORD, user="carl")  # late, in worker 1
        assert await at_step(carl, 9) and await carl.wait_for(PROMPT), carl.text()
        teacher.send("V")  # the reveal reaches worker 1
        assert await carl.wait_for(lambda _: grad_of(carl, "d") == "-2.0"), carl.text()
        teacher.send("q")
        assert await teacher.wait_for("End the class?")
        teacher.send("e")
        await server.logged("quiz scores written to", 20)
    finally:
        await server.close()
    rows = list(csv.reader(io.StringIO(scores.read_text())))
    assert rows[0] == ["lesson", "student", "right", "answered"]
    got = {row[1].split(" #")[0]: row[2:] for row in rows[1:]}
    assert got == {"ada": ["1", "1"], "bob": ["0", "1"]}, rows
    assert len({row[1] for row in rows[1:]}) == 2  # (each its own name: numbers repeat)


async def test_one_teacher_leads_the_class_across_the_workers(tmp_path):
    server = ServerProcess(tmp_path, "--workers", "2")
    try:
        first = await join(server, 0, key=server.teacher_key, user="rivera")
        second = await join(server, 1, key=server.teacher_key, user="okafor")
        assert await second.wait_for("rivera is leading this class"), second.text()
        assert "take over" in second.text() and "watch" in second.text()
        second.send("w")  # watch: follows rivera, as a student does
        first.send("nnn")
        assert await at_step(second, 3), second.text()
        student = await join(server, 0, password=PASSWORD, user="ada")
        assert await at_step(student, 3)
        second.send("R")  # (still a teacher: the roster)
        assert await second.wait_for("The class:"), second.text()
        # (each roster is seen gone before that screen's next key: an escape read
        # together with a late key is one alt+key, which a loaded machine can make)
        second.send("\x1b")
        assert await second.wait_for(lambda t: "The class:" not in t), second.text()
        first.send("R")
        assert await first.wait_for(lambda t: "okafor" in t and "watching" in t), first.text()
        first.send("\x1b")
        assert await first.wait_for(lambda t: "The class:" not in t), first.text()
        second.send("q")  # a teacher who watches leaves at once (the class goes on)
        await asyncio.wait_for(second.closed.wait(), 20)  # (a session that stays fails, not hangs)
        again = await join(server, 1, key=server.teacher_key, user="okafor")
        assert await again.wait_for("rivera is leading this class"), again.text()
        again.send("t")  # take over, from the other worker
        assert await first.wait_for("okafor has taken over the class"), first.text()
        again.send("nn")  # the class follows okafor now, rivera too
        assert await at_step(student, 5) and await at_step(first, 5), student.text()
        first.send("p")  # rivera's own move no longer leads
        assert await first.wait_for("following paused"), first.text()
        assert step_of_text(student.text()) == 5 and step_of_text(again.text()) == 5
        again.send("q")
        assert await again.wait_for("End the class?"), again.text()
        again.send("l")  # okafor leaves: rivera, the teacher left, leads again
        await asyncio.wait_for(again.closed.wait(), 20)  # (a session that stays fails, not hangs)
        assert await first.wait_for("You lead the class now"), first.text()
        first.send("n")
        assert await at_step(student, step_of_text(first.text())), student.text()
    finally:
        await server.close()


def step_of_text(text: str) -> int | None:
    found = re.search(r"step (\d+)/\d+", text)
    return int(found.group(1)) if found else None


async def test_a_student_who_reconnects_to_another_worker_is_one_row(tmp_path):
    """bob answers in worker 1, drops (worker 1, empty, retires), and comes back in the
    fresh worker 2, another process: he sees his answer, is not asked again, and the
    scores have one row for him, named `bob` (no worker's number in it: issue 35)."""
    scores = tmp_path / "scores.csv"
    server = ServerProcess(tmp_path, "--workers", "2", "--quiz", "--quiz-scores", str(scores))
    try:
        teacher = await join(server, 0, key=server.teacher_key, user="teacher")
        bob = await join(server, 1, password=PASSWORD, user="bob")
        teacher.send("n" * 9)
        assert await at_step(bob, 9) and await bob.wait_for(PROMPT), bob.text()
        await answer(bob, "4")
        assert await teacher.wait_for("0/1 right (0%)"), teacher.text()
        await bob.close()
        await server.logged(r"worker 1 \(pid \d+\) has retired", 30)
        await server.logged(r"worker 2 \(pid \d+\) ready", 60)
        again = await join(server, 2, password=PASSWORD, user="bob")
        assert await at_step(again, 9), again.text()
        assert await again.wait_for("quiz: you said 4: wrong ✗"), again.text()
        assert PROMPT not in again.text() and grad_of(again, "d") == "-2.0"
        teacher.send("q")
        assert await teacher.wait_for("End the class?")
        teacher.send("e")
        await server.logged("quiz scores written to", 20)
    finally:
        await server.close()
    rows = list(csv.reader(io.StringIO(scores.read_text())))
    assert rows[1:] == [["chain.py", "bob", "0", "1"]], rows
