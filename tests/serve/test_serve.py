"""`mgtui serve`: a real asyncssh server on 127.0.0.1 (an ephemeral port) and real
asyncssh clients, whose screens are read through a terminal emulator (pyte), the way a
student reads theirs."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
from pathlib import Path

import pytest

asyncssh = pytest.importorskip("asyncssh")
pytest.importorskip("pyte")

from mgtui.run.lessons import record_lesson  # noqa: E402
from mgtui.serve.auth import Auth, AuthError, host_key  # noqa: E402
from sshclient import ScreenClient  # noqa: E402
from mgtui.serve.server import Class, Limits, start_server  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
PASSWORD = "correct horse"


@pytest.fixture(scope="module")
def lessons():
    """chain and neuron, each recorded once (in the runner's child) for the whole module."""
    return {name: record_lesson(ROOT / "scenarios" / name, name)
            for name in ("chain.py", "neuron.py")}


@pytest.fixture
def keys(tmp_path):
    """A student's and a teacher's key pair, their authorized_keys files, a password file."""
    student = asyncssh.generate_private_key("ssh-ed25519")
    teacher = asyncssh.generate_private_key("ssh-ed25519")
    for name, key in (("students", student), ("teachers", teacher)):
        (tmp_path / name).write_bytes(key.export_public_key())
        (tmp_path / name).chmod(0o644)  # (whatever the umask: only its owner writes it)
    pw = tmp_path / "password"
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    return {"student": student, "teacher": teacher, "dir": tmp_path}


@pytest.fixture
async def server(lessons, keys, clean_env):
    auth = Auth.from_files(keys["dir"] / "students", keys["dir"] / "teachers",
                           keys["dir"] / "password")
    klass = Class(lessons, auth, Limits(max_sessions=10))
    srv = await start_server(klass, "127.0.0.1", 0, host_key(keys["dir"] / "state"))
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
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__  # (each app redirected them)
    assert not failures.records, "a session failed:\n" + "\n".join(failures.records)


class Failures(logging.Handler):
    """The server's errors (a session whose app raised), kept for the test to check."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


PICKER = "pick a scenario to step through"


async def join(server, **options) -> ScreenClient:
    """Log in; on the picker of lessons (nobody leads yet), take the first one."""
    client = await ScreenClient.connect(server.port, **options)
    server.clients.append(client)
    assert await client.wait_for(lambda t: "step " in t or PICKER in t, 15), client.text()
    if PICKER in client.text():
        client.send("\r")
    assert await client.wait_for(lambda t: "step " in t and PICKER not in t, 15), client.text()
    return client


def step_of(client: ScreenClient) -> int | None:
    """The step the header on the client's screen shows."""
    match = re.search(r"step (\d+)/\d+", client.text())  # the header's (under a status line)
    return int(match.group(1)) if match else None


async def at_step(client: ScreenClient, step: int, timeout: float = 30) -> bool:
    return await client.wait_for(lambda _: step_of(client) == step, timeout)


PAUSED = "following paused — press f to rejoin"


# -- safe by default --------------------------------------------------------------------------

async def test_a_wrong_password_or_key_is_refused_then_the_right_one_gets_in(server, keys):
    with pytest.raises(asyncssh.PermissionDenied):
        await ScreenClient.connect(server.port, password="wrong password")
    stranger = asyncssh.generate_private_key("ssh-ed25519")
    with pytest.raises(asyncssh.PermissionDenied):
        await ScreenClient.connect(server.port, key=stranger)
    by_password = await join(server, password=PASSWORD)
    by_key = await join(server, key=keys["student"])
    for client in (by_password, by_key):
        assert "The chain rule on a tiny expression" in client.text()
        assert step_of(client) == 0


class Bluffer(asyncssh.SSHClient):
    """A student who knows the teacher's public key (it is no secret) but not its
    private key: asyncssh first asks the server whether that key would be taken, then
    signs with another key, which fails, then logs in with the class password."""

    def __init__(self, teacher_public: bytes) -> None:
        self.teacher_public: bytes | None = teacher_public

    def public_key_auth_requested(self):
        if self.teacher_public is None:
            return None  # (once: then the password)
        pair = asyncssh.load_keypairs([asyncssh.generate_private_key("ssh-ed25519")])[0]
        pair.public_data, self.teacher_public = self.teacher_public, None  # asks; signs its own
        return pair


async def test_asking_about_the_teachers_key_then_a_password_is_a_student(server, keys, caplog):
    caplog.set_level(logging.INFO, logger="mgtui.serve")
    conn, _ = await asyncssh.create_connection(
        lambda: Bluffer(keys["teacher"].public_data), "127.0.0.1", server.port,
        username="mallory", password=PASSWORD, known_hosts=None, agent_path=None,
        client_keys=None, preferred_auth="publickey,password")
    try:
        await asyncio.sleep(0.2)
        text = caplog.text
        assert "password accepted for mallory@" in text, text
        assert re.search(r"logged in mallory@\S+ as student", text), text
        assert not re.search(r"logged in mallory@\S+ as teacher", text), text
    finally:
        conn.close()
    # the teacher, signing with the real key, is still the teacher
    caplog.clear()
    teacher = await join(server, key=keys["teacher"])
    assert re.search(r"logged in class@\S+ as teacher", caplog.text), caplog.text
    await teacher.close()


async def test_no_command_and_no_sftp(server):
    conn = await asyncssh.connect("127.0.0.1", server.port, username="class",
                                  password=PASSWORD, known_hosts=None, agent_path=None,
                                  client_keys=[])
    try:
        with pytest.raises(asyncssh.ChannelOpenError):
            await conn.run("cat /etc/passwd", check=False)
        with pytest.raises((asyncssh.ChannelOpenError, asyncssh.SFTPError, OSError)):
            async with conn.start_sftp_client():
                pass
    finally:
        conn.close()


def test_credentials_come_from_files_and_are_required(tmp_path):
    with pytest.raises(AuthError, match="needs a way in"):
        Auth.from_files()
    loose = tmp_path / "pw"
    loose.write_text("a long enough password\n")
    for mode in (0o644, 0o640, 0o604):  # readable by every user, or by the group
        loose.chmod(mode)
        with pytest.raises(AuthError, match=f"can be read by other users: chmod 600 {loose}"):
            Auth.from_files(password_file=loose)
    loose.chmod(0o600)
    assert Auth.from_files(password_file=loose).password == "a long enough password"
    for blank in ("      \n", "\t \t \t \t\n", "\n"):
        loose.write_text(blank)
        with pytest.raises(AuthError, match="is blank"):
            Auth.from_files(password_file=loose)
    loose.write_text("  abc  \n")
    with pytest.raises(AuthError, match="too short"):
        Auth.from_files(password_file=loose)


def test_an_authorized_keys_file_others_can_write_to_is_refused(tmp_path):
    keys = tmp_path / "students"
    keys.write_bytes(asyncssh.generate_private_key("ssh-ed25519").export_public_key())
    for mode in (0o666, 0o664):
        keys.chmod(mode)
        with pytest.raises(AuthError, match=f"can be written by other users .*: chmod go-w {keys}"):
            Auth.from_files(keys)
    keys.chmod(0o644)
    assert Auth.from_files(keys).takes_keys


def test_a_host_key_others_can_read_or_replace_is_refused_with_the_fix(tmp_path):
    state = tmp_path / "state"
    host_key(state)
    key = state / "ssh_host_ed25519_key"
    key.chmod(0o644)
    with pytest.raises(AuthError, match=f"can be read by other users: chmod 600 {key}"):
        host_key(state)
    key.chmod(0o640)
    with pytest.raises(AuthError, match="chmod 600"):
        host_key(state)
    key.chmod(0o600)
    state.chmod(0o777)  # anyone could put their own key in its place
    with pytest.raises(AuthError, match=f"{state} can be written by other users .*: chmod go-w {state}"):
        host_key(state)
    state.chmod(0o775)
    with pytest.raises(AuthError, match="chmod go-w"):
        host_key(state)
    state.chmod(0o700)
    host_key(state)
    fresh = tmp_path / "fresh"
    fresh.mkdir(mode=0o777)
    fresh.chmod(0o777)
    with pytest.raises(AuthError, match="chmod go-w"):  # no key is made there either
        host_key(fresh)
    assert not (fresh / "ssh_host_ed25519_key").exists()


def test_the_host_key_is_made_once_and_kept(tmp_path):
    first = host_key(tmp_path)
    again = host_key(tmp_path)
    assert first.export_public_key() == again.export_public_key()
    assert oct((tmp_path / "ssh_host_ed25519_key").stat().st_mode & 0o777) == "0o600"


# -- a session ------------------------------------------------------------------------------

async def test_a_session_steps_on_its_own_terminal(server):
    client = await join(server, password=PASSWORD)
    for step in (1, 2, 3):
        client.send("n")
        assert await at_step(client, step), client.text()
    client.send("p")
    assert await at_step(client, 2)
    assert "leaf b" in client.text() or "b = -3.0" in client.text()


async def test_the_step_notes_show_in_the_step_detail_and_full_screen(server):
    client = await join(server, password=PASSWORD)
    client.send("nnnn")  # step 4 makes e = a*b, whose line carries a `#:` note
    assert await at_step(client, 4)
    assert await client.wait_for("✎ a product: backward, each input gets the other"), \
        client.text()
    client.send("N")
    assert await client.wait_for("Notes · The chain rule"), client.text()
    assert "At step 4:" in client.text()
    assert "The first graph of the lecture" in client.text()  # the lesson notes, below


async def test_lesson_file_names_in_the_picker_are_inert(tmp_path, lessons, keys, clean_env):
    import shutil

    hostile = tmp_path / "\x1b]0;pwned\x07\x1b[2J\u202eyp.chain.py"
    shutil.copy(ROOT / "scenarios" / "chain.py", hostile)
    served = {hostile.name: record_lesson(hostile, hostile.name), "neuron.py": lessons["neuron.py"]}
    auth = Auth.from_files(password_file=keys["dir"] / "password")
    srv = await start_server(Class(served, auth), "127.0.0.1", 0, host_key(keys["dir"] / "state"))
    client = None
    try:
        client = await ScreenClient.connect(srv.port, password=PASSWORD)
        assert await client.wait_for("neuron.py"), client.text()  # the picker of the two
        assert "\\x1b]0;pwned\\x07\\x1b[2J\\u202eyp.chain.py" in client.text()
        raw = client.output()
        assert "\x1b]0;pwned" not in raw and "pwned\x07" not in raw  # (Textual's own OSCs
        assert "\x1b[2J\u202e" not in raw and "\u202e" not in raw  # end in BEL too)
    finally:
        if client is not None:
            await client.close()
        await srv.close()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__


# -- follow the teacher ---------------------------------------------------------------------

async def test_with_nobody_leading_a_student_picks_from_the_lessons_and_titles(server, keys):
    client = await ScreenClient.connect(server.port, password=PASSWORD)
    server.clients.append(client)
    assert await client.wait_for(PICKER), client.text()
    assert "The chain rule on a tiny expression" in client.text()
    assert "One neuron with a tanh activation" in client.text()
    client.send("\x1b[B\r")  # down to neuron.py, enter
    assert await client.wait_for(lambda t: "One neuron with a tanh activation" in
                                 client.screen.display[0] and PICKER not in t), client.text()
    assert step_of(client) == 0


async def test_the_teachers_first_move_takes_a_student_off_the_picker(server, keys):
    student = await ScreenClient.connect(server.port, password=PASSWORD)
    server.clients.append(student)
    assert await student.wait_for(PICKER)
    teacher = await join(server, key=keys["teacher"])
    teacher.send("n")
    assert await at_step(student, 1), student.text()
    assert PICKER not in student.text()


async def test_students_follow_detach_and_rejoin(server, keys):
    teacher = await join(server, key=keys["teacher"])
    student = await join(server, password=PASSWORD)
    teacher.send("nn")
    assert await at_step(teacher, 2)
    assert await at_step(student, 2), student.text()
    assert PAUSED not in student.text()
    # the student's own move pauses the following, and says so
    student.send("p")
    assert await student.wait_for(PAUSED), student.text()
    assert step_of(student) == 1
    teacher.send("nnn")
    assert await at_step(teacher, 5)
    await asyncio.sleep(0.5)
    assert step_of(student) == 1  # paused: the teacher's steps do not move it
    # f: back at the teacher's step, following again
    student.send("f")
    assert await at_step(student, 5), student.text()
    assert await student.wait_for(lambda t: PAUSED not in t)
    teacher.send("n")
    assert await at_step(student, 6)


async def test_the_teacher_changes_lesson_and_the_class_follows(server, keys):
    teacher = await join(server, key=keys["teacher"])
    student = await join(server, password=PASSWORD)
    teacher.send("o")
    assert await teacher.wait_for("neuron.py")
    teacher.send("\x1b[B\r")  # down to neuron.py, enter
    assert await teacher.wait_for("One neuron with a tanh activation"), teacher.text()
    assert await student.wait_for("One neuron with a tanh activation"), student.text()
    teacher.send("n")
    assert await at_step(student, 1)


async def test_a_late_joiner_lands_on_the_teachers_step(server, keys):
    teacher = await join(server, key=keys["teacher"])
    teacher.send("nnnnnnn")
    assert await at_step(teacher, 7)
    late = await join(server, password=PASSWORD)
    assert await at_step(late, 7), late.text()


async def test_a_teacher_who_comes_back_lands_where_the_class_is(server, keys):
    teacher = await join(server, key=keys["teacher"])
    student = await join(server, password=PASSWORD)
    teacher.send("nnnnn")
    assert await at_step(student, 5)
    await teacher.close()
    again = await join(server, key=keys["teacher"])
    assert await at_step(again, 5), again.text()
    await asyncio.sleep(0.5)
    assert step_of(student) == 5  # the class was not taken back to the start
    again.send("n")
    assert await at_step(student, 6)


# -- terminals --------------------------------------------------------------------------------

async def test_a_resize_redraws_at_the_new_size_and_a_tiny_one_breaks_nothing(server):
    client = await join(server, password=PASSWORD, size=(80, 24))
    client.resize(120, 30)
    assert await client.wait_for(lambda _: client.screen.display[0].rstrip().endswith(
        "step 0/15") and len(client.screen.display[0].rstrip()) > 100), client.text()
    client.resize(10, 5)
    await asyncio.sleep(0.5)
    client.resize(80, 24)
    client.send("n")
    assert await at_step(client, 1), client.text()
    other = await join(server, password=PASSWORD)  # the server still serves others
    assert step_of(other) == 0


async def test_term_and_no_color_come_from_the_client(server):
    await join(server, password=PASSWORD, term="xterm-16color", env={"NO_COLOR": "1"})
    await join(server, password=PASSWORD, term="xterm-256color")
    apps = {s.app.no_color: s.app for s in server.klass.sessions}
    assert set(apps) == {True, False}
    assert apps[True].console.color_system == "standard"
    assert apps[False].console.color_system == "256"


async def test_each_terminal_gets_colours_it_can_show_from_one_process(server):
    """A 24-bit terminal and a 16-colour one step the same lesson in one process: the
    16-colour one is sent no 24-bit or 256-colour code (a style drawn for the first kept
    its codes for everyone, as Textual and rich keep them)."""
    wide = await join(server, password=PASSWORD, term="xterm-256color",
                      env={"COLORTERM": "truecolor"})
    for step in (1, 2, 3):
        wide.send("n")
        assert await at_step(wide, step), wide.text()
    narrow = await join(server, password=PASSWORD, term="xterm-16color")
    for key, step in (("n", 1), ("n", 2), ("n", 3), ("p", 2)):
        narrow.send(key)
        assert await at_step(narrow, step), narrow.text()
    received = {"wide": wide.output(), "narrow": narrow.output()}
    assert re.search(r"\x1b\[[0-9;]*[34]8;2;", received["wide"])
    assert len(received["narrow"]) > 2_000
    unshowable = re.findall(r"\x1b\[[0-9;]*[34]8;[25];[0-9;]*m", received["narrow"])
    assert not unshowable, unshowable[:3]


async def test_a_client_cut_off_mid_frame_leaves_the_others_served(server):
    gone = await join(server, password=PASSWORD)
    stays = await join(server, password=PASSWORD)
    gone.send("n" * 10)
    gone.conn.abort()  # the TCP connection dropped while frames are on their way
    await asyncio.sleep(0.5)
    stays.send("n")
    assert await at_step(stays, 1)
    assert len(server.klass.sessions) == 1


async def test_the_session_limit_turns_away_one_more(lessons, keys, clean_env):
    auth = Auth.from_files(password_file=keys["dir"] / "password")
    srv = await start_server(Class(lessons, auth, Limits(max_sessions=1)), "127.0.0.1", 0,
                             host_key(keys["dir"] / "state"))
    first = second = None
    try:
        first = await ScreenClient.connect(srv.port, password=PASSWORD)
        assert await first.wait_for(PICKER)  # two lessons, nobody leading
        second = await ScreenClient.connect(srv.port, password=PASSWORD)
        assert await second.wait_for("the class is full")
    finally:
        for client in (first, second):
            if client is not None:
                await client.close()
        await srv.close()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__


async def idle_connections(port: int, count: int, source: str) -> list:
    """`count` TCP connections to the server from `source` that send nothing."""
    import socket

    loop = asyncio.get_running_loop()
    held = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind((source, 0))
        sock.setblocking(False)
        await loop.sock_connect(sock, ("127.0.0.1", port))
        held.append(sock)
    return held


async def closed_within(sock, seconds: float) -> bool:
    """The server closes `sock` within `seconds` (what it sends meanwhile is read)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(seconds):
            while await loop.sock_recv(sock, 4096):
                pass
        return True
    except TimeoutError:
        return False


async def test_idle_connections_from_one_address_lock_no_student_out(lessons, keys, clean_env):
    # With --max-sessions 5 the class has room for 20 connections at once, logged in or
    # not. One machine (127.0.0.2) opening 20 that send nothing keeps 10 (its logins at
    # once), each closed after the short timeout of a connection that says nothing;
    # students (127.0.0.1) log in meanwhile, by password and by key.
    auth = Auth.from_files(keys["dir"] / "students", None, keys["dir"] / "password")
    srv = await start_server(Class(lessons, auth, Limits(max_sessions=5, quiet_timeout=3.0)),
                             "127.0.0.1", 0, host_key(keys["dir"] / "state"))
    srv.clients = []
    held = []
    try:
        held = await idle_connections(srv.port, 20, "127.0.0.2")
        closed = await asyncio.gather(*(closed_within(sock, 1.0) for sock in held))
        assert closed.count(True) == 10, closed  # the ten past its logins at once
        await join(srv, password=PASSWORD)
        await join(srv, key=keys["student"])
        kept = [sock for sock, gone in zip(held, closed) if not gone]
        assert all(await asyncio.gather(*(closed_within(sock, 5) for sock in kept)))
        again = await idle_connections(srv.port, 10, "127.0.0.2")  # room for 10 again
        assert not any(await asyncio.gather(*(closed_within(sock, 1.0) for sock in again)))
        held += again
    finally:
        for sock in held:
            sock.close()
        for client in srv.clients:
            await client.close()
        await srv.close()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__


async def test_an_idle_session_is_ended(lessons, keys, clean_env, monkeypatch):
    import mgtui.serve.server as server_module

    monkeypatch.setattr(server_module, "IDLE_CHECK_EVERY", 0.2)
    auth = Auth.from_files(password_file=keys["dir"] / "password")
    srv = await start_server(Class(lessons, auth, Limits(idle_timeout=3.0)), "127.0.0.1", 0,
                             host_key(keys["dir"] / "state"))
    try:
        client = await ScreenClient.connect(srv.port, password=PASSWORD)
        # (the picker, unless the machine is so loaded that the session went idle first:
        # either way it is ended, and says why)
        await client.wait_for(PICKER)
        await asyncio.wait_for(client.closed.wait(), 30)
        assert "idle" in client.text()
    finally:
        await srv.close()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__


def test_the_log_has_no_password(tmp_path, lessons, keys):
    """The server's log, from a separate process, after a wrong and a right password."""
    import subprocess

    script = f"""
import asyncio, logging, sys
from pathlib import Path
import asyncssh
from mgtui.run.lessons import record_lesson
from mgtui.serve.auth import Auth, host_key
from sshclient import ScreenClient
from mgtui.serve.server import Class, start_server
logging.basicConfig(level=logging.INFO, stream=sys.__stderr__)
async def main():
    lessons = {{"chain.py": record_lesson(Path({str(ROOT / 'scenarios' / 'chain.py')!r}))}}
    auth = Auth.from_files(password_file=Path({str(keys['dir'] / 'password')!r}))
    srv = await start_server(Class(lessons, auth), "127.0.0.1", 0, host_key(Path({str(tmp_path / 'st')!r})))
    try:
        await ScreenClient.connect(srv.port, password="hunter2 wrong")
    except asyncssh.PermissionDenied:
        pass
    c = await ScreenClient.connect(srv.port, password={PASSWORD!r})
    await c.wait_for("step 0/")
    await c.close()
    await srv.close()
asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                              (str(ROOT), str(ROOT / "tests" / "support")))))
    log = done.stderr
    assert "password refused for class@127.0.0.1" in log, log
    assert "password accepted for class@127.0.0.1" in log
    assert "session end class@127.0.0.1" in log and "disconnect 127.0.0.1" in log
    assert "hunter2" not in log and PASSWORD not in log


# -- the command line -------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["chain"], "a class needs a way in"),
    (["nope.py", "--password-file", "PW"], "nope.py: no such file or directory"),
    (["chain", "--password-file", "MISSING"], "cannot read the password file"),
    (["EMPTY", "--password-file", "PW"], "no lesson files there"),
    (["chain", "--password-file", "PW", "--workers", "0"], "--workers"),
])
def test_serve_says_what_is_wrong_in_one_line(tmp_path, capsys, monkeypatch, args, message):
    from mgtui.cli import main

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    pw = tmp_path / "pw"
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    (tmp_path / "empty").mkdir()
    names = {"PW": str(pw), "MISSING": str(tmp_path / "missing"), "EMPTY": str(tmp_path / "empty")}
    assert main(["serve", *[names.get(a, a) for a in args]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mgtui serve: ") and message in err and len(err.splitlines()) == 1


def test_serve_refuses_a_host_key_others_can_read_in_one_line(tmp_path):
    import subprocess

    key = tmp_path / "state" / "mgtui" / "ssh_host_ed25519_key"
    host_key(key.parent)
    key.chmod(0o644)
    pw = tmp_path / "pw"
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), PYTHONPATH=str(ROOT))
    for workers in ("1", "2"):
        done = subprocess.run(  # (in its own process: a server that started would serve on)
            [sys.executable, "-c", "from mgtui.cli import entry; entry()", "serve", "chain",
             "--port", "0", "--password-file", str(pw), "--workers", workers],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        err = done.stderr.splitlines()
        assert done.returncode == 2 and err[-1] == (
            f"mgtui serve: the host key {key} can be read by other users: chmod 600 {key}"), err
