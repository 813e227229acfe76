"""The class server from the outside. A student's screen seen from the client's side:
an asyncssh client whose terminal is a `pyte` emulator (a test dependency), read the way
a person would read their terminal. And `mgtui serve` run as a user runs it, in its own
process, its log kept line by line. The class server's tests and its benches
(bench/serve_load.py, which puts this folder on its path) use both."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import asyncssh
import pyte
from wcwidth import wcwidth

ROOT = Path(__file__).resolve().parent.parent.parent
PASSWORD = "two processes"


class _Terminal(asyncssh.SSHClientSession):
    def __init__(self, client: ScreenClient) -> None:
        self.client = client

    def data_received(self, data: str, datatype) -> None:
        self.client.feed(data)

    def connection_lost(self, exc) -> None:
        self.client.closed.set()


class ScreenClient:
    """One SSH session on a `width`×`height` emulated terminal."""

    def __init__(self, width: int, height: int) -> None:
        self.screen = pyte.Screen(width, height)
        self.stream = pyte.Stream(self.screen)
        self.closed = asyncio.Event()
        self.received = 0  # characters of output so far
        self._pending: list[str] = []  # output not yet run through the emulator
        self._watched: list[str] = []  # the raw output since `watch()`
        self._everything: list[str] = []  # all of it
        self.changed = asyncio.Event()
        self._lines: list[str] = []  # the screen's lines as last read
        self._text: str | None = None
        self.conn = None
        self.chan = None

    @classmethod
    async def connect(cls, port: int, *, host: str = "127.0.0.1", user: str = "class",
                      key=None, password: str | None = None, size: tuple[int, int] = (80, 24),
                      term: str = "xterm-256color", env: dict | None = None,
                      asks: tuple[int, int] | None = None) -> ScreenClient:
        """Log in (raises asyncssh.PermissionDenied when refused) and open a session on
        a terminal of `size` (that asks the server for `asks` instead, if given)."""
        client = cls(*size)
        client.conn = await asyncssh.connect(
            host, port, username=user, client_keys=[key] if key is not None else [],
            password=password, known_hosts=None, agent_path=None, preferred_auth=(
                "publickey" if key is not None else "password"))
        client.chan, _ = await client.conn.create_session(
            lambda: _Terminal(client), term_type=term, term_size=asks or size, env=env or {})
        return client

    def feed(self, data: str) -> None:
        """Output from the server: kept, and run through the emulator when read (a
        screen read once per check, not once per packet, keeps 30 clients light)."""
        self.received += len(data)
        self._pending.append(data)
        self._watched.append(data)
        self._everything.append(data)
        self.changed.set()

    def text(self) -> str:
        """The screen's text, as pyte's `display` has it. (Only the lines drawn since
        the last read are read again: pyte's `display` renders every cell each time,
        and 30 clients reading it at each packet cost bench/serve_load.py more CPU
        than the server's step itself.)"""
        if self._pending:
            self.stream.feed("".join(self._pending))
            self._pending.clear()
        screen = self.screen
        if len(self._lines) != screen.lines:
            self._lines = [""] * screen.lines
            screen.dirty.update(range(screen.lines))
        if screen.dirty or self._text is None:
            for y in screen.dirty:
                if y < screen.lines:
                    self._lines[y] = self._line(screen.buffer[y], screen.columns)
            screen.dirty.clear()
            self._text = "\n".join(self._lines)
        return self._text

    @staticmethod
    def _line(line, columns: int) -> str:
        """A line as pyte's `display` renders it: the cell after a wide character (its
        stub) left out."""
        out, wide = [], False
        for x in range(columns):
            if wide:
                wide = False
                continue
            char = line[x].data
            wide = char > "\u10ff" and wcwidth(char[0]) == 2
            out.append(char)
        return "".join(out)

    def output(self) -> str:
        """Everything the server has sent, raw (escape sequences and all)."""
        return "".join(self._everything)

    def watch(self) -> None:
        """Collect the raw output from now on, for `wait_output`."""
        self._watched = []

    async def wait_output(self, text: str, timeout: float = 30.0) -> bool:
        """Wait until `text` arrives in the raw output since `watch()` (cheap: no
        emulation; read the screen with `text()` afterwards to check it)."""
        deadline = time.monotonic() + timeout
        while text not in "".join(self._watched):
            left = deadline - time.monotonic()
            if left <= 0 or self.closed.is_set():
                return False
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 0.5))
            except asyncio.TimeoutError:
                pass
        return True

    def send(self, keys: str) -> None:
        self.chan.write(keys)

    def resize(self, width: int, height: int) -> None:
        self.screen.resize(height, width)
        self.chan.change_terminal_size(width, height)

    async def wait_for(self, test, timeout: float = 30.0) -> bool:
        """Wait until `test(screen text)` holds (or the text contains `test`, a string)."""
        check = (lambda t: test in t) if isinstance(test, str) else test
        deadline = time.monotonic() + timeout
        while not check(self.text()):
            left = deadline - time.monotonic()
            if left <= 0 or self.closed.is_set():
                return check(self.text())
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 0.5))
            except asyncio.TimeoutError:
                pass
        return True

    async def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            await self.conn.wait_closed()


class ServerProcess:
    """`mgtui serve chain.py OPTIONS...` in its own process (a class password and a
    teacher's key), its log (stderr) kept line by line."""

    def __init__(self, tmp_path: Path, *options: str, lessons: tuple[str, ...] = (),
                 env: dict | None = None, wait: float = 120) -> None:
        self.teacher_key = asyncssh.generate_private_key("ssh-ed25519")
        (tmp_path / "teachers").write_bytes(self.teacher_key.export_public_key())
        (tmp_path / "teachers").chmod(0o644)  # (whatever the umask: only its owner writes it)
        pw = tmp_path / "password"
        pw.write_text(PASSWORD + "\n")
        pw.chmod(0o600)
        env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), PYTHONPATH=str(ROOT),
                   **(env or {}))
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from mgtui.cli import entry; entry()", "serve",
             *(lessons or (str(ROOT / "scenarios" / "chain.py"),)), "--port", "0",
             "--password-file", str(pw), "--teacher-keys", str(tmp_path / "teachers"),
             *options], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
            errors="backslashreplace")
        self.log: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        self.port = 0
        deadline = time.monotonic() + wait
        while not self.port and time.monotonic() < deadline and self.process.poll() is None:
            found = re.search(r"on 127\.0\.0\.1:(\d+)[; ]", "".join(self.log))
            self.port = int(found.group(1)) if found else 0
            time.sleep(0.05)
        self.clients: list[ScreenClient] = []
        if not self.port:
            self.stop()
            raise AssertionError("the server did not start:\n" + "".join(self.log))

    def _drain(self) -> None:
        for line in self.process.stderr:
            self.log.append(line)

    def workers(self) -> list[int]:
        """The pids of the worker processes ready so far (forked by the server's zygote,
        they are not its children)."""
        return [int(pid) for pid in re.findall(r"worker \d+ \(pid (\d+)\) ready",
                                               "".join(self.log))]

    async def logged(self, pattern: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.log):
                if re.search(pattern, line):
                    return line
            await asyncio.sleep(0.05)
        raise AssertionError(f"never logged {pattern!r}:\n{''.join(self.log)}")

    async def join(self, **options) -> ScreenClient:
        client = await ScreenClient.connect(self.port, **options)
        self.clients.append(client)
        return client

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    async def close(self) -> None:
        for client in self.clients:
            await client.close()
        self.stop()


class Flooder:
    """A client that asks for a window of `size` and sends `keys` as fast as SSH lets
    it, reading (and dropping) whatever the server draws."""

    def __init__(self) -> None:
        self.sent = 0  # characters the server has taken (SSH's flow control allowing)
        self.received = 0
        self.conn = None
        self._tasks: list[asyncio.Task] = []

    @classmethod
    async def start(cls, port: int, *, password: str = PASSWORD, size=(80, 24),
                    keys: str = "np") -> Flooder:
        flooder = cls()
        flooder.conn = await asyncssh.connect(
            "127.0.0.1", port, username="flood", password=password, known_hosts=None,
            agent_path=None, client_keys=[], preferred_auth="password")
        writer, reader, _ = await flooder.conn.open_session(
            term_type="xterm-256color", term_size=size)
        flooder._tasks = [asyncio.create_task(flooder._read(reader)),
                          asyncio.create_task(flooder._write(writer, keys * 2048))]
        return flooder

    async def _read(self, reader) -> None:
        while data := await reader.read(1 << 16):
            self.received += len(data)

    async def _write(self, writer, chunk: str) -> None:
        try:
            while True:
                writer.write(chunk)
                await writer.drain()
                self.sent += len(chunk)
        except (OSError, asyncssh.Error):
            pass

    def kill(self) -> None:
        """Gone at once, as a killed client (its TCP connection dropped)."""
        for task in self._tasks:
            task.cancel()
        if self.conn is not None:
            self.conn.abort()


def processes(pid: int) -> list[int]:
    """A process and its descendants (a server's zygote and the workers it forks)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        each = todo.pop()
        found.append(each)
        todo.extend(parents.get(each, []))
    return found


def memory_mb(pid: int) -> float:
    """The resident memory (VmRSS) of a process and its descendants, in MB."""
    total = 0
    for each in processes(pid):
        try:
            status = Path(f"/proc/{each}/status").read_text()
        except OSError:
            continue
        found = re.search(r"^VmRSS:\s+(\d+)", status, re.M)
        total += int(found.group(1)) if found else 0
    return total / 1024
