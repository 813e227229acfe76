"""The teacher's console (issue 23, item 1) over real SSH: the join command and the
class's counts on the teacher's screen, the roster (`R`), `q` asking before it ends
the class, and a second teacher's choice to take over or to watch."""

from __future__ import annotations

import asyncio
import logging
import re
import sys

import pytest

asyncssh = pytest.importorskip("asyncssh")
pytest.importorskip("pyte")

from mgtui.serve.auth import Auth, host_key  # noqa: E402
from mgtui.serve.server import Class, Limits, start_server  # noqa: E402
from sshclient import ScreenClient  # noqa: E402
from tests.serve.test_serve import PASSWORD, Failures, at_step, lessons  # noqa: E402,F401


@pytest.fixture
def named_keys(tmp_path):
    """Two teachers' keys and a student's, each with a comment (the name the roster shows)."""
    made = {who: asyncssh.generate_private_key("ssh-ed25519", comment=comment)
            for who, comment in (("teacher", "Ms Rivera"), ("other", "Mr Okafor"),
                                 ("student", "Ada [b]Lovelace[/b]"))}
    (tmp_path / "teachers").write_bytes(made["teacher"].export_public_key()
                                        + made["other"].export_public_key())
    (tmp_path / "students").write_bytes(made["student"].export_public_key())
    for name in ("teachers", "students"):
        (tmp_path / name).chmod(0o644)
    (tmp_path / "password").write_text(PASSWORD + "\n")
    (tmp_path / "password").chmod(0o600)
    return {**made, "dir": tmp_path}


@pytest.fixture
async def server(lessons, named_keys, clean_env):  # noqa: F811
    d = named_keys["dir"]
    auth = Auth.from_files(d / "students", d / "teachers", d / "password")
    klass = Class({"chain.py": lessons["chain.py"]}, auth, Limits(max_sessions=10))
    srv = await start_server(klass, "127.0.0.1", 0, host_key(d / "state"))
    srv.clients = []
    failures = Failures()
    logging.getLogger("mgtui.serve").addHandler(failures)
    try:
        yield srv
        for client in srv.clients:
            await client.close()
        await srv.close()
    finally:
        logging.getLogger("mgtui.serve").removeHandler(failures)
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    assert not failures.records, "a session failed:\n" + "\n".join(failures.records)


async def join(server, **options) -> ScreenClient:
    client = await ScreenClient.connect(server.port, size=(120, 30), **options)
    server.clients.append(client)
    assert await client.wait_for("step ", 15), client.text()
    return client


def counts(client: ScreenClient) -> tuple[int, int, int] | None:
    found = re.search(r"(\d+) connected · (\d+) following · (\d+) paused", client.text())
    return tuple(int(n) for n in found.groups()) if found else None


async def test_the_teacher_sees_the_join_command_the_counts_and_the_roster(server, named_keys):
    teacher = await join(server, key=named_keys["teacher"], user="rivera")
    assert await teacher.wait_for(f"join: ssh -p {server.port} class@127.0.0.1"), teacher.text()
    assert await teacher.wait_for(lambda _: counts(teacher) == (0, 0, 0)), teacher.text()
    ada = await join(server, key=named_keys["student"], user="ada")
    bob = await join(server, password=PASSWORD, user="bob")
    cy = await join(server, password=PASSWORD, user="cy")
    assert await teacher.wait_for(lambda _: counts(teacher) == (3, 3, 0)), teacher.text()
    teacher.send("nnn")
    for student in (ada, bob, cy):
        assert await at_step(student, 3), student.text()
    bob.send("p")  # bob's own move: paused, one step behind
    assert await at_step(bob, 2)
    assert await teacher.wait_for(lambda _: counts(teacher) == (3, 2, 1)), teacher.text()
    assert await bob.wait_for("teacher at step 3"), bob.text()
    teacher.send("R")
    assert await teacher.wait_for("The class: 3 connected"), teacher.text()
    lines = [part.strip() for line in teacher.text().splitlines() for part in line.split("│")]
    # (name, state, lesson, step, quiz): the key's comment, as text
    assert any(line.startswith("Ada [b]Lovelace[/b]")
               and line.split()[2:5] == ["following", "chain.py", "3"] for line in lines), \
        teacher.text()
    assert any(line.split()[:4] == ["bob", "paused", "chain.py", "2"] for line in lines), \
        teacher.text()
    assert any(line.startswith("cy") and "following" in line for line in lines)
    await cy.close()
    server.clients.remove(cy)
    teacher.send("\x1b")
    assert await teacher.wait_for(lambda _: counts(teacher) == (2, 1, 1)), teacher.text()
    assert counts(ada) is None and "R roster" not in ada.text()  # the console is the teacher's
    ada.send("R")  # a student has no roster
    ada.send("n")
    assert await ada.wait_for("following paused")
    assert "The class:" not in ada.text()


async def test_q_asks_before_ending_the_class_and_ending_tells_everyone(server, named_keys):
    teacher = await join(server, key=named_keys["teacher"])
    students = [await join(server, password=PASSWORD, user=f"s{i}") for i in range(2)]
    assert await teacher.wait_for(lambda _: counts(teacher) == (2, 2, 0)), teacher.text()
    teacher.send("q")
    assert await teacher.wait_for("End the class?"), teacher.text()
    assert "2 students would be dropped" in teacher.text()
    assert "leave: the class goes on" in teacher.text()
    teacher.send("\x1b")  # back: nothing ended
    assert await teacher.wait_for(lambda t: "End the class?" not in t)
    teacher.send("n")
    for student in students:
        assert await at_step(student, 1), student.text()
    teacher.send("q")
    assert await teacher.wait_for("End the class?")
    teacher.send("e")
    for client in (*students, teacher):
        await asyncio.wait_for(client.closed.wait(), 20)  # (a session that stays fails, not hangs)
        assert "the class has ended" in client.output()
    late = await ScreenClient.connect(server.port, password=PASSWORD)  # too late: told
    server.clients.append(late)
    await asyncio.wait_for(late.closed.wait(), 20)  # (a session that stays fails, not hangs)
    assert "the class has ended" in late.output()


async def test_a_second_teacher_chooses_to_watch_or_to_take_over(server, named_keys):
    first = await join(server, key=named_keys["teacher"])
    student = await join(server, password=PASSWORD, user="stu")
    first.send("nn")
    assert await at_step(student, 2)
    second = await join(server, key=named_keys["other"])
    assert await second.wait_for("Ms Rivera is leading this class."), second.text()
    assert "take over" in second.text() and "watch" in second.text()
    second.send("w")
    assert await second.wait_for(lambda t: "take over" not in t)
    first.send("n")
    assert await at_step(second, 3) and await at_step(student, 3)
    assert await first.wait_for(lambda _: counts(first) == (2, 2, 0)), first.text()
    second.send("R")  # a watching teacher sees the roster too
    assert await second.wait_for("The class:"), second.text()
    second.send("\x1b")
    third = await join(server, key=named_keys["other"], user="okafor2")
    assert await third.wait_for("take over"), third.text()
    third.send("t")
    assert await first.wait_for("has taken over the class"), first.text()
    third.send("gnnnnn")
    assert await at_step(third, 5)
    for follower in (student, first, second):
        assert await at_step(follower, 5), follower.text()
    assert await third.wait_for(lambda _: counts(third) == (3, 3, 0)), third.text()


async def test_the_doctor_runs_for_the_teacher_only(named_keys, clean_env):
    """The teacher's d runs the gradient doctor on the lesson on their screen (it runs
    the lesson's code on the server): the planted bug is found and listed there; a
    student's d says the doctor runs on the teacher's screen only."""
    from pathlib import Path

    from mgtui.run.lessons import record_lesson

    bug = Path(__file__).resolve().parent.parent.parent / "scenarios" / "bugs" / "wrong_derivative.py"
    d = named_keys["dir"]
    auth = Auth.from_files(d / "students", d / "teachers", d / "password")
    klass = Class({"wrong_derivative.py": record_lesson(bug, "wrong_derivative.py")}, auth,
                  Limits(max_sessions=10))
    srv = await start_server(klass, "127.0.0.1", 0, host_key(d / "state"))
    srv.clients = []
    try:
        teacher = await join(srv, key=named_keys["teacher"], user="rivera")
        student = await join(srv, password=PASSWORD, user="stu")
        student.send("d")
        assert await student.wait_for("doctor runs on the teacher's"), student.text()
        teacher.send("d")
        assert await teacher.wait_for("problem found", 60), teacher.text()
        assert "doctor runs on the teacher's" not in teacher.text()
        assert "problem found" not in student.text()  # (the report is the teacher's)
    finally:
        for client in srv.clients:
            await client.close()
        await srv.close()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
