"""`mgtui serve --web`: the follow mode across processes (the hub and a visitor's
classroom), and the server answering a browser on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("textual_serve")

from mgtui.session.follow import Classroom, Follower  # noqa: E402
from mgtui.serve.web import Hub, RemoteClassroom  # noqa: E402
from mgtui.session import Position  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


async def test_a_visitor_follows_the_teacher_over_the_hub_and_a_late_one_lands_on_its_step(
        tmp_path):
    room = Classroom()
    hub = Hub(room)
    path = str(tmp_path / "hub.sock")
    server = await asyncio.start_unix_server(hub.visitor, path=path)
    try:
        room.publish(Position(3, 1, "source", "chain.py"))
        visitor = await asyncio.to_thread(RemoteClassroom, path)
        assert visitor.position == Position(3, 1, "source", "chain.py")  # late: lands there
        student = Follower(visitor)
        heard = []
        visitor.subscribe(lambda p: heard.append(student.heard(p)))
        room.publish(Position(4, 2, "notes", "chain.py"))
        for _ in range(50):
            await asyncio.sleep(0.05)
            if heard:
                break
        assert heard == [Position(4, 2, "notes", "chain.py")]
        visitor.publish(Position(9))  # a visitor cannot lead the class
        await asyncio.sleep(0.1)
        assert room.position == Position(4, 2, "notes", "chain.py")
    finally:
        server.close()
        await server.wait_closed()


def test_the_web_server_answers_on_loopback(tmp_path):
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    with socket_port() as port:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from mgtui.cli import entry; entry()", "serve", "chain",
             "--web", "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
    try:
        page = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read().decode()
                break
            except OSError:
                time.sleep(0.3)
        assert "mgtui" in page and re.search(r"ws://127\.0\.0\.1:\d+/ws", page), page[:500]
        # a browser's session: its own process, drawing the lesson over the websocket
        assert asyncio.run(browser_sees(port, b"step 0/15")), "no lesson in the browser"
    finally:
        proc.terminate()
        proc.wait(10)


async def browser_sees(port: int, text: bytes) -> bool:
    import aiohttp

    got = b""
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(f"http://127.0.0.1:{port}/ws?width=80&height=24") as ws:
            await ws.send_str(json.dumps(["resize", {"width": 80, "height": 24}]))
            try:
                async with asyncio.timeout(30):
                    async for message in ws:
                        data = message.data
                        got += data if isinstance(data, bytes) else data.encode()
                        if text in got:
                            return True
            except TimeoutError:
                pass
    return False


class socket_port:
    """A free port on loopback (closed again before the server takes it)."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def __exit__(self, *exc) -> None:
        pass
