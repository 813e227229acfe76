"""A class spread over processes, one a CPU: the front process (`mgtui.serve.front`)
accepts every connection and hands it to the worker process serving the fewest, and
carries the teacher's view from the worker whose session leads to all the others. Here:
the link between them, a worker, and the zygote that forks the workers.

One process serves every session on one event loop, and one CPU: 30 students stepping
at a key a second kept it a third busy, so their steps waited for each other, and each
full collection of its heap stopped every session at once, the longest for 988 ms
(`bench/serve_load.py`; docs/teaching.md, "Workers"). Each worker here is the one-process server (`mgtui.serve.server`) for its
share of the class, with its own heap.

Workers are forked by a zygote: a process forked once the lessons are recorded, which
does nothing but fork a worker when the front asks, so every worker starts from the
same recorded lessons, and none from the front's running event loop. A worker whose
class has left retires and a fresh one takes its place: a process gives back what its
sessions scattered over its heap only by ending (a long-lived server kept some 5 MB a
class, pages pinned by a few objects each).

Between the front and a worker: one Unix socket pair of packets, each one of the
messages of `mgtui.serve.messages` (typed, with one codec), with the client's socket
passed alongside a `Connect`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys

from mgtui.session.follow import Classroom, TeacherView
from mgtui.serve.later import heard_lesson
from mgtui.serve.messages import (QUIZ, Connect, Count, Elsewhere, End, Evict, Fork, Join,
                                  LeadElsewhere, Message, Nothing, Others, PositionMessage,
                                  Ready, Retire, Retiring, Roster, decode, encode)
from mgtui.serve.log import setup_log

log = logging.getLogger("mgtui.serve")

PACKET = 1 << 16  # bytes: more than any message
RETIRE_AFTER = 2.0  # seconds a worker that has served waits, empty, before it retires


def supported() -> bool:
    """Whether this system can fork workers and hand them connections (packets of a
    Unix socket pair, with sockets passed: not on Windows, nor on macOS)."""
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        return False
    try:
        ends = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except (AttributeError, OSError):
        return False
    for end in ends:
        end.close()
    return True


def default_workers() -> int:
    """One worker a CPU, at most 8 (each holds the lessons and some 70 MB at rest); one
    where workers are not `supported`."""
    return max(1, min(os.cpu_count() or 1, 8)) if supported() else 1


def send(link: socket.socket, message: Message, fds: tuple[int, ...] = ()) -> bool:
    """One packet to the other side; False if it has gone."""
    try:
        socket.send_fds(link, [encode(message)], list(fds))
        return True
    except OSError:
        return False


def receive(link: socket.socket, where: str = "") -> tuple[Message | None, list[int]]:
    """One packet from the other side: (None, []) once it has gone. Nothing to read yet,
    or a packet that is no message of mgtui's (logged), reads as `Nothing`."""
    try:
        data, fds, _flags, _addr = socket.recv_fds(link, PACKET, 1)
    except (BlockingIOError, InterruptedError):
        return Nothing(), []
    except OSError:
        return None, []
    if not data:
        return None, []
    return decode(data, where), fds


def address_of(peer: str) -> str:
    """The address of a peer written ADDRESS:PORT."""
    return peer.rsplit(":", 1)[0]


# -- a worker ----------------------------------------------------------------------------------

class LinkedClassroom(Classroom):
    """A worker's classroom: a position published here (a session of this worker leads)
    also goes to the front, for the other workers; one heard from the front is published
    here only."""

    def __init__(self, link: socket.socket, number: int = 0) -> None:
        super().__init__()
        self._link = link
        self._roster_due = False
        self.relay = lambda news: send(link, news)  # (the quiz, who leads: as they are)
        self.tag = f"{number}-"

    def publish(self, position: TeacherView) -> None:
        if position != self.position:
            super().publish(position)
            send(self._link, PositionMessage(position))

    def heard(self, position: TeacherView) -> None:
        super().publish(position)

    def changed(self, roster: bool = True) -> None:
        super().changed(roster)
        if roster and not self._roster_due:  # (once a turn of the loop, however many moved)
            self._roster_due = True
            asyncio.get_running_loop().call_soon(self._send_roster)

    def _send_roster(self) -> None:
        self._roster_due = False
        send(self._link, Roster(self.here()))

    def told(self, message: Message) -> bool:
        """What the front says of the class (what students type, the sessions of the
        other workers, the quiz, who leads, where the teacher is, its end); False if
        `message` says none of that."""
        told = self.TOLD.get(type(message))
        if told is not None:
            told(self, message)
        return told is not None

    TOLD = {
        Others: lambda self, m: self.set_others(m.rows),
        Join: lambda self, m: setattr(self, "join_command", m.command),
        End: lambda self, m: Classroom.end(self),  # (the class has ended in another process)
        LeadElsewhere: lambda self, m: self.led_elsewhere(m.name),
        PositionMessage: lambda self, m: self.heard(m.position),
        **{quiz: lambda self, m: self.told_quiz(m) for quiz in QUIZ},
    }

    def end(self) -> None:
        """A teacher of this worker ends the class: the front ends it everywhere."""
        if not self.ended:
            send(self._link, End())
        super().end()


async def run_worker(number: int, link: socket.socket, lessons: dict, auth, args,
                     key) -> int:
    """Serve the connections the front hands over on `link` until it closes."""
    from mgtui.serve.server import (Class, Limits, serve_connection, start_class,
                                    start_worker_threads)
    from mgtui.serve.warm import warm_up_later

    setup_log(args.teach, number)
    loop = asyncio.get_running_loop()
    classroom = LinkedClassroom(link, number)
    klass = Class(lessons, auth, Limits.asked(args), classroom=classroom,
                  quiz_scores=getattr(args, "quiz_scores", None))  # (a teacher's W here)
    classroom.quiz_on = bool(getattr(args, "quiz", False))  # (answers counted per worker)
    await start_worker_threads()
    server = start_class(klass)
    server.warming = warm_up_later(klass, key, f"worker {number}: ")  # (ready meanwhile)
    done = asyncio.Event()  # the front has gone, or this worker retires
    tasks: set[asyncio.Task] = set()  # connections handed over, until they are served
    retirement = Retirement(lambda: not (klass.connections or klass.sessions or tasks),
                            done, link)

    def counted() -> None:
        send(link, Count(klass.connections, len(klass.sessions), dict(klass.logging_in),
                         klass.taken, klass.seats()))
        retirement.counted(bool(klass.sessions))

    klass.on_count = counted

    def connect(fds: list[int]) -> None:
        for fd in fds:
            task = loop.create_task(serve_connection(klass, socket.socket(fileno=fd), key))
            tasks.add(task)
            task.add_done_callback(lambda done: (tasks.discard(done), counted()))

    def heard() -> None:
        message, fds = receive(link, f"worker {number}: ")
        if message is None:
            done.set()
            loop.remove_reader(link)
            return
        if isinstance(message, Connect):
            connect(fds)
        else:
            for fd in fds:  # (a socket nobody asked to serve)
                os.close(fd)
        if isinstance(message, Retire):  # (anything handed over before came first)
            retirement.allow()
        elif not classroom.told(message):
            told_limits(klass, message)

    loop.add_reader(link, heard)
    send(link, Ready(os.getpid()))
    try:
        await done.wait()
    finally:
        loop.remove_reader(link)
        await server.close()
    return 0


class Retirement:
    """When a worker retires: once it has served, its class has left (`empty`) and the
    front, asked after RETIRE_AFTER, allows it (`Retire`: no more will come)."""

    def __init__(self, empty, done: asyncio.Event, link: socket.socket) -> None:
        self.empty, self.done, self.link = empty, done, link
        self.served = False  # a session has been served here
        self.allowed = False  # the front has said no more connections will come
        self.timer: asyncio.TimerHandle | None = None  # to ask the front

    def counted(self, serving: bool) -> None:
        """The worker's counts have changed (`serving`: it has sessions now)."""
        self.served = self.served or serving
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.served and self.empty():
            if self.allowed:
                self.done.set()
            else:
                self.timer = asyncio.get_running_loop().call_later(RETIRE_AFTER, self.ask)

    def ask(self) -> None:
        self.timer = None
        if self.empty():
            log.info("the class has left: this worker retires, a fresh one takes its place")
            send(self.link, Retiring())

    def allow(self) -> None:
        self.allowed = True
        if self.empty():
            self.done.set()


def told_limits(klass, message: Message) -> None:
    """What the front says of the class's limits: the sessions of the other workers (in
    all, by login and by address), a login in progress to close (every connection taken);
    and a lesson recorded since this worker was forked (`mgtui.serve.later`)."""
    from mgtui.serve.server import evict

    heard_lesson(klass.lessons, message, klass.classroom)
    if isinstance(message, Elsewhere):
        klass.elsewhere, klass.seats_elsewhere = message.sessions, message.seats
    elif isinstance(message, Evict):
        evict(klass, message.address)


def worker_main(number: int, link: socket.socket, lessons: dict, auth, args, key) -> int:
    """The forked worker process: ctrl+c is the front's to handle (it then closes the
    link, and the worker ends its sessions with a message)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        return asyncio.run(run_worker(number, link, lessons, auth, args, key))
    except Exception:  # noqa: BLE001 - logged; the front goes on with the other workers
        log.exception("worker %d failed", number)
        return 1


# -- the front ---------------------------------------------------------------------------------


def start_zygote(lessons: dict, auth, args, key, listener: socket.socket
                 ) -> tuple[socket.socket, int]:
    """Fork the zygote now (before any event loop or thread of this process starts):
    the process that forks each worker, with the lessons as they are now. Returns the
    front's end of its link, and its pid."""
    front_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            listener.close()
            front_end.close()
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # (its workers are reaped)
            code = zygote(zygote_end, lessons, auth, args, key)
        finally:
            os._exit(code)
    zygote_end.close()
    return front_end, pid


def zygote(link: socket.socket, lessons: dict, auth, args, key) -> int:
    """Fork a worker each time the front asks, until the front has gone."""
    while True:
        message, fds = receive(link, "the zygote: ")
        if message is None:
            return 0
        if not isinstance(message, Fork) or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            continue
        number = message.number
        pid = os.fork()
        if pid == 0:  # the worker: nothing of the zygote's but the lessons
            code = 1
            try:
                link.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                code = worker_main(number, socket.socket(fileno=fds[0]), lessons, auth,
                                   args, key)
            finally:
                logging.shutdown()
                os._exit(code)
        os.close(fds[0])
