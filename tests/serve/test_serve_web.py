"""`mgtui serve --web`: the follow mode across processes (the hub and a visitor's
classroom), and the server answering a browser on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("textual_serve")
pyte = pytest.importorskip("pyte")

from mgtui.session.follow import Classroom, Follower, TeacherView  # noqa: E402
from mgtui.serve.web import Hub, RemoteClassroom  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent


async def test_a_visitor_follows_the_teacher_over_the_hub_and_a_late_one_lands_on_its_step(
        tmp_path):
    room = Classroom()
    hub = Hub(room)
    path = str(tmp_path / "hub.sock")
    server = await asyncio.start_unix_server(hub.visitor, path=path)
    try:
        room.publish(TeacherView(3, 1, "source", "chain.py"))
        visitor = await asyncio.to_thread(RemoteClassroom, path)
        assert visitor.position == TeacherView(3, 1, "source", "chain.py")  # late: lands there
        student = Follower(visitor)
        heard = []
        visitor.subscribe(lambda p: heard.append(student.heard(p)))
        room.publish(TeacherView(4, 2, "notes", "chain.py"))
        for _ in range(50):
            await asyncio.sleep(0.05)
            if heard:
                break
        assert heard == [TeacherView(4, 2, "notes", "chain.py")]
        visitor.publish(TeacherView(9))  # a visitor cannot lead the class
        await asyncio.sleep(0.1)
        assert room.position == TeacherView(4, 2, "notes", "chain.py")
    finally:
        server.close()
        await server.wait_closed()


class WebServer:
    """`mgtui serve chain --web OPTIONS...` in its own process, on a free loopback port."""

    def __init__(self, tmp_path: Path, *options: str, env: dict | None = None) -> None:
        env = dict(os.environ, XDG_STATE_HOME=str(tmp_path), PYTHONPATH=str(ROOT), **(env or {}))
        with socket_port() as port:
            self.port = port
            self.process = subprocess.Popen(
                [sys.executable, "-c", "from mgtui.cli import entry; entry()", "serve", "chain",
                 "--web", "--port", str(port), *options], cwd=ROOT, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                errors="backslashreplace")
        self.page = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                self.page = urllib.request.urlopen(f"http://127.0.0.1:{port}/",
                                                   timeout=2).read().decode()
                break
            except OSError:
                time.sleep(0.3)

    def stop(self) -> str:
        """Stop it (ctrl+c); its log."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        return self.process.stderr.read()


@pytest.fixture
def web(tmp_path):
    servers = []

    def start(*options: str, **kwargs) -> WebServer:
        servers.append(WebServer(tmp_path, *options, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


async def test_the_web_server_answers_on_loopback(web):
    server = web()
    assert "mgtui" in server.page and re.search(r"ws://127\.0\.0\.1:\d+/ws", server.page), \
        server.page[:500]
    # a browser's session: its own process, drawing the lesson over the websocket
    browser = await Browser.open(server.port)
    try:
        assert await browser.read_until(lambda lines: "step 0/15" in "".join(lines)), \
            "no lesson in the browser"
    finally:
        await browser.close()


class Browser:
    """A browser's websocket to the class, its terminal a `pyte` screen of `size`."""

    def __init__(self, session, ws, size: tuple[int, int]) -> None:
        self.session, self.ws = session, ws
        self.screen = pyte.Screen(*size)
        self.stream = pyte.ByteStream(self.screen)
        self.closed = False

    @classmethod
    async def open(cls, port: int, query: str = "width=80&height=24",
                   size: tuple[int, int] = (80, 24), headers: dict | None = None) -> Browser:
        import aiohttp

        session = aiohttp.ClientSession()
        try:
            ws = await session.ws_connect(f"http://127.0.0.1:{port}/ws?{query}",
                                          headers=headers or {})
        except BaseException:
            await session.close()
            raise
        return cls(session, ws, size)

    async def read_until(self, test, timeout: float = 30) -> bool:
        """Run the output through the screen until `test(screen lines)` holds."""
        import aiohttp

        try:
            async with asyncio.timeout(timeout):
                while not test(self.screen.display):
                    message = await self.ws.receive()
                    if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED,
                                        aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.ERROR):
                        self.closed = True
                        return test(self.screen.display)
                    data = message.data
                    if isinstance(data, bytes):
                        self.stream.feed(data)
        except TimeoutError:
            pass
        return test(self.screen.display)

    async def send(self, *envelope) -> None:
        await self.ws.send_str(json.dumps(list(envelope)))

    async def close(self) -> None:
        await self.ws.close()
        await self.session.close()


def drawn_at(width: int):
    """A test of a screen: drawn `width` wide (the header's `step N/M` at its right edge,
    nothing right of it, nothing under row 200)."""
    def test(lines: list[str]) -> bool:
        steps = [line.rstrip() for line in lines if re.search(r"step \d+/\d+$", line.rstrip())]
        return (bool(steps) and width - 2 <= len(steps[0]) <= width
                and max(len(line.rstrip()) for line in lines) <= width
                and not "".join(lines[200:]).strip())
    return test


async def test_a_browser_asking_for_a_window_too_big_is_drawn_at_500_by_200(web):
    server = web()
    browser = await Browser.open(server.port, "width=2000&height=600", size=(600, 250))
    try:
        assert await browser.read_until(drawn_at(500)), browser.screen.display[0]
        await browser.send("resize", {"width": 400, "height": 100})
        browser.screen.resize(100, 400)
        assert await browser.read_until(drawn_at(400), 10), browser.screen.display[0]
        browser.screen.resize(250, 600)
        await browser.send("resize", {"width": 30000, "height": "30000"})
        assert await browser.read_until(drawn_at(500), 10), browser.screen.display[0]
    finally:
        await browser.close()


class socket_port:
    """A free port on loopback (closed again before the server takes it)."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def __exit__(self, *exc) -> None:
        pass


def visitor_processes(server: WebServer) -> int:
    """The server's processes besides itself (each visitor's, and its shell)."""
    from sshclient import processes

    return len(processes(server.process.pid)) - 1


async def test_visitors_are_capped_by_max_sessions_and_a_freed_place_is_taken(web):
    server = web("--max-sessions", "2")
    drawn = lambda lines: "step 0/15" in "".join(lines)  # noqa: E731
    first, second = await Browser.open(server.port), await Browser.open(server.port)
    third = None
    try:
        assert await first.read_until(drawn) and await second.read_until(drawn)
        started = visitor_processes(server)
        third = await Browser.open(server.port)
        assert await third.read_until(lambda lines: "the class is full (2 sessions)" in
                                      "".join(lines), 10), third.screen.display[0]
        assert await third.read_until(lambda _: False, 5) is False and third.closed
        assert visitor_processes(server) == started  # no process for the one turned away
        await first.close()
        for _ in range(100):  # (its process ends: 10 s at most)
            if visitor_processes(server) < started:
                break
            await asyncio.sleep(0.1)
        fourth = await Browser.open(server.port)
        try:
            assert await fourth.read_until(drawn), fourth.screen.display[0]
        finally:
            await fourth.close()
    finally:
        for browser in (first, second, third):
            if browser is not None:
                await browser.close()


async def test_an_idle_visitor_is_ended_and_its_process_with_it(web):
    server = web("--idle-timeout", "0.05")  # minutes: 3 s
    browser = await Browser.open(server.port)
    try:
        assert await browser.read_until(lambda lines: "step 0/15" in "".join(lines))
        assert visitor_processes(server) >= 1
        assert await browser.read_until(lambda lines: "closed after 3 s idle" in
                                        "".join(lines), 15), browser.screen.display
        for _ in range(100):  # (its process ends: 10 s at most)
            if visitor_processes(server) == 0:
                break
            await asyncio.sleep(0.1)
        assert visitor_processes(server) == 0
    finally:
        await browser.close()


async def test_only_the_class_page_may_open_its_websocket(web):
    import aiohttp

    server = web()
    port = server.port
    for origin, host in (("http://evil.example", None),  # another site's page
                         (f"http://evil.example:{port}", f"evil.example:{port}"),  # rebinding
                         ("null", None)):
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await Browser.open(port, headers={"Origin": origin, **({"Host": host} if host else {})})
        assert refused.value.status == 403
    assert visitor_processes(server) == 0
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        browser = await Browser.open(port, headers={"Origin": origin})
        try:
            assert await browser.read_until(lambda lines: "step 0/15" in "".join(lines))
        finally:
            await browser.close()
    log = server.stop()
    assert "refused a visitor from 127.0.0.1: its page is on http://evil.example" in log


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_stopping_tells_the_visitors_ends_their_processes_and_removes_the_lessons(
        web, tmp_path, sig):
    temp = tmp_path / "tmp"
    temp.mkdir()
    server = web(env={"TMPDIR": str(temp)})
    assert [p.name.startswith("mgtui-class-") for p in temp.iterdir()] == [True]
    browser = await Browser.open(server.port)
    try:
        assert await browser.read_until(lambda lines: "step 0/15" in "".join(lines))
        from sshclient import processes

        visitors = processes(server.process.pid)[1:]
        assert visitors
        server.process.send_signal(sig)
        assert await browser.read_until(lambda lines: "the server is stopping" in
                                        "".join(lines), 10)
        assert await asyncio.to_thread(server.process.wait, 10) == 0
    finally:
        await browser.close()
    assert list(temp.iterdir()) == []
    # the visitors' processes end with the server (reaped a moment after: waited for)
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in visitors) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not any(Path(f"/proc/{pid}").exists() for pid in visitors)


def test_the_page_works_offline_it_names_no_other_server(web):
    server = web()
    assert "step" in server.page or "mgtui" in server.page
    ours = (f"http://127.0.0.1:{server.port}/", f"ws://127.0.0.1:{server.port}/")
    urls = re.findall(r"(?:https?|wss?)://[^\"'\s)<>]+", server.page)
    assert urls, server.page[:500]  # (its own scripts and websocket, by full URL)
    assert [url for url in urls if not url.startswith(ours)] == [], server.page[:2000]
    assert "fonts.googleapis.com" not in server.page
    assert "monospace" in server.page  # the browser's own font instead


async def test_a_visitor_who_floods_keys_then_leaves_is_ended_and_frees_its_seat(web):
    """8 MB of keys in a moment, then the websocket closes: the visitor's process kept
    stepping (151 -> 810 MB), past the idle timeout and SIGTERM, holding its seat. Now
    its keys are bounded as over SSH, and its process is ended (SIGTERM, then SIGKILL)."""
    server = web("--max-sessions", "1")
    browser = await Browser.open(server.port)
    drawn = lambda lines: "step 0/15" in "".join(lines)  # noqa: E731
    try:
        assert await browser.read_until(drawn)
        assert visitor_processes(server) >= 1
        chunk = json.dumps(["stdin", "np" * 32768])  # 64 KB a message
        for _ in range(128):  # 8 MB
            await browser.ws.send_str(chunk)
    finally:
        await browser.close()
    for _ in range(200):  # (SIGTERM, and SIGKILL 5 s later at most)
        if visitor_processes(server) == 0:
            break
        await asyncio.sleep(0.1)
    assert visitor_processes(server) == 0
    again = await Browser.open(server.port)  # its seat is free
    try:
        assert await again.read_until(drawn), again.screen.display
    finally:
        await again.close()
    log = server.stop()
    assert "past 4096 characters waiting they are dropped" in log, log
