"""The server's warm-up: one session of each lesson run headless in the background once
the class is accepting students, and one SSH login to itself, so that the app's styles,
highlighter and the crypto libraries' code are loaded at start rather than in the first
student's session (and the server's memory at rest includes them). A student on their
way in goes first (issue 35: one who logged in at start waited 1.5-2.5 s more for the
warm-up's sessions, which share the process's event loop)."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Mapping

import asyncssh

from mgtui.run.lessons import Lesson
from mgtui.serve.heap import give_back_memory
from mgtui.serve.server import Class
from mgtui.serve.ssh_session import release_streams
from mgtui.session.follow import Classroom

log = logging.getLogger("mgtui.serve")

WARM_UP_STEPS = 40  # steps of each lesson the server takes headless at start
WARM_UP_GRACE = 1.0  # seconds a student who logs in at once has before the warm-up starts
FIRST_SCREEN_WAIT = 10.0  # seconds at most the warm-up waits for a student's first screen


async def warm_up(lessons: Mapping[str, Lesson], host_key=None, klass: Class | None = None
                  ) -> int:
    """Run one session headless for a moment, before anyone connects: the app's modules,
    styles and highlighter load once, at start, rather than in the first student's
    session (and the server's memory at rest includes them). With `host_key`, log in
    to itself once too (`warm_up_ssh`). A student of `klass` on their way in goes first,
    and once one has drawn here the warm-up stands down (`students_first`). Returns the
    lessons warmed."""
    from mgtui.serve.app import ServedApp

    async def walk(pilot) -> None:
        await pilot.pause()
        for key in (*"n" * WARM_UP_STEPS, "]", "N", "escape", "question_mark"):
            if not await students_first(klass):
                break
            await pilot.press(key)
        await pilot.pause()
        pilot.app.exit(0)

    warmed: list[str] = []  # (a lesson recorded meanwhile is warmed too: later.py)
    while (name := next((n for n in lessons if n not in warmed), None)) is not None:
        if not await students_first(klass):
            break
        warmed.append(name)
        app = ServedApp({name: lessons[name]}, Classroom(), teacher=True)
        try:
            await app.run_async(headless=True, size=(80, 24), auto_pilot=walk)
        except Exception:  # noqa: BLE001 - a warm-up that fails costs the first session time
            log.exception("warm-up session failed")
        release_streams(app)
    if host_key is not None and await students_first(klass):
        await warm_up_ssh(host_key)
    give_back_memory()
    return len(warmed)


async def students_first(klass: Class | None) -> bool:
    """Wait while a student of `klass` is on their way in (`Class.arriving`;
    FIRST_SCREEN_WAIT at most): the warm-up's sessions share this process's event loop,
    and a student who logged in at start waited 1.5-2.5 s more for them (issue 35).
    False once a session has drawn here: it has loaded what the warm-up would, and the
    warm-up's sessions would only hold up its first keys."""
    deadline = time.monotonic() + FIRST_SCREEN_WAIT
    while klass is not None and klass.arriving and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return klass is None or not klass.served


def warm_up_later(klass: Class, host_key=None, label: str = "") -> asyncio.Task:
    """`warm_up` in the background, once the class is accepting students: the first
    sessions may take a little longer, none waits for every lesson to be warmed
    (issue 23: 20-30 s of silence at start). Logs when it is done."""

    async def warm() -> None:
        started = time.monotonic()
        await asyncio.sleep(WARM_UP_GRACE)  # (a student who logs in at once goes first)
        warmed = await warm_up(klass.lessons, host_key, klass)
        klass.heap.settle()
        log.info("%swarmed up %d lesson%s in %.1f s", label, warmed,
                 "s" if warmed != 1 else "", time.monotonic() - started)

    return asyncio.get_running_loop().create_task(warm())


class _Anyone(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return False  # (no authentication: this server is one end of a socket pair)


async def warm_up_ssh(host_key) -> None:
    """One SSH connection to itself, on loopback: its key exchange, host key signature
    and ciphers map the code of the crypto libraries (some 6 MB of a worker process's
    memory) now rather than at the first student's login. A warm-up that fails costs
    that login the time, and nothing else."""
    serving = None
    try:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            client_end = socket.create_connection(listener.getsockname(), timeout=5)
            server_end, _ = listener.accept()
        client_end.setblocking(False)
        server_end.setblocking(False)
        serving = asyncio.ensure_future(asyncssh.run_server(
            server_end, server_factory=_Anyone, server_host_keys=[host_key]))
        async with asyncssh.connect(sock=client_end, known_hosts=None, username="warm-up",
                                    connect_timeout=10):
            pass
        (await asyncio.wait_for(serving, 10)).close()
    except Exception as exc:  # noqa: BLE001 - (see above)
        log.warning("warming up SSH failed: %s", exc)
    finally:
        if serving is not None and not serving.done():
            serving.cancel()
