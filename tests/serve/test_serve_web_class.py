"""`mgtui serve --web --teach`, run as a teacher runs it: the teacher's session on this
terminal (a pty, read through `pyte`), browser visitors on websockets (test_serve_web's
`Browser`). A visitor is one of the class: counted on the teacher's console, listed in
the roster, and given the key footer whatever its window's size (issue 35)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("textual_serve")
pyte = pytest.importorskip("pyte")

from tests.serve.test_serve_web import Browser, socket_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
FOOTER = "n Next p Prev"


class TeachingWebServer:
    """`mgtui serve chain --web --teach` on a pty of `size` (the teacher's terminal: its
    stdin, stdout and stderr, where Textual draws)."""

    def __init__(self, tmp_path: Path, *options: str, size=(120, 40)) -> None:
        self.screen = pyte.Screen(*size)
        self.stream = pyte.ByteStream(self.screen)
        self._lock = threading.Lock()
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        env = dict(os.environ, XDG_STATE_HOME=str(tmp_path), PYTHONPATH=str(ROOT),
                   TERM="xterm-256color")
        with socket_port() as port:
            self.port = port
            self.process = subprocess.Popen(
                [sys.executable, "-c", "from mgtui.cli import entry; entry()", "serve",
                 "chain", "--web", "--teach", "--port", str(port), *options], cwd=ROOT,
                env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.master = master
        self.raw = b""  # everything the terminal got (the server's lines, the app's screens)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 1 << 16)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self.raw += data
                self.stream.feed(data)

    def text(self) -> str:
        with self._lock:
            return "\n".join(self.screen.display)

    async def wait_for(self, test, timeout: float = 30) -> bool:
        check = (lambda t: test in t) if isinstance(test, str) else test
        deadline = time.monotonic() + timeout
        while not check(self.text()):
            if time.monotonic() > deadline or self.process.poll() is not None:
                return check(self.text())
            await asyncio.sleep(0.1)
        return True

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    async def stop(self, sig=signal.SIGINT) -> int:
        """Send `sig` (if it still runs); its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return await asyncio.to_thread(self.process.wait, 20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return await asyncio.to_thread(self.process.wait, 10)


@pytest.fixture
async def teaching(tmp_path):
    servers = []

    def start(*options: str, **kwargs) -> TeachingWebServer:
        servers.append(TeachingWebServer(tmp_path, *options, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        await server.stop()
        os.close(server.master)


def on_screen(text: str):
    return lambda lines: text in "\n".join(lines)


async def test_a_browser_visitor_in_the_roster(teaching):
    server = teaching()
    assert await server.wait_for("step 0/15", 60), server.raw.decode(errors='replace')[-3000:]
    assert await server.wait_for("0 connected · 0 following"), server.text()
    browser = await Browser.open(server.port, "width=100&height=30", size=(100, 30))
    try:
        assert await browser.read_until(on_screen("step 0/15"))
        # its key footer, at 100x30 too (a browser's page starts without the app focus)
        assert await browser.read_until(lambda lines: lines[-1].startswith(FOOTER), 10), \
            "\n".join(browser.screen.display)
        assert await server.wait_for("1 connected · 1 following · 0 paused"), server.text()
        server.send("n")
        assert await browser.read_until(on_screen("step 1/15"), 10)
        server.send("R")
        assert await server.wait_for(lambda t: "browser 1" in t and "following" in t), \
            server.text()
        server.send("\x1b")
        assert await server.wait_for(lambda t: "The class:" not in t), server.text()
    finally:
        await browser.close()
    assert await server.wait_for("0 connected · 0 following · 0 paused · 1 gone"), server.text()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_visitors_key_footer_at_any_size(teaching, size):
    server = teaching()
    assert await server.wait_for("step 0/15", 60), server.raw.decode(errors='replace')[-3000:]
    browser = await Browser.open(server.port, f"width={size[0]}&height={size[1]}", size=size)
    try:
        assert await browser.read_until(lambda lines: lines[-1].startswith(FOOTER), 30), \
            "\n".join(browser.screen.display)
        server.send("n")  # (and after a step, its footer composed again)
        assert await browser.read_until(on_screen("step 1/15"), 10)
        assert await browser.read_until(lambda lines: lines[-1].startswith(FOOTER), 10), \
            "\n".join(browser.screen.display)
    finally:
        await browser.close()


@pytest.mark.parametrize("how", ["ctrl+c key", "SIGINT", "SIGTERM", "q then e"])
async def test_the_teaching_web_server_stops_with_status_0(teaching, how):
    """(issue 35: `--web --teach` exited 1 after ctrl+c.) On the teacher's terminal,
    ctrl+c is a key (the terminal is raw): it asks to end the class, as q does."""
    server = teaching()
    assert await server.wait_for("step 0/15", 60), server.raw.decode(errors="replace")[-3000:]
    browser = await Browser.open(server.port)
    try:
        assert await browser.read_until(on_screen("step 0/15"))
        if how in ("ctrl+c key", "q then e"):
            server.send("\x03" if how == "ctrl+c key" else "q")
            assert await server.wait_for("End the class?", 30), server.text()
            server.send("e")
            assert await browser.read_until(on_screen("the class has ended"), 10)
            status = await asyncio.to_thread(server.process.wait, 20)
        else:
            status = await server.stop(getattr(signal, how))
            assert await browser.read_until(on_screen("the server is stopping"), 10)
    finally:
        await browser.close()
    assert status == 0, (status, server.text())
