"""A class spread over processes, one a CPU: the front process accepts every connection
and hands it to the worker process serving the fewest, and carries the teacher's
position from the worker whose session leads to all the others.

One process serves every session on one event loop, and one CPU: 30 students stepping
at a key a second kept it a third busy, so their steps waited for each other, and each
full collection of its heap stopped every session at once (bench/README.md, "A class
over SSH"). Each worker here is the one-process server (`mgtui.serve.server`) for its
share of the class, with its own heap; the lessons were recorded once, before the
workers are forked, and every worker serves the same traces.

Between the front and a worker: one Unix socket pair of packets, each a JSON object,
with the client's socket passed alongside a `connect`.

  front -> worker   {"connect": PEER} + its socket; {"position": {...}} (the teacher's);
                    {"elsewhere": N} (sessions in the other workers, for the limit)
  worker -> front   {"ready": true} once warmed up; {"count": [CONNECTIONS, SESSIONS]};
                    {"position": {...}} when one of its sessions leads
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import sys
from dataclasses import dataclass

from mgtui.follow import Classroom
from mgtui.session import Position

log = logging.getLogger("mgtui.serve")

PACKET = 1 << 16  # bytes: more than any message
STOP_WAIT = 10.0  # seconds for the workers to end their sessions when the server stops


def default_workers() -> int:
    """One worker a CPU, at most 8 (each holds the lessons and some 70 MB at rest); one
    where processes cannot be forked."""
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def send(link: socket.socket, message: dict, fds: tuple[int, ...] = ()) -> bool:
    """One packet to the other side; False if it has gone."""
    try:
        socket.send_fds(link, [json.dumps(message).encode()], list(fds))
        return True
    except OSError:
        return False


def receive(link: socket.socket) -> tuple[dict | None, list[int]]:
    """One packet from the other side: (None, []) once it has gone. A malformed packet
    (it cannot come from mgtui) reads as an empty message."""
    try:
        data, fds, _flags, _addr = socket.recv_fds(link, PACKET, 1)
    except (BlockingIOError, InterruptedError):
        return {}, []
    except OSError:
        return None, []
    if not data:
        return None, []
    try:
        message = json.loads(data)
    except ValueError:
        message = {}
    return (message if isinstance(message, dict) else {}), fds


# -- a worker ----------------------------------------------------------------------------------

class LinkedClassroom(Classroom):
    """A worker's classroom: a position published here (a session of this worker leads)
    also goes to the front, for the other workers; one heard from the front is published
    here only."""

    def __init__(self, link: socket.socket) -> None:
        super().__init__()
        self._link = link

    def publish(self, position: Position) -> None:
        if position != self.position:
            super().publish(position)
            send(self._link, {"position": position.to_dict()})

    def heard(self, position: Position) -> None:
        super().publish(position)


async def run_worker(number: int, link: socket.socket, lessons: dict, auth, args,
                     key) -> int:
    """Serve the connections the front hands over on `link` until it closes."""
    from mgtui.serve.server import Class, Limits, serve_connection, start_class, warm_up

    from mgtui.serve.cli import setup_log

    setup_log(args.teach, number)
    loop = asyncio.get_running_loop()
    classroom = LinkedClassroom(link)
    klass = Class(lessons, auth, Limits(max_sessions=args.max_sessions,
                                        idle_timeout=args.idle_timeout * 60),
                  classroom=classroom)
    await warm_up(lessons, key)
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    server = start_class(klass)
    klass.on_count = lambda: send(link, {"count": [klass.connections, len(klass.sessions)]})
    front_gone = asyncio.Event()
    tasks: set[asyncio.Task] = set()

    def heard() -> None:
        message, fds = receive(link)
        if message is None:
            front_gone.set()
            loop.remove_reader(link)
            return
        for fd in fds:
            sock = socket.socket(fileno=fd)
            if "connect" not in message:  # (a socket nobody asked to serve)
                sock.close()
                continue
            task = loop.create_task(serve_connection(klass, sock, key))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if isinstance(message.get("elsewhere"), int):
            klass.elsewhere = message["elsewhere"]
        if isinstance(message.get("position"), dict):
            try:
                classroom.heard(Position.from_dict(message["position"]))
            except ValueError:
                log.warning("worker %d: a position it cannot read", number)

    loop.add_reader(link, heard)
    send(link, {"ready": True})
    try:
        await front_gone.wait()
    finally:
        await server.close()
    return 0


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

@dataclass
class Worker:
    number: int
    pid: int
    link: socket.socket
    ready: bool = False
    connections: int = 0  # handed over and not yet reported closed
    sessions: int = 0
    gone: bool = False


def fork_workers(count: int, lessons: dict, auth, args, key,
                 listener: socket.socket) -> list[Worker]:
    """`count` worker processes, forked now (before any event loop or thread of this
    process starts), each with its end of a link to this one."""
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(count)]
    workers = []
    sys.stdout.flush()
    sys.stderr.flush()
    for number, (front_end, worker_end) in enumerate(pairs):
        pid = os.fork()
        if pid == 0:  # the worker: nothing of the front's but its own link
            code = 1
            try:
                listener.close()
                for other_front, other_worker in pairs:
                    other_front.close()
                    if other_worker is not worker_end:
                        other_worker.close()
                code = worker_main(number, worker_end, lessons, auth, args, key)
            finally:
                logging.shutdown()
                os._exit(code)
        worker_end.close()
        workers.append(Worker(number, pid, front_end))
    return workers


class Front:
    """The front process: accepts, hands over, relays, and stops the workers."""

    def __init__(self, listener: socket.socket, workers: list[Worker],
                 classroom: Classroom) -> None:
        self.listener, self.workers, self.classroom = listener, workers, classroom
        self.stopped = asyncio.Event()
        self._relaying = False

    @property
    def serving(self) -> list[Worker]:
        return [w for w in self.workers if not w.gone]

    async def start(self, wait: float) -> bool:
        """Listen to the workers; True once every one is ready (at most `wait` s)."""
        loop = asyncio.get_running_loop()
        for worker in self.workers:
            loop.add_reader(worker.link, self._heard, worker)
        # a teacher in the front's own terminal (--teach) leads the workers' sessions too
        self.classroom.subscribe(self._from_here)
        deadline = loop.time() + wait
        while not all(w.ready or w.gone for w in self.workers) and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if not self.serving or not all(w.ready for w in self.serving):
            return False
        for worker in self.workers:
            log.info("worker %d (pid %d) ready", worker.number, worker.pid)
        self.listener.setblocking(False)
        loop.add_reader(self.listener, self._accept)
        return True

    def _accept(self) -> None:
        try:
            client, address = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            log.warning("accept failed: %s", exc)
            return
        with client:
            for worker in sorted(self.serving, key=lambda w: (w.connections, w.number)):
                if send(worker.link, {"connect": f"{address[0]}:{address[1]}"},
                        (client.fileno(),)):
                    worker.connections += 1
                    return
                self._lost(worker)
            log.error("no worker left to serve %s:%s", *address[:2])

    def _heard(self, worker: Worker) -> None:
        message, _fds = receive(worker.link)
        for fd in _fds:
            os.close(fd)
        if message is None:
            self._lost(worker)
            return
        if message.get("ready"):
            worker.ready = True
        count = message.get("count")
        if isinstance(count, list) and len(count) == 2 and all(isinstance(n, int) for n in count):
            worker.connections, worker.sessions = count
            total = sum(w.sessions for w in self.serving)
            for other in self.serving:
                send(other.link, {"elsewhere": total - other.sessions})
        if isinstance(message.get("position"), dict):
            for other in self.serving:
                if other is not worker:
                    send(other.link, {"position": message["position"]})
            try:
                position = Position.from_dict(message["position"])
            except ValueError:
                return
            self._relaying = True  # (to the front's own sessions, not back to the workers)
            try:
                self.classroom.publish(position)
            finally:
                self._relaying = False

    def _from_here(self, position: Position) -> None:
        if not self._relaying:
            for worker in self.serving:
                send(worker.link, {"position": position.to_dict()})

    def _lost(self, worker: Worker) -> None:
        if worker.gone:
            return
        worker.gone = True
        asyncio.get_running_loop().remove_reader(worker.link)
        worker.link.close()
        if self.stopped.is_set():
            return
        log.error("worker %d (pid %d) stopped: its sessions have ended", worker.number,
                  worker.pid)
        if not self.serving:
            log.error("no worker left: the server stops")
            self.stopped.set()

    async def stop(self) -> None:
        """Stop accepting, close every link (each worker ends its sessions, telling its
        students why, and exits), and wait for the workers (killed after STOP_WAIT)."""
        self.stopped.set()
        loop = asyncio.get_running_loop()
        try:
            loop.remove_reader(self.listener)
        except (ValueError, OSError):
            pass
        self.listener.close()
        for worker in self.workers:
            if not worker.gone:
                loop.remove_reader(worker.link)
                worker.gone = True
                worker.link.close()
        deadline = loop.time() + STOP_WAIT
        waiting = {w.pid for w in self.workers}
        while waiting and loop.time() < deadline:
            for pid in list(waiting):
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        waiting.discard(pid)
                except ChildProcessError:
                    waiting.discard(pid)
            await asyncio.sleep(0.05)
        for pid in waiting:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
