"""`mgtui serve --workers 2`: the class spread over two worker processes behind one
port, run as a user runs it (a separate process), with real asyncssh clients whose
screens are read through a terminal emulator."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import time
from pathlib import Path

import pytest

asyncssh = pytest.importorskip("asyncssh")
pytest.importorskip("pyte")

from sshclient import PASSWORD, ScreenClient, ServerProcess  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
PAUSED = "following paused — press f to rejoin"

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")


@pytest.fixture
async def server(tmp_path):
    srv = ServerProcess(tmp_path, "--workers", "2", "--max-sessions", "3")
    try:
        yield srv
    finally:
        await srv.close()


def alive(pid: int) -> bool:
    """The process runs (not a zombie waiting for a parent to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def step_of(client: ScreenClient) -> int | None:
    match = re.search(r"step (\d+)/\d+", client.text())
    return int(match.group(1)) if match else None


async def at_step(client: ScreenClient, step: int) -> bool:
    return await client.wait_for(lambda _: step_of(client) == step, 30)


async def teacher_and_student(server: ServerProcess) -> tuple[ScreenClient, ScreenClient]:
    """A teacher and a student logged in, both at step 0: each connection goes to the
    worker serving the fewest, so the teacher is in worker 0 and the student in 1."""
    teacher = await server.join(key=server.teacher_key)
    assert await at_step(teacher, 0)
    student = await server.join(password=PASSWORD)
    assert await at_step(student, 0)
    await server.logged(r"\[worker 0\] session start class@\S+ as teacher")
    await server.logged(r"\[worker 1\] session start class@\S+ as student")
    return teacher, student


async def test_the_class_follows_the_teacher_across_processes(server):
    teacher, student = await teacher_and_student(server)
    teacher.send("nn")
    assert await at_step(student, 2), student.text()
    student.send("p")  # a move of the student's own: following pauses
    assert await student.wait_for(PAUSED, 30) and await at_step(student, 1)
    teacher.send("n")
    assert await at_step(teacher, 3)
    await asyncio.sleep(0.3)
    assert step_of(student) == 1  # paused: it stays
    student.send("f")
    assert await at_step(student, 3) and PAUSED not in student.text()
    late = await server.join(password=PASSWORD)  # to worker 0 again, beside the teacher
    assert await at_step(late, 3), late.text()


async def test_the_session_limit_counts_every_process(server):
    clients = [await server.join(password=PASSWORD) for _ in range(3)]
    for client in clients:
        assert await client.wait_for("step ", 15)
    # the fourth goes to a worker with one session; the class has three, its limit
    fourth = await server.join(password=PASSWORD)
    assert await fourth.wait_for("the class is full (3 sessions)", 30), fourth.text()
    await clients[0].close()
    server.clients.remove(clients[0])
    await server.logged(r"session end")
    await asyncio.sleep(0.3)  # (the count reaches the other worker)
    fifth = await server.join(password=PASSWORD)
    assert await fifth.wait_for("step ", 15), fifth.text()


async def test_stopping_the_server_tells_the_students_and_ends_every_worker(server):
    student = await server.join(password=PASSWORD)
    assert await student.wait_for("step ", 15)
    workers = server.workers()
    assert len(workers) == 2
    server.process.send_signal(signal.SIGINT)  # ctrl+c
    assert await student.wait_output("the server is stopping", 10)
    assert server.process.wait(20) == 0
    assert not any(alive(pid) for pid in workers)


async def test_a_worker_that_dies_leaves_the_other_serving_and_is_replaced(server):
    first = await server.join(password=PASSWORD)
    assert await first.wait_for("step ", 15)
    line = await server.logged(r"\[worker \d\] session start")
    busy = int(re.search(r"\[worker (\d)\]", line).group(1))
    pid = int(re.search(r"pid (\d+)", await server.logged(rf"worker {busy} \(pid")).group(1))
    os.kill(pid, signal.SIGKILL)
    await server.logged(rf"worker {busy} \(pid {pid}\) stopped: .* a fresh one takes its place")
    await server.logged(r"worker 2 \(pid \d+\) ready", 60)
    others = [await server.join(password=PASSWORD) for _ in range(2)]
    for other in others:
        assert await other.wait_for("step ", 15), other.text()
    assert server.process.poll() is None


async def test_a_worker_whose_class_has_left_retires_for_a_fresh_one(server):
    teacher, student = await teacher_and_student(server)
    teacher.send("nnn")
    assert await at_step(student, 3)
    await student.close()
    server.clients.remove(student)
    # the student's worker (1) is empty now: it retires, and worker 2 takes its place
    await server.logged(r"\[worker 1\] the class has left: this worker retires", 15)
    await server.logged(r"worker 2 \(pid \d+\) ready", 60)
    await server.logged(r"worker 1 \(pid \d+\) has retired", 15)
    late = await server.join(password=PASSWORD)  # to the fresh worker: on the teacher's step
    assert await at_step(late, 3), late.text()
    await server.logged(r"\[worker 2\] session start class@\S+ as student")
    teacher.send("n")
    assert await at_step(late, 4)


async def test_a_worker_stuck_for_a_while_holds_up_nobody_and_then_catches_up(server):
    # The front never waits for a worker: with one stopped (SIGSTOP) while the teacher
    # moves hundreds of times, its link fills; the front must go on serving the others,
    # and the stopped worker's student must land on the teacher's step once it runs.
    teacher, student = await teacher_and_student(server)
    pid = int(re.search(r"pid (\d+)", await server.logged(r"worker 1 \(pid")).group(1))
    os.kill(pid, signal.SIGSTOP)
    try:
        for _ in range(300):  # 600 positions, far more than the link holds
            teacher.send("np")
            await asyncio.sleep(0.005)
        teacher.send("nnn")
        # (the teacher's own session works through its 603 keys first: on a loaded
        # machine that takes longer than a step's usual wait)
        assert await teacher.wait_for(lambda _: step_of(teacher) == 3, 90)
        # the front still hands connections over: to worker 0, the one not stuck
        other = await server.join(password=PASSWORD)
        assert await at_step(other, 3), other.text()
    finally:
        os.kill(pid, signal.SIGCONT)
    # (it replays the 600 positions it missed first: 12 s on a loaded machine)
    assert await student.wait_for(lambda _: step_of(student) == 3, 60), student.text()
    teacher.send("n")
    assert await at_step(student, 4) and await at_step(other, 4)


async def test_workers_end_when_the_front_is_killed(tmp_path):
    srv = ServerProcess(tmp_path, "--workers", "2")
    try:
        student = await srv.join(password=PASSWORD)
        assert await student.wait_for("step ", 15)
        workers = srv.workers()
        assert len(workers) == 2
        srv.process.kill()  # no chance to stop them: they see their link close
        srv.process.wait(10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(alive(pid) for pid in workers):
            await asyncio.sleep(0.1)
        assert not any(alive(pid) for pid in workers)
    finally:
        await srv.close()


async def test_warming_up_logs_in_to_itself_and_leaves_nothing_running(caplog):
    # (each worker does this before its first student, so that the crypto libraries'
    # code is mapped then: the server's memory at rest includes it)
    from mgtui.serve.warm import warm_up_ssh

    key = asyncssh.generate_private_key("ssh-ed25519")
    with caplog.at_level("INFO", logger="asyncssh"):
        await warm_up_ssh(key)
    assert any("Auth for user warm-up succeeded" in r.getMessage() for r in caplog.records)
    assert not any("warming up SSH failed" in r.getMessage() for r in caplog.records)
    await asyncio.sleep(0.1)
    assert asyncio.all_tasks() == {asyncio.current_task()}


def test_where_connections_cannot_be_handed_over_one_process_serves(monkeypatch, tmp_path,
                                                                   capsys):
    # (macOS has no Unix packet sockets; Windows has no fork)
    from mgtui.cli import main
    from mgtui.serve import workers

    def no_packets(family=None, kind=None, *rest):
        if kind == socket.SOCK_SEQPACKET:
            raise OSError("Protocol not supported")
        return real_pair(family, kind, *rest)

    real_pair = socket.socketpair
    monkeypatch.setattr(socket, "socketpair", no_packets)
    assert not workers.supported() and workers.default_workers() == 1
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    pw = tmp_path / "pw"
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    assert main(["serve", "chain", "--password-file", str(pw), "--workers", "2"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == ("mgtui serve: this system cannot hand connections to worker "
                       "processes: use --workers 1")


async def test_a_login_flood_is_capped_across_the_workers(tmp_path):
    # connections not yet logged in count against twice the sessions (+10) in all the
    # workers together, as in one process: with --max-sessions 1, twelve (from one
    # address here: it may have more logins at once than that)
    srv = ServerProcess(tmp_path, "--workers", "2", "--max-sessions", "1",
                        "--max-logins-per-address", "20")
    loop = asyncio.get_running_loop()
    held = []
    try:
        for _ in range(12):
            sock = socket.create_connection(("127.0.0.1", srv.port))
            sock.setblocking(False)
            held.append(sock)
            banner = await asyncio.wait_for(loop.sock_recv(sock, 64), 10)
            assert banner.startswith(b"SSH-2.0-")  # a worker speaks SSH to it
        await asyncio.sleep(0.5)  # (the workers' counts reach the front)
        one_more = socket.create_connection(("127.0.0.1", srv.port))
        one_more.setblocking(False)
        assert await asyncio.wait_for(loop.sock_recv(one_more, 64), 10) == b""  # closed
        one_more.close()
        await srv.logged(r"too many connections: closed 127\.0\.0\.1:\d+")
    finally:
        for sock in held:
            sock.close()
        await srv.close()


async def test_a_teacher_ending_the_class_ends_it_in_every_worker(server):
    teacher, student = await teacher_and_student(server)  # (in two workers)
    assert await teacher.wait_for(f"join: ssh -p {server.port} class@127.0.0.1"), teacher.text()
    teacher.send("n*")  # the line and the pointer cross workers too
    assert await student.wait_for("☞ look at"), student.text()
    teacher.send("q")
    assert await teacher.wait_for("End the class?"), teacher.text()
    teacher.send("e")
    for client in (teacher, student):
        await asyncio.wait_for(client.closed.wait(), 20)
        assert "the class has ended" in client.output()
    assert await asyncio.to_thread(server.process.wait, 30) == 0  # the server stops


async def test_the_teachers_console_counts_the_students_of_every_worker(server):
    teacher, student = await teacher_and_student(server)  # (in two workers)
    other = await server.join(password=PASSWORD)
    assert await at_step(other, 0)
    counts = "2 connected · 2 following · 0 paused"
    assert await teacher.wait_for(counts), teacher.text()
    student.send("n")  # its own move: paused, in the other worker
    assert await teacher.wait_for("2 connected · 1 following · 1 paused"), teacher.text()
    teacher.send("R")
    assert await teacher.wait_for("The class: 2 connected"), teacher.text()
    states = re.findall(r"\bclass +(following|paused) +chain\.py +\d+", teacher.text())
    assert sorted(states) == ["following", "paused"], teacher.text()
