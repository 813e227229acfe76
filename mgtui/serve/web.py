"""`mgtui serve --web`: the same lessons in a browser, through textual-serve.

textual-serve runs one process per visitor. So the lessons, recorded once, are saved as
binary traces for those processes to read (they run no scenario code), and the follow
mode travels over a Unix socket: this process keeps the `Classroom`, sends each of the
teacher's views to every visitor as a line (the class's message of it, one codec:
`mgtui.serve.messages`), and a visitor's process reads it back into the same
`TeacherView`. The teacher is `--teach`, in this terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shlex
import shutil
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from mgtui.serve.limits import INPUT_HELD, capped
from mgtui.session.follow import NAME_CHARS, Classroom, TeacherView
from mgtui.serve.log import setup_log

log = logging.getLogger("mgtui.serve")
MANIFEST = "lessons.json"


# -- the server's side -------------------------------------------------------------------------

def save_lessons(lessons: dict, directory: Path) -> None:
    """Each lesson's trace as a binary trace file, and their names and order."""
    from mgtui.trace.binary import dumpb

    order = []
    for i, (name, lesson) in enumerate(lessons.items()):
        file = f"{i:03d}.mgtrace"
        (directory / file).write_bytes(dumpb(lesson.trace))
        order.append({"name": name, "file": file, "path": str(lesson.path),
                      "title": lesson.title})
    (directory / MANIFEST).write_text(json.dumps(order))


class Hub:
    """The `Classroom` of a web class, and the visitors' sockets it writes positions to.
    Each visitor tells where it is (`RemoteClassroom.update`): on the teacher's roster
    and console as "browser N", off it when its socket closes (issue 35: the teacher
    saw "0 connected" while browsers followed)."""

    def __init__(self, classroom: Classroom) -> None:
        self.classroom = classroom
        self.writers: set[asyncio.StreamWriter] = set()
        self.arrived = 0  # visitors so far (their roster names: browser 1, browser 2, ...)
        classroom.subscribe(self._send)

    @staticmethod
    def line(view: TeacherView | None) -> bytes:
        """`view` as a line of the hub's socket: the class's message of it (one line of
        JSON); an empty line while no teacher has moved."""
        from mgtui.serve.messages import PositionMessage, encode

        return (encode(PositionMessage(view)) if view is not None else b"") + b"\n"

    async def visitor(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(self.line(self.classroom.position))  # a late joiner's first position
        self.writers.add(writer)
        number = None  # on the roster once it says where it is
        try:
            while line := await reader.readline():
                state = visitor_state(line)
                if state is None:
                    continue
                if number is None:
                    self.arrived += 1
                    number = self.classroom.enter(f"browser {self.arrived}")
                self.classroom.update(number, **state)
        except (OSError, ValueError):  # (a line past the reader's limit: not ours)
            pass
        finally:
            self.writers.discard(writer)
            writer.close()
            if number is not None:
                self.classroom.leave(number)

    def _send(self, view: TeacherView) -> None:
        data = self.line(view)
        for writer in list(self.writers):
            if writer.transport.get_write_buffer_size() > 1 << 20:  # not reading: let go
                writer.close()
                self.writers.discard(writer)
            else:
                writer.write(data)


def visitor_state(line: bytes) -> dict | None:
    """A visitor's line: its `following`, `step` and `lesson` (None if malformed)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    following, step, lesson = data.get("following"), data.get("step"), data.get("lesson")
    if (not isinstance(following, bool) or not isinstance(lesson, str)
            or not isinstance(step, int) or isinstance(step, bool) or step < 0):
        return None
    return {"following": following, "step": step, "lesson": lesson[:NAME_CHARS]}


LOOPBACK = ("127.0.0.1", "localhost", "::1")
IDLE_CHECK_EVERY = 5.0  # seconds
# A visitor's keys, as over SSH: at most INPUT_HELD characters waiting for its app, which
# takes KEYS_PER_SECOND of them a second (a step each, and a frame); past that they are
# dropped (a flood of 8 MB in 0.1 s kept a visitor's process stepping for minutes, past
# its browser's leaving, and past 800 MB).
KEYS_PER_SECOND = 100
END_GRACE = 5.0  # seconds a visitor's process has to end on SIGTERM before SIGKILL


def serve_web(lessons: dict, args) -> int:
    """Serve `lessons` to browsers until ctrl+c (or until the teacher's session ends),
    then remove the folder of the saved lessons."""
    try:
        from textual_serve.server import Server
    except ImportError:
        print("mgtui serve: --web needs textual-serve: pip install 'mgtui[serve]'",
              file=sys.stderr)
        return 2

    work = Path(tempfile.mkdtemp(prefix="mgtui-class-"))
    hub_path = str(work / "hub.sock")
    command = "exec " + " ".join(shlex.quote(part) for part in (  # (no shell in between)
        sys.executable, "-c", "from mgtui.serve.web import visitor; visitor()",
        "--lessons", str(work), "--hub", hub_path))
    port = 8000 if args.port is None else args.port
    server_class = class_web_server(Server, lessons, Classroom(), args, hub_path, port)
    if args.host not in LOOPBACK:
        print(f"mgtui serve: warning: --web has no login, and {args.host} lets in anyone who "
              "can reach it", file=sys.stderr)
    try:
        save_lessons(lessons, work)
        templates = offline_templates(Server, work / "templates")
        server_class(command, host=args.host, port=port, title="mgtui",
                     templates_path=templates).serve()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def offline_templates(Server: type, directory: Path) -> Path:
    """textual-serve's page, made to work offline: without the web font it loads from
    the internet (the browser's monospace font instead) and the SVG namespace URL.
    Returns the folder of templates to serve it from."""
    import re
    import inspect

    source = Path(inspect.getfile(Server)).parent / "templates"
    directory.mkdir(parents=True, exist_ok=True)
    for template in source.glob("*.html"):
        page = template.read_text(encoding="utf-8")
        page = re.sub(r"<link[^>]*?https?://[^>]*>", "", page, flags=re.S)
        page = re.sub(r'\s+xmlns="http://www\.w3\.org/2000/svg"', "", page)
        (directory / template.name).write_text(page, encoding="utf-8")
    return directory


def class_web_server(Server: type, lessons: dict, classroom: Classroom, args,
                     hub_path: str, port: int) -> type:
    """textual-serve's `Server` with the class's limits (a subclass made here, since
    textual-serve is imported only when --web is asked for)."""
    from aiohttp import web

    class ClassWebServer(Server):
        """textual-serve's server, with the class's limits: at most --max-sessions
        visitors (each is a process), each at most MAX_WIDTH x MAX_HEIGHT and ended
        after --idle-timeout, and only from this server's own page (`page_of_ours`)."""

        visitors = 0
        open_sockets: set = set()
        stopping = False  # a signal has stopped the server

        def initialize_logging(self) -> None:
            setup_log(args.teach)  # (to a file when this terminal is the teacher's session)

        async def on_startup(self, app) -> None:
            hub = Hub(classroom)
            self._hub = await asyncio.start_unix_server(hub.visitor, path=hub_path)
            os.chmod(hub_path, 0o600)
            print(f"mgtui serve: {len(lessons)} lesson{'s' if len(lessons) != 1 else ''} at http://{args.host}:{port} "
                  "(ctrl+c stops)", file=sys.__stderr__, flush=True)
            if args.teach:
                self._teacher = asyncio.get_running_loop().create_task(
                    teach(lessons, classroom, self))

        async def on_shutdown(self, app) -> None:
            await close_visitors(self.open_sockets, classroom.ended)

        async def handle_websocket(self, request):
            who = request.remote or "?"
            origin = request.headers.get("Origin")
            if origin is not None and not page_of_ours(origin, request.host, args.host, port):
                log.info("refused a visitor from %s: its page is on %s", who, origin)
                raise web.HTTPForbidden(text="mgtui: open the class from its own address")
            if self.visitors >= args.max_sessions:
                log.info("class full: refused a visitor from %s", who)
                return await refuse(request, f"the class is full ({args.max_sessions} "
                                             "sessions): try later")
            request, size = capped_request(request)
            self.visitors += 1
            log.info("visitor from %s (%dx%d)", who, *size)
            try:
                return await super().handle_websocket(request)
            finally:
                self.visitors -= 1
                log.info("visitor from %s left", who)

        async def _process_messages(self, websocket, app_service) -> None:
            watch = guard_visitor(websocket, app_service, args.idle_timeout * 60)
            self.open_sockets.add(websocket)
            try:
                await super()._process_messages(websocket, app_service)
            finally:  # (the browser has gone, or idled: its process ends, freeing its seat)
                self.open_sockets.discard(websocket)
                watch.cancel()
                end_later(app_service)

        def request_exit(self) -> None:  # (SIGINT, SIGTERM)
            self.stopping = True
            super().request_exit()

    return ClassWebServer


async def close_visitors(sockets: set, ended: bool) -> None:
    """Tell every visitor why, and close (each ends its process): aiohttp would otherwise
    wait for the browsers to leave."""
    because = b"the class has ended" if ended else b"the server is stopping"
    for websocket in list(sockets):
        try:
            await websocket.send_bytes(b"\r\nmgtui: " + because + b"\r\n")
            await websocket.close()
        except (OSError, RuntimeError):  # (one already gone)
            pass


def capped_request(request):
    """`request` with the window it asks for `capped` (80x24 if it asks none), and that
    size."""
    size = capped(number(request.query.get("width"), 80),
                  number(request.query.get("height"), 24))
    return request.clone(rel_url=request.rel_url.update_query(
        width=size[0], height=size[1])), size


async def teach(lessons: dict, classroom: Classroom, server) -> None:
    """The teacher's session, on this terminal: the class (the server) ends with it. Not
    when the server's stop ended it: a SIGINT sent then was a second GracefulExit while
    the server wound down, and the exit status 1 (issue 35)."""
    from mgtui.serve.app import ServedApp

    try:
        await ServedApp(lessons, classroom, teacher=True).run_async()
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        if not server.stopping:
            os.kill(os.getpid(), signal.SIGINT)


def guard_visitor(websocket, app_service, idle_timeout: float) -> asyncio.Task:
    """The browser's messages to its process, with each size `capped`, and an idle
    watch: nothing typed and nothing drawn for `idle_timeout` seconds ends it. Returns
    the watch, for the caller to cancel when the visitor leaves."""
    last = [time.monotonic()]
    resize, send, draw = (app_service.set_terminal_size, app_service.send_bytes,
                          app_service.remote_write_bytes)
    waiting = KeyBacklog()

    async def capped_resize(width, height) -> None:
        await resize(*capped(number(width, 80), number(height, 24)))

    async def typed(data: bytes) -> bool:
        last[0] = time.monotonic()
        taken = waiting.take(data)
        return await send(taken) if taken else True

    async def drawn(data: bytes) -> None:
        last[0] = time.monotonic()
        await draw(data)

    app_service.set_terminal_size = capped_resize
    app_service.send_bytes, app_service.remote_write_bytes = typed, drawn
    return asyncio.get_running_loop().create_task(
        close_when_idle(websocket, last, idle_timeout))


class KeyBacklog:
    """The keys a visitor's app has not taken yet, as far as the server can tell: it
    takes KEYS_PER_SECOND; what would take the backlog past INPUT_HELD is dropped
    (logged once a visitor)."""

    def __init__(self) -> None:
        self.held = 0.0  # characters
        self.at = time.monotonic()
        self.dropped = 0

    def take(self, data: bytes) -> bytes:
        now = time.monotonic()
        self.held = max(0.0, self.held - (now - self.at) * KEYS_PER_SECOND)
        self.at = now
        room = max(0, int(INPUT_HELD - self.held))
        if len(data) > room:
            cut = data[:room].decode("utf-8", "ignore").encode()  # (whole characters)
            if not self.dropped:
                log.info("a visitor's keys come faster than its session takes them: "
                         "past %d characters waiting they are dropped", INPUT_HELD)
            self.dropped += len(data) - len(cut)
            data = cut
        self.held += len(data)
        return data


ENDING: set[asyncio.Task] = set()  # visitors' processes being ended (`end_later`)


def end_later(app_service) -> None:
    """`end_visitor` in the background (its task kept until done)."""
    task = asyncio.get_running_loop().create_task(end_visitor(app_service))
    ENDING.add(task)
    task.add_done_callback(ENDING.discard)


async def end_visitor(app_service, grace: float = END_GRACE) -> None:
    """End a visitor's process whose browser has gone (or idled): SIGTERM, then SIGKILL
    if it has not ended within `grace` seconds (a process busy with a backlog of keys
    may not read its "quit" for minutes)."""
    process = getattr(app_service, "_process", None)
    if process is None or process.returncode is not None:
        return
    try:
        process.terminate()
        await asyncio.wait_for(process.wait(), grace)
    except ProcessLookupError:
        return
    except asyncio.TimeoutError:
        log.info("a visitor's process (pid %d) did not end on SIGTERM in %.0f s: killed",
                 process.pid, grace)
        try:
            process.kill()
        except ProcessLookupError:
            return
        await process.wait()


def page_of_ours(origin: str, host: str, served: str, port: int) -> bool:
    """Whether a websocket comes from this server's own page, by its `Origin`: the
    address the browser asked for (`host`, the request's Host), not another site's page
    that opens this class's websocket in the background. Served on loopback, both must
    be loopback names on its port (a site whose name points at 127.0.0.1 is not ours)."""
    page, asked = urlsplit(origin), urlsplit(f"//{host}")
    try:
        where = (page.hostname, page.port or {"http": 80, "https": 443}.get(page.scheme))
        asked_where = (asked.hostname, asked.port or where[1])
    except ValueError:  # (a port that is no number)
        return False
    if page.scheme not in ("http", "https") or not page.hostname:
        return False
    if served in LOOPBACK:
        return (where[0] in LOOPBACK and asked_where[0] in LOOPBACK
                and where[1] == asked_where[1] == port)
    return where == asked_where


async def refuse(request, text: str):
    """Tell a browser `text` on its terminal, and close."""
    from aiohttp import web

    websocket = web.WebSocketResponse()
    await websocket.prepare(request)
    await websocket.send_bytes(f"mgtui: {text}\r\n".encode())
    await websocket.close()
    return websocket


async def close_when_idle(websocket, last: list[float], idle_timeout: float) -> None:
    """Close `websocket` once `last[0]` (its last key or frame) is `idle_timeout` ago."""
    while True:
        await asyncio.sleep(min(IDLE_CHECK_EVERY, idle_timeout))
        if time.monotonic() - last[0] > idle_timeout:
            log.info("visitor closed after %.0f s idle", idle_timeout)
            await websocket.send_bytes(f"\r\nmgtui: closed after {idle_timeout:.0f} s idle\r\n"
                                       .encode())
            await websocket.close()
            return


def number(value: object, default: int) -> int:
    """A size a browser sent (a string in the address, a number in a message)."""
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return default


# -- a visitor's process ----------------------------------------------------------------------

class RemoteClassroom(Classroom):
    """A visitor's view of the web class's `Classroom`: the teacher's positions as they
    arrive on the hub's socket. (Visitors only listen: the teacher is in the server.)"""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._told: list[bytes] = []  # where this visitor is, for the hub (not yet sent)
        self._writer: asyncio.StreamWriter | None = None
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(5)
        self._sock.connect(path)
        first = b""
        while not first.endswith(b"\n"):
            chunk = self._sock.recv(4096)
            if not chunk:
                break
            first += chunk
        self._buffer = first
        self._reader: asyncio.Task | None = None
        self._take_lines()

    def _take_lines(self) -> None:
        from mgtui.serve.messages import PositionMessage, decode

        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            message = decode(line, "a visitor: ") if line else None
            if isinstance(message, PositionMessage):  # (a bad line is logged, skipped)
                Classroom.publish(self, message.position)

    def subscribe(self, listener):
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self._read())
        return super().subscribe(listener)

    async def _read(self) -> None:
        self._sock.setblocking(False)
        reader, self._writer = await asyncio.open_unix_connection(sock=self._sock)
        for line in self._told[-1:]:
            self._writer.write(line)
        self._told.clear()
        while chunk := await reader.read(4096):
            self._buffer += chunk
            self._take_lines()

    led = True  # (the web class's teacher is the server's terminal: the class ends with it)

    def publish(self, position: TeacherView) -> None:
        """(A visitor does not lead.)"""

    def enter(self, name: str, teacher: bool = False, identity: str = "") -> int:
        number = super().enter(name, teacher, identity)
        self.update(number)  # (on the hub's roster from now on)
        return number

    def update(self, number: int, **changes) -> None:
        """This visitor's session moved: the hub's roster hears where it is."""
        super().update(number, **changes)
        member = self.members.get(number)
        if member is None:
            return
        line = (json.dumps({"following": member.following, "step": member.step,
                            "lesson": member.lesson}) + "\n").encode()
        if self._writer is None:
            self._told.append(line)
        elif not self._writer.is_closing():
            self._writer.write(line)


def visitor(argv: list[str] | None = None) -> None:
    """One browser visitor's process: the saved lessons, following the hub's teacher."""
    parser = argparse.ArgumentParser(prog="mgtui serve --web (visitor)")
    parser.add_argument("--lessons", type=Path, required=True)
    parser.add_argument("--hub", required=True)
    args = parser.parse_args(argv)
    from mgtui.run.lessons import Lesson
    from mgtui.serve.app import ServedApp
    from mgtui.trace.binary import load

    lessons = {}
    for entry in json.loads((args.lessons / MANIFEST).read_text()):
        trace = load(args.lessons / entry["file"])
        trace.index.build_indexes(final=True)
        lessons[entry["name"]] = Lesson(entry["name"], Path(entry["path"]), entry["title"], trace)
    try:
        classroom: Classroom = RemoteClassroom(args.hub)
    except OSError:
        classroom = Classroom()  # the hub has gone: the lessons still show, unfollowed
    ServedApp(lessons, classroom).run()
