"""A student's screen seen from the client's side: an asyncssh client whose terminal is
a `pyte` emulator (a test dependency). The class server's tests and its benches
(bench/serve_load.py, which puts this folder on its path) read it the way a person
would read their terminal."""

from __future__ import annotations

import asyncio
import time

import asyncssh
import pyte


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
        self.changed = asyncio.Event()
        self.conn = None
        self.chan = None

    @classmethod
    async def connect(cls, port: int, *, host: str = "127.0.0.1", user: str = "class",
                      key=None, password: str | None = None, size: tuple[int, int] = (80, 24),
                      term: str = "xterm-256color", env: dict | None = None) -> ScreenClient:
        """Log in (raises asyncssh.PermissionDenied when refused) and open a session."""
        client = cls(*size)
        client.conn = await asyncssh.connect(
            host, port, username=user, client_keys=[key] if key is not None else [],
            password=password, known_hosts=None, agent_path=None, preferred_auth=(
                "publickey" if key is not None else "password"))
        client.chan, _ = await client.conn.create_session(
            lambda: _Terminal(client), term_type=term, term_size=size, env=env or {})
        return client

    def feed(self, data: str) -> None:
        """Output from the server: kept, and run through the emulator when read (a
        screen read once per check, not once per packet, keeps 30 clients light)."""
        self.received += len(data)
        self._pending.append(data)
        self._watched.append(data)
        self.changed.set()

    def text(self) -> str:
        if self._pending:
            self.stream.feed("".join(self._pending))
            self._pending.clear()
        return "\n".join(self.screen.display)

    def watch(self) -> None:
        """Collect the raw output from now on, for `wait_output`."""
        self._watched = []

    async def wait_output(self, text: str, timeout: float = 10.0) -> bool:
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

    async def wait_for(self, test, timeout: float = 10.0) -> bool:
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
