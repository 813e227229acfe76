"""The class server: an asyncssh server whose every SSH session is its own debugger app,
in this process, on that connection's terminal (`mgtui.serve.ssh_session`). No shell, no
exec, no SFTP, no forwarding: a session's keystrokes can only move through the served
lessons. Here: the class's state and limits, logins, and the listening server.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import asyncssh

from mgtui.session.follow import Classroom
from mgtui.run.lessons import Lesson
from mgtui.serve.auth import Auth
from mgtui.serve.heap import SessionHeap
from mgtui.serve.scores import write_quiz_scores
from mgtui.serve.ssh_session import LessonSession
from mgtui.serve.unison import Unison
from mgtui.serve.limits import (CHANNEL_WINDOW, LOGINS_PER_ADDRESS, QUIET_TIMEOUT,
                                SESSIONS_PER_LOGIN, heaviest, identity_of, seat_refused,
                                sessions_per_address)

log = logging.getLogger("mgtui.serve")

IDLE_CHECK_EVERY = 5.0  # seconds
WORKER_THREADS = 6  # the event loop's (asyncio's default on 2 CPUs)


@dataclass
class Limits:
    max_sessions: int = 60
    idle_timeout: float = 3600.0  # seconds with no keys typed and nothing drawn
    login_timeout: float = 30.0
    logins_per_address: int = LOGINS_PER_ADDRESS  # open and not logged in, from one address
    quiet_timeout: float = QUIET_TIMEOUT  # seconds to start a login (mgtui/serve/limits.py)
    sessions_per_login: int = SESSIONS_PER_LOGIN  # open at once, one person's login
    sessions_per_address: int | None = None  # open at once from one address (None: any)

    @classmethod
    def asked(cls, args) -> Limits:
        """The limits `mgtui serve`'s options ask for."""
        per_address = getattr(args, "max_sessions_per_address", None)
        return cls(max_sessions=args.max_sessions, idle_timeout=args.idle_timeout * 60,
                   logins_per_address=args.max_logins_per_address,
                   sessions_per_login=getattr(args, "max_sessions_per_login",
                                              SESSIONS_PER_LOGIN),
                   sessions_per_address=per_address or sessions_per_address(args.max_sessions))

    @property
    def max_connections(self) -> int:
        """Connections open at once, logged in or not: twice the sessions, and ten."""
        return 2 * self.max_sessions + 10


@dataclass
class Class:
    """What every session of the server shares: the lessons, the classroom, the rules."""

    lessons: Mapping[str, Lesson]
    auth: Auth
    limits: Limits = field(default_factory=Limits)
    classroom: Classroom = field(default_factory=Classroom)
    sessions: set = field(default_factory=set)
    heap: SessionHeap = field(default_factory=SessionHeap)
    connections: int = 0  # open, logged in or not
    logging_in: Counter = field(default_factory=Counter)  # address -> open, not logged in
    taken: int = 0  # connections that have reached this process, counted above (or failed)
    elsewhere: int = 0  # sessions in the server's other processes (mgtui/serve/workers.py)
    # theirs by login and by address: {"logins": {IDENTITY: N}, "addresses": {HOST: N}}
    seats_elsewhere: dict = field(default_factory=dict)
    pending: list = field(default_factory=list)  # connections logging in, oldest first
    on_count: Callable[[], None] | None = None  # told when connections or sessions change
    quiz_scores: Path | None = None  # where the quiz's scores go when the class ends
    unison: Unison | None = None  # students showing the same thing, drawn once
    served: bool = False  # a session has drawn its first screen here (the warm-up stops)

    def __post_init__(self) -> None:
        self.classroom.traces = {name: lesson.trace for name, lesson in self.lessons.items()}
        if os.environ.get("MGTUI_UNISON", "1") != "0":  # (0: each session draws its own)
            self.unison = Unison(self.classroom)

    @property
    def full(self) -> bool:
        return len(self.sessions) + self.elsewhere >= self.limits.max_sessions

    @property
    def arriving(self) -> bool:
        """A student on their way in: a connection open here whose session has not drawn
        its first screen yet."""
        return self.connections > sum(1 for s in self.sessions if s.drawn)

    def counted(self) -> None:
        if self.on_count is not None:
            self.on_count()

    def seats(self) -> dict:
        """This process's sessions by login (one person's) and by address."""
        return {"logins": Counter(s.identity for s in self.sessions if s.identity),
                "addresses": Counter(s.host for s in self.sessions)}

    def seat_refused(self, identity: str, host: str) -> str:
        """Why a session of `identity` from `host` gets no seat ("" if it does)."""
        here, there = self.seats(), self.seats_elsewhere
        total = {kind: Counter(here[kind]) + Counter(there.get(kind, {}))
                 for kind in ("logins", "addresses")}
        limits = self.limits
        return seat_refused(total["logins"], total["addresses"], identity, host,
                            limits.sessions_per_login,
                            limits.sessions_per_address or limits.max_sessions)


class ClassSSHServer(asyncssh.SSHServer):
    """One connection: authentication, then at most one lesson session per channel."""

    def __init__(self, klass: Class) -> None:
        self.klass = klass
        self.conn = None
        self.peer = "?"
        self.host = "?"
        self.user = ""
        self.name = ""  # the key's comment, if it has one
        self.teacher = False  # set only in `auth_completed`, from what authenticated
        self.identity = ""  # (the same): the key's fingerprint, or "" (the login name)
        # What the last accepted credential would make this login: (teacher, name). A
        # key is looked at twice, when the client asks whether it would be taken (no
        # signature yet) and when it signs; asyncssh completes the login right after the
        # credential that succeeds, so the last one accepted is the one that logged in.
        # (and its identity: the key's fingerprint; "" for a password, the login name then)
        self._would_be: tuple[bool, str, str] = (False, "", "")
        self.logging_in = False  # counted in `klass.logging_in` under its address
        self.connections_counted = True  # in `klass.connections` (until it is closed)
        self._quiet: asyncio.TimerHandle | None = None

    def connection_made(self, conn) -> None:
        self.conn = conn
        host, port = (conn.get_extra_info("peername") or ("?", 0))[:2]
        self.host = host
        self.peer = f"{host}:{port}"
        klass, limits = self.klass, self.klass.limits
        klass.connections += 1
        klass.taken += 1  # (counted to the front once it is also in `logging_in`, or closed:
        # a count that has it taken and not logging in lets the front hand over one more)
        if klass.connections > limits.max_connections and not self._room_made():
            log.info("too many connections: closed %s", self.peer)
            conn.close()  # (a login flood: the class's own sessions are not affected)
            klass.counted()
            return
        if klass.logging_in[host] >= limits.logins_per_address:
            log.info("too many logins at once from %s: closed %s", host, self.peer)
            conn.close()  # (one machine cannot hold every connection the class has room for)
            klass.counted()
            return
        self.logging_in = True
        klass.pending.append(self)
        klass.logging_in[host] += 1
        klass.counted()
        self._quiet = asyncio.get_running_loop().call_later(limits.quiet_timeout, self._silent)
        log.info("connect %s", self.peer)

    def _room_made(self) -> bool:
        """Every connection is taken: close the oldest login in progress of the address
        that has the most, if it has more than this one's (a few machines holding
        logins open cannot lock the others out). Whether one was closed."""
        klass = self.klass
        while klass.connections > klass.limits.max_connections:
            if not evict(klass, heaviest(klass.logging_in, self.host)):
                return False
        return True

    def _silent(self) -> None:
        self._quiet = None
        log.info("nothing from %s for %.0f s: closed", self.peer, self.klass.limits.quiet_timeout)
        self.conn.close()

    def _logged_in_or_gone(self) -> None:
        if self._quiet is not None:
            self._quiet.cancel()
            self._quiet = None
        if self.logging_in:
            self.logging_in = False
            if self in self.klass.pending:
                self.klass.pending.remove(self)
            self.klass.logging_in[self.host] -= 1
            if self.klass.logging_in[self.host] <= 0:
                del self.klass.logging_in[self.host]
            self.klass.counted()

    def connection_lost(self, exc: Exception | None) -> None:
        self._logged_in_or_gone()
        if self.connections_counted:
            self.klass.connections -= 1
        self.klass.counted()
        log.info("disconnect %s%s", self.peer, f" ({exc})" if exc else "")

    def begin_auth(self, username: str) -> bool:
        self.user = username
        if self._quiet is not None:  # it has begun its login: login_timeout applies
            self._quiet.cancel()
            self._quiet = None
        return True  # always: there is no way in without a key or the password

    def password_auth_supported(self) -> bool:
        return self.klass.auth.password is not None

    def validate_password(self, username: str, password: str) -> bool:
        ok = self.klass.auth.password_ok(password)
        log.info("password %s for %s@%s", "accepted" if ok else "refused", username, self.peer)
        if ok:
            self._would_be = (False, "", "")  # a password login is always a student's
        return ok

    def public_key_auth_supported(self) -> bool:
        return self.klass.auth.takes_keys

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        role = self.klass.auth.role_of(key, self.host, self.host)
        if role is None:
            log.info("key refused for %s@%s", username, self.peer)
            return False
        # (Not the role yet: a client may ask about a key it cannot sign with, a
        # teacher's public key say, then log in some other way.)
        self._would_be = (role == "teacher", self.klass.auth.comment_of(key),
                          key.get_fingerprint())
        return True

    def auth_completed(self) -> None:
        self.teacher, self.name, fingerprint = self._would_be
        self.identity = identity_of(self.user, fingerprint)
        self._logged_in_or_gone()
        log.info("logged in %s@%s as %s", self.user, self.peer,
                 "teacher" if self.teacher else "student")

    def session_requested(self):
        return LessonSession(self.klass, self.user, self.peer, self.teacher, self.name,
                             self.identity)


def write_scores(klass: Class) -> str:
    """The quiz's scores per student, as CSV, to `klass.quiz_scores` (if asked for, and
    a quiz was run): what was done, in a line."""
    return write_quiz_scores(klass.classroom, klass.quiz_scores)


def evict(klass: Class, host: str | None) -> bool:
    """Close the oldest login in progress from `host` (None: none); whether one was."""
    for server in list(klass.pending) if host is not None else []:
        if server.host == host:
            log.info("every connection is taken: closed %s, logging in (its address has "
                     "%d logins in progress)", server.peer, klass.logging_in[host])
            server._logged_in_or_gone()
            klass.connections -= 1  # (counted now: its `connection_lost` comes later)
            server.connections_counted = False
            server.conn.close()
            return True
    return False


async def start_worker_threads() -> None:
    """The event loop's worker threads (asyncssh looks up each client's address in
    them), all started now: a thread keeps the `sys.stderr` it was started under, and
    one started during a session would keep that session's capture, and its app; five
    clients logging in at once started five."""
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(WORKER_THREADS, thread_name_prefix="mgtui-serve")
    all_started = threading.Barrier(WORKER_THREADS)
    await asyncio.gather(*(loop.run_in_executor(pool, all_started.wait, 10.0)
                           for _ in range(WORKER_THREADS)))
    loop.set_default_executor(pool)


class ClassServer:
    """A class being served: its port when it listens itself, and `close()` that ends
    every session first."""

    def __init__(self, klass: Class, acceptor, watch: asyncio.Task) -> None:
        self.klass, self._acceptor, self._watch = klass, acceptor, watch
        self.warming: asyncio.Task | None = None  # `warm_up_later`'s, until done
        self._closed = False

    @property
    def port(self) -> int:
        return self._acceptor.get_port()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._watch.cancel()
        if self.warming is not None and not self.warming.done():
            self.warming.cancel()
        tasks = [s.task for s in list(self.klass.sessions) if s.task is not None]
        because = ("the class has ended" if self.klass.classroom.ended
                   else "the server is stopping")
        for session in list(self.klass.sessions):
            session.end(because)
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        if self.klass.unison is not None:
            await self.klass.unison.close()
        write_scores(self.klass)
        if self._acceptor is not None:
            self._acceptor.close()
            await self._acceptor.wait_closed()
        self.klass.heap.stop()


def ssh_options(klass: Class, host_key) -> dict:
    """How every connection of the class is served: its own `ClassSSHServer`, no
    forwarding, no SCP or SFTP, a login timeout, keepalives, and a small window for
    what a client sends (its keys)."""
    return dict(server_factory=lambda: ClassSSHServer(klass), server_host_keys=[host_key],
                encoding="utf-8", line_editor=False, login_timeout=klass.limits.login_timeout,
                window=CHANNEL_WINDOW, agent_forwarding=False, x11_forwarding=False,
                allow_scp=False, sftp_factory=None, keepalive_interval=30,
                keepalive_count_max=4)


async def start_server(klass: Class, host: str, port: int, host_key) -> ClassServer:
    """Listen on `host`:`port` (0 picks a free port: `.port` says which), with an idle
    watch that ends sessions past the idle timeout."""
    logging.getLogger("asyncssh").setLevel(logging.WARNING)
    options = ssh_options(klass, host_key)
    acceptor = await asyncssh.create_server(options.pop("server_factory"), host, port,
                                            **options)
    if not klass.classroom.join_command:
        klass.classroom.join_command = join_command(host, acceptor.get_port())
    return start_class(klass, acceptor)


def join_command(host: str, port: int) -> str:
    """What a student types to join (HOST where the server listens on every address)."""
    shown = "HOST" if host in ("0.0.0.0", "::", "") else host
    return f"ssh -p {port} class@{shown}" if port != 22 else f"ssh class@{shown}"


def start_class(klass: Class, acceptor=None) -> ClassServer:
    """The class's idle watch, and its heap settled and watched: what serving needs
    besides connections (which come from `acceptor`, or are handed over one by one to
    `serve_connection`)."""
    logging.getLogger("asyncssh").setLevel(logging.WARNING)
    watch = asyncio.get_running_loop().create_task(_idle_watch(klass))
    klass.heap.settle()  # (the lessons and what the warm-up loaded)
    klass.heap.watch()
    klass.classroom.subscribe(lambda _position: klass.heap.class_step())
    klass.heap.after_step = functools.partial(lay_out_ahead, klass)
    return ClassServer(klass, acceptor, watch)


def lay_out_ahead(klass: Class) -> None:
    """In the quiet after a class's step: the Graph pane's pictures of the next step,
    laid out by one session of this process that follows the class with the pane open
    (or leads it): they are kept for all, and the teacher's `n` finds them made."""
    for session in list(klass.sessions):
        app = session.app
        if app is None or not app.is_running or getattr(app, "asleep", False):
            continue
        follower = getattr(app, "follower", None)
        following = getattr(app, "teacher", False) or getattr(follower, "following", False)
        debugger = getattr(app, "debugger", None)
        if following and debugger is not None and app.screen is debugger \
                and debugger.graph_shown:
            _lay_out_more(klass, debugger.lay_out_ahead())
            return


def _lay_out_more(klass: Class, forms) -> None:
    """One form of the look-ahead now, the next at the loop's next turn, until a new
    step of the class's comes (a key that comes meanwhile waits for one form, not
    for all: its step lays out what is left)."""
    if klass.heap.drawing:
        return
    try:
        next(forms)
    except StopIteration:
        return
    except Exception:  # noqa: BLE001 - a guess ahead that fails costs nothing
        log.debug("laying out ahead failed", exc_info=True)
        return
    asyncio.get_running_loop().call_soon(_lay_out_more, klass, forms)


async def serve_connection(klass: Class, sock, host_key) -> None:
    """Serve one client already connected on `sock` (accepted by another process) as
    if it had connected here. Its failures (a wrong password, a client gone) are the
    connection's own, logged by `ClassSSHServer`; one that fails before it is counted
    (`klass.taken`) is counted as taken all the same."""
    servers: list[ClassSSHServer] = []

    def server() -> ClassSSHServer:
        servers.append(ClassSSHServer(klass))
        return servers[-1]

    try:
        await asyncssh.run_server(sock, **{**ssh_options(klass, host_key),
                                           "server_factory": server})
    except (OSError, asyncssh.Error, asyncio.TimeoutError):
        sock.close()
        if not any(each.conn is not None for each in servers):
            klass.taken += 1
            klass.counted()


async def _idle_watch(klass: Class) -> None:
    while True:
        await asyncio.sleep(min(IDLE_CHECK_EVERY, klass.limits.idle_timeout))
        now = time.monotonic()
        for session in list(klass.sessions):
            if now - session.last_active > klass.limits.idle_timeout:
                session.end(f"closed after {klass.limits.idle_timeout:.0f} s idle")
