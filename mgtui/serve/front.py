"""The front process of a class spread over processes (`mgtui.serve.workers`): it asks
the zygote for workers, accepts every connection and hands it to the worker serving the
fewest, relays the teacher's view, the quiz and who leads between them, replaces the
workers that retire, and stops them all.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections import Counter, deque
from dataclasses import dataclass, field

from mgtui.serve.limits import heaviest
from mgtui.serve.messages import (QUIZ_NEWS, Connect, Count, Elsewhere, End, Evict, Fork, Join,
                                  Lead, LeadElsewhere, Message, Others, PositionMessage, Ready,
                                  Retire, Retiring, Roster, encode)
from mgtui.serve.workers import address_of, receive, send
from mgtui.session.follow import Classroom, TeacherView

log = logging.getLogger("mgtui.serve")

STOP_WAIT = 10.0  # seconds for the workers to end their sessions when the server stops


@dataclass
class Worker:
    number: int
    link: socket.socket
    pid: int = 0  # (known once it is ready)
    ready: bool = False
    retiring: bool = False  # no more connections for it: it ends once empty
    connections: int = 0  # open, as it last reported
    sessions: int = 0
    logging_in: dict = field(default_factory=dict)  # address -> not logged in yet, as above
    taken: int = 0  # connections handed over that it had counted, as it last reported
    # the peers of the connections handed over since (its counts are always a little
    # behind: a burst of connections must not slip between them)
    handed: deque = field(default_factory=deque)
    gone: bool = False  # (its link closed; the front's list no longer holds it)
    # what the front has for it and it has not taken yet (its link full: a worker stuck
    # for a while); the client socket of a connection stays open until handed over
    outbox: deque = field(default_factory=deque)
    roster: list = field(default_factory=list)  # its sessions, as it last reported
    seats: dict = field(default_factory=dict)  # its sessions by login and by address, as above


class Front:
    """The front process: asks the zygote for workers, accepts, hands over, relays,
    replaces the workers that retire, and stops them all."""

    def __init__(self, listener: socket.socket, zygote: tuple[socket.socket, int], count: int,
                 classroom: Classroom, max_connections: int = 130,
                 logins_per_address: int = 10) -> None:
        self.listener, (self.zygote, self.zygote_pid), self.count = listener, zygote, count
        self.classroom = classroom
        self.max_connections = max_connections  # open, logged in or not, in all workers
        self.logins_per_address = logins_per_address  # not logged in yet, in all workers
        self.workers: list[Worker] = []
        self.waiting: list[tuple[socket.socket, str]] = []  # clients while none is ready
        self.stopped = asyncio.Event()
        self._from_workers: TeacherView | None = None  # the last position a worker sent
        self._numbers = 0
        self.lead_owner: int | str | None = None  # the worker whose session leads ("front")
        self.lead_name = ""

    @property
    def serving(self) -> list[Worker]:
        return [w for w in self.workers if w.ready and not w.retiring]

    def _spawn(self) -> bool:
        """Ask the zygote for one more worker."""
        front_end, worker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with worker_end:
            asked = send(self.zygote, Fork(self._numbers), (worker_end.fileno(),))
        if not asked:
            front_end.close()
            log.error("the process that starts workers has gone: no worker can start")
            return False
        front_end.setblocking(False)  # (the front never waits for a worker: `_post`)
        worker = Worker(self._numbers, front_end)
        self._numbers += 1
        self.workers.append(worker)
        asyncio.get_running_loop().add_reader(front_end, self._heard, worker)
        return True

    async def start(self, wait: float) -> bool:
        """Start the workers; True once every one is ready (at most `wait` s)."""
        loop = asyncio.get_running_loop()
        # a teacher in the front's own terminal (--teach) leads the workers' sessions too
        self.classroom.subscribe(self._from_here)
        self.classroom.watch(self._ended, roster=False)
        self.classroom.relay = lambda news: self._class_message("front", news)
        for _ in range(self.count):
            if not self._spawn():
                return False
        deadline = loop.time() + wait
        while not all(w.ready for w in self.workers) and loop.time() < deadline:
            await asyncio.sleep(0.05)  # (one that dies meanwhile is replaced: `_lost`)
        if not self.workers or not all(w.ready for w in self.workers):
            return False
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
        host = address[0]
        peer = f"{host}:{address[1]}"
        held = sum(w.connections + len(w.handed) for w in self.workers) + len(self.waiting)
        if held >= self.max_connections and not self._room_made(host):
            log.info("too many connections: closed %s", peer)  # (the sessions go on)
            client.close()
            return
        if self._logging_in(host) >= self.logins_per_address:
            log.info("too many logins at once from %s: closed %s", host, peer)
            client.close()  # (one machine cannot hold every connection there is room for)
            return
        self._hand_over(client, peer)

    def _room_made(self, host: str) -> bool:
        """Every connection is taken: the worker with the most logins in progress from
        the address that has the most (more than `host`) closes its oldest one, as one
        process does (`mgtui.serve.server.evict`). Whether one is closed."""
        pending: dict[str, int] = {}  # (as `_logging_in` counts them)
        for worker in self.serving:
            for each, n in worker.logging_in.items():
                pending[each] = pending.get(each, 0) + n
            for peer in worker.handed:
                pending[address_of(peer)] = pending.get(address_of(peer), 0) + 1
        evicted = heaviest(pending, host)
        if evicted is None:
            return False
        worker = max(self.serving, key=lambda w: w.logging_in.get(evicted, 0))
        if worker.logging_in.get(evicted, 0) > 0:  # (as it will report: one closed each)
            worker.logging_in[evicted] -= 1
        worker.connections -= 1
        self._post(worker, Evict(evicted))
        return True

    def _logging_in(self, host: str) -> int:
        """Connections from `host` not logged in yet, in every worker (as each last
        reported, and those handed over since), and waiting for one."""
        return (sum(w.logging_in.get(host, 0) for w in self.workers)
                + sum(address_of(peer) == host for w in self.workers for peer in w.handed)
                + sum(address_of(peer) == host for _client, peer in self.waiting))

    def _hand_over(self, client: socket.socket, peer: str) -> None:
        """To the worker serving the fewest; while none is ready (all of them retiring
        and starting again, say), the client waits (its SSH handshake with it)."""
        serving = sorted(self.serving, key=lambda w: (bool(w.outbox),
                                                       w.connections + len(w.handed), w.number))
        if not serving:
            self.waiting.append((client, peer))
            return
        worker = serving[0]
        worker.handed.append(peer)  # (counted here until it reports it has counted it)
        self._post(worker, Connect(peer), client)

    def _post(self, worker: Worker, message: Message, client: socket.socket | None = None) -> None:
        """Send `message` (and `client`'s socket) to `worker`, in order: now, or when its
        link has room again. The front never blocks on a worker, so a worker stuck for a
        while holds up neither the others nor its own reports."""
        worker.outbox.append((message, client))
        if len(worker.outbox) == 1:
            self._flush(worker)

    def _flush(self, worker: Worker) -> None:
        loop = asyncio.get_running_loop()
        while worker.outbox and not worker.gone:
            message, client = worker.outbox[0]
            try:
                socket.send_fds(worker.link, [encode(message)],
                                [client.fileno()] if client is not None else [])
            except (BlockingIOError, InterruptedError):
                loop.add_writer(worker.link, self._flush, worker)
                return
            except OSError:
                self._lost(worker)
                return
            worker.outbox.popleft()
            if client is not None:
                client.close()
        if not worker.gone:
            loop.remove_writer(worker.link)

    def _heard(self, worker: Worker) -> None:
        message, fds = receive(worker.link, f"the front, from worker {worker.number}: ")
        for fd in fds:
            os.close(fd)
        if message is None:
            self._lost(worker)
            return
        heard = self.HEARD.get(type(message))
        if heard is not None:
            heard(self, worker, message)

    def _ready(self, worker: Worker, message: Ready) -> None:
        if worker.ready:
            return
        worker.ready, worker.pid = True, message.pid
        log.info("worker %d (pid %d) ready", worker.number, worker.pid)
        self._post(worker, Join(self.classroom.join_command))
        if self.classroom.position is not None:  # (a late joiner lands there)
            self._post(worker, PositionMessage(self.classroom.position))
        self._post(worker, self.classroom.quiz_state())  # (the quiz so far)
        if self.lead_owner is not None:
            self._post(worker, LeadElsewhere(self.lead_name))
        self._counted()
        waiting, self.waiting = self.waiting, []
        for client, peer in waiting:
            self._hand_over(client, peer)

    def _retiring(self, worker: Worker, message: Retiring) -> None:
        if (not worker.retiring and not self.stopped.is_set()
                and self._spawn()):  # (with no fresh one to come, it goes on serving)
            worker.retiring = True  # nothing more for it; a fresh one in its place
            self._post(worker, Retire())

    def _count(self, worker: Worker, message: Count) -> None:
        worker.connections, worker.sessions = message.connections, message.sessions
        worker.logging_in, worker.seats = message.logging_in, message.seats
        if message.taken > worker.taken:
            for _ in range(min(message.taken - worker.taken, len(worker.handed))):
                worker.handed.popleft()
            worker.taken = message.taken
        self._counted()

    def _roster(self, worker: Worker, message: Roster) -> None:
        worker.roster = message.rows
        self._rosters()

    def _end(self, worker: Worker, message: End) -> None:
        self.classroom.end()  # (`_ended` tells the workers)

    def _position(self, worker: Worker, message: PositionMessage) -> None:
        """A worker's session leads: its position goes to the other workers, and to the
        front's own sessions (not back to the workers: `_from_here`)."""
        for other in self.workers:
            if other is not worker and other.ready:
                self._post(other, message)
        self._from_workers = message.position
        self.classroom.publish(message.position)

    HEARD = {
        Ready: _ready, Retiring: _retiring, Count: _count, Roster: _roster, End: _end,
        PositionMessage: _position,
        **{kind: lambda self, worker, m: self._class_message(worker.number, m)
           for kind in (*QUIZ_NEWS, Lead)},
    }

    def _class_message(self, source: int | str, message: Message) -> None:
        """Quiz mode and who leads, from a worker (`source`, its number) or the front's
        own teacher ("front"): kept here, and told to every other process."""
        if isinstance(message, QUIZ_NEWS):
            if source != "front":
                self.classroom.told_quiz(message)
            for other in self.workers:
                if other.number != source and other.ready:
                    self._post(other, message)
        if not isinstance(message, Lead):
            return
        name = message.name
        if name:  # (the last to claim leads: a take-over, or two teachers at once)
            self.lead_owner, self.lead_name = source, name
        elif self.lead_owner == source:
            self.lead_owner, self.lead_name = None, ""
        else:
            return  # (one that no longer led has left: the lead is elsewhere)
        for other in self.workers:
            if other.number != source and other.ready:
                self._post(other, LeadElsewhere(name))
        if source != "front":
            self.classroom.led_elsewhere(name)

    def _rosters(self) -> None:
        """Each worker (and the front's own teacher) knows the sessions of the others."""
        live = [w for w in self.workers if w.ready]
        self.classroom.set_others([row for w in live for row in w.roster])
        here = self.classroom.here()
        for worker in live:
            self._post(worker, Others(here + [row for w in live if w is not worker
                                              for row in w.roster]))

    def _ended(self) -> None:
        """The class has ended (here, or in a worker): every worker is told (its
        sessions tell their students), then the server stops."""
        if self.classroom.ended and not self.stopped.is_set():
            for worker in self.workers:
                if worker.ready:
                    self._post(worker, End())
            asyncio.get_running_loop().call_later(0.5, self.stopped.set)

    def _counted(self) -> None:
        """Every worker knows how many sessions the others have (the class's limit)."""
        live = [w for w in self.workers if w.ready]
        total = sum(w.sessions for w in live)
        for worker in live:
            seats = {kind: dict(sum((Counter(w.seats.get(kind, {})) for w in live
                                     if w is not worker), Counter()))
                     for kind in ("logins", "addresses")}
            self._post(worker, Elsewhere(total - worker.sessions, seats))

    def _from_here(self, position: TeacherView) -> None:
        """The front's own teacher (`--teach`) is at `position`: every worker's sessions
        follow. (A position a worker sent, published here too, is not sent back.)"""
        if position is not self._from_workers:
            for worker in self.workers:
                if worker.ready:
                    self._post(worker, PositionMessage(position))

    def _lost(self, worker: Worker) -> None:
        if worker.gone:
            return
        worker.gone = True
        loop = asyncio.get_running_loop()
        loop.remove_reader(worker.link)
        loop.remove_writer(worker.link)
        worker.link.close()
        self.workers.remove(worker)
        untaken = [(client, m.peer) for m, client in worker.outbox if client is not None]
        worker.outbox.clear()
        for client, peer in untaken:  # (handed over, never taken: to another worker)
            if self.stopped.is_set():
                client.close()
            else:
                self._hand_over(client, peer)
        if self.stopped.is_set():
            return
        if worker.retiring:
            log.info("worker %d (pid %d) has retired", worker.number, worker.pid)
            return
        log.error("worker %d (pid %d) stopped: its sessions have ended; a fresh one "
                  "takes its place", worker.number, worker.pid)
        self._class_message(worker.number, Lead(""))  # (its teacher, if one led, left)
        self._counted()
        self._rosters()
        if not self._spawn() and not self.workers:
            log.error("no worker left: the server stops")
            self.stopped.set()

    async def stop(self) -> None:
        """Stop accepting, close every link (each worker ends its sessions, telling its
        students why, and exits), wait (STOP_WAIT at most) for the workers' links to
        close, then let the zygote go (it reaps the workers while it lives)."""
        self.stopped.set()
        loop = asyncio.get_running_loop()
        try:
            loop.remove_reader(self.listener)
        except (ValueError, OSError):
            pass
        self.listener.close()
        for client, _peer in self.waiting:
            client.close()
        workers = list(self.workers)
        for worker in workers:
            loop.remove_reader(worker.link)
            loop.remove_writer(worker.link)
            for _message, client in worker.outbox:
                if client is not None:
                    client.close()
            worker.outbox.clear()
            try:
                worker.link.shutdown(socket.SHUT_WR)  # (it sees the end, answers in kind)
            except OSError:
                pass
        deadline = loop.time() + STOP_WAIT
        for worker in workers:
            while loop.time() < deadline:
                message, fds = receive(worker.link)
                for fd in fds:
                    os.close(fd)
                if message is None:
                    break
                await asyncio.sleep(0.05)
            worker.link.close()
            worker.gone = True
            if loop.time() >= deadline and worker.pid:
                try:
                    os.kill(worker.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.zygote.close()
        while loop.time() < deadline + 1:
            try:
                if os.waitpid(self.zygote_pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            await asyncio.sleep(0.02)
