"""A class spread over processes, one a CPU: the front process accepts every connection
and hands it to the worker process serving the fewest, and carries the teacher's
position from the worker whose session leads to all the others.

One process serves every session on one event loop, and one CPU: 30 students stepping
at a key a second kept it a third busy, so their steps waited for each other, and each
full collection of its heap stopped every session at once (bench/README.md, "A class
over SSH"). Each worker here is the one-process server (`mgtui.serve.server`) for its
share of the class, with its own heap.

Workers are forked by a zygote: a process forked once the lessons are recorded, which
does nothing but fork a worker when the front asks, so every worker starts from the
same recorded lessons, and none from the front's running event loop. A worker whose
class has left retires and a fresh one takes its place: a process gives back what its
sessions scattered over its heap only by ending (a long-lived server kept some 5 MB a
class, pages pinned by a few objects each).

Between the front and a worker: one Unix socket pair of packets, each a JSON object,
with the client's socket passed alongside a `connect`.

  either way        quiz mode: {"quiz_on": B}, {"answer": [LESSON, STUDENT, STEP, VALUE]},
                    {"reveal": [LESSON, STEP]} (a worker's to the front, which keeps the
                    class's quiz and tells the other workers; a worker that starts late
                    gets all of it: {"quiz_on", "answers", "reveals"});
                    who leads: {"lead": NAME} (a worker's session leads now; "" none
                    does any more) and {"lead_elsewhere": NAME} (from the front: a
                    session of another process leads, so none of this one does)
  front -> worker   {"connect": PEER} + its socket; {"position": {...}} (the teacher's);
                    {"elsewhere": N} (sessions in the other workers, for the limit);
                    {"join": COMMAND} (what students type, for a teacher's console);
                    {"end": true} (a teacher has ended the class);
                    {"retire": true} (no more connections will come: end when empty)
  worker -> front   {"ready": PID} once warmed up; {"count": [CONNECTIONS, SESSIONS],
                    "logging_in": {ADDRESS: N}, "taken": T} (connections not logged in
                    yet, by address; T: connections handed over it has counted so far);
                    {"position": {...}} when one of its sessions leads;
                    {"end": true} when one of its teachers ends the class;
                    {"retiring": true} (its class has left: it would end)
  front -> zygote   {"fork": NUMBER} + the worker's end of its link
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import sys
from collections import Counter, deque
from dataclasses import dataclass, field

from mgtui.session.follow import Classroom, Look
from mgtui.serve.later import heard_lesson
from mgtui.serve.limits import heaviest
from mgtui.serve.log import setup_log
from mgtui.session import Position

log = logging.getLogger("mgtui.serve")

PACKET = 1 << 16  # bytes: more than any message
STOP_WAIT = 10.0  # seconds for the workers to end their sessions when the server stops
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


def counts_of(seats: dict) -> dict:
    """`{"logins": {IDENTITY: N}, "addresses": {HOST: N}}` as another process sent it,
    with anything else left out."""
    return {kind: {k: n for k, n in seats.get(kind, {}).items()
                   if isinstance(k, str) and isinstance(n, int)}
            for kind in ("logins", "addresses") if isinstance(seats.get(kind), dict)}


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
        self.relay = lambda message: send(link, message)  # (the quiz, who leads)
        self.tag = f"{number}-"

    def publish(self, position: Position) -> None:
        if position != self.position:
            super().publish(position)
            send(self._link, {"position": position.to_dict()})

    def heard(self, position: Position) -> None:
        super().publish(position)

    def changed(self, roster: bool = True) -> None:
        super().changed(roster)
        if roster and not self._roster_due:  # (once a turn of the loop, however many moved)
            self._roster_due = True
            asyncio.get_running_loop().call_soon(self._send_roster)

    def _send_roster(self) -> None:
        self._roster_due = False
        send(self._link, {"roster": self.here()})

    def told(self, message: dict) -> None:
        """What the front says of the class: what students type, the sessions of the
        other workers, its end."""
        if "others" in message:
            self.set_others(message["others"])
        if isinstance(message.get("join"), str):
            self.join_command = message["join"]
        if message.get("end"):  # (the class has ended in another process)
            Classroom.end(self)
        self.told_quiz(message)
        if isinstance(message.get("lead_elsewhere"), str):
            self.led_elsewhere(message["lead_elsewhere"])

    def end(self) -> None:
        """A teacher of this worker ends the class: the front ends it everywhere."""
        if not self.ended:
            send(self._link, {"end": True})
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
    retiring: dict[str, object] = {"served": False, "allowed": False, "timer": None}

    def empty() -> bool:
        return not (klass.connections or klass.sessions or tasks)

    def counted() -> None:
        send(link, {"count": [klass.connections, len(klass.sessions)],
                    "logging_in": dict(klass.logging_in), "taken": klass.taken,
                    "seats": klass.seats()})
        retiring["served"] = retiring["served"] or bool(klass.sessions)
        timer = retiring["timer"]
        if timer is not None:
            timer.cancel()
            retiring["timer"] = None
        if retiring["served"] and empty():
            if retiring["allowed"]:
                done.set()
            else:
                retiring["timer"] = loop.call_later(RETIRE_AFTER, ask_to_retire)

    def ask_to_retire() -> None:
        retiring["timer"] = None
        if empty():
            log.info("the class has left: this worker retires, a fresh one takes its place")
            send(link, {"retiring": True})

    klass.on_count = counted

    def heard() -> None:
        message, fds = receive(link)
        if message is None:
            done.set()
            loop.remove_reader(link)
            return
        if message.get("retire"):  # (anything handed over before came first)
            retiring["allowed"] = True
            if empty():
                done.set()
        for fd in fds:
            sock = socket.socket(fileno=fd)
            if "connect" not in message:  # (a socket nobody asked to serve)
                sock.close()
                continue
            task = loop.create_task(serve_connection(klass, sock, key))
            tasks.add(task)
            task.add_done_callback(lambda done: (tasks.discard(done), counted()))
        classroom.told(message)
        told_limits(klass, message)
        if isinstance(message.get("position"), dict):
            try:
                classroom.heard(Look.from_dict(message["position"]))
            except ValueError:
                log.warning("worker %d: a position it cannot read", number)

    loop.add_reader(link, heard)
    send(link, {"ready": os.getpid()})
    try:
        await done.wait()
    finally:
        loop.remove_reader(link)
        await server.close()
    return 0


def told_limits(klass, message: dict) -> None:
    """What the front says of the class's limits: the sessions of the other workers (in
    all, by login and by address), a login in progress to close (every connection taken);
    and a lesson recorded since this worker was forked (`mgtui.serve.later`)."""
    from mgtui.serve.server import evict

    heard_lesson(klass.lessons, message, klass.classroom)
    if isinstance(message.get("elsewhere"), int):
        klass.elsewhere = message["elsewhere"]
    if isinstance(message.get("seats"), dict):
        klass.seats_elsewhere = counts_of(message["seats"])
    if isinstance(message.get("evict"), str):
        evict(klass, message["evict"])


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
        message, fds = receive(link)
        if message is None:
            return 0
        number = message.get("fork")
        if not isinstance(number, int) or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            continue
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
        self._relaying = False
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
            asked = send(self.zygote, {"fork": self._numbers}, (worker_end.fileno(),))
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
        self.classroom.relay = lambda message: self._class_message("front", message)
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
        self._post(worker, {"evict": evicted})
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
        self._post(worker, {"connect": peer}, client)

    def _post(self, worker: Worker, message: dict, client: socket.socket | None = None) -> None:
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
                socket.send_fds(worker.link, [json.dumps(message).encode()],
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
        message, _fds = receive(worker.link)
        for fd in _fds:
            os.close(fd)
        if message is None:
            self._lost(worker)
            return
        if isinstance(message.get("ready"), int) and not worker.ready:
            worker.ready, worker.pid = True, message["ready"]
            log.info("worker %d (pid %d) ready", worker.number, worker.pid)
            self._post(worker, {"join": self.classroom.join_command})
            if self.classroom.position is not None:  # (a late joiner lands there)
                self._post(worker, {"position": self.classroom.position.to_dict()})
            self._post(worker, self.classroom.quiz_state())  # (the quiz so far)
            if self.lead_owner is not None:
                self._post(worker, {"lead_elsewhere": self.lead_name})
            self._counted()
            waiting, self.waiting = self.waiting, []
            for client, peer in waiting:
                self._hand_over(client, peer)
        if (message.get("retiring") and not worker.retiring and not self.stopped.is_set()
                and self._spawn()):  # (with no fresh one to come, it goes on serving)
            worker.retiring = True  # nothing more for it; a fresh one in its place
            self._post(worker, {"retire": True})
        count = message.get("count")
        if isinstance(count, list) and len(count) == 2 and all(isinstance(n, int) for n in count):
            worker.connections, worker.sessions = count
            logging_in, taken = message.get("logging_in"), message.get("taken")
            if isinstance(logging_in, dict):
                worker.logging_in = {host: n for host, n in logging_in.items()
                                     if isinstance(n, int)}
            if isinstance(message.get("seats"), dict):
                worker.seats = counts_of(message["seats"])
            if isinstance(taken, int) and taken > worker.taken:
                for _ in range(min(taken - worker.taken, len(worker.handed))):
                    worker.handed.popleft()
                worker.taken = taken
            self._counted()
        if isinstance(message.get("roster"), list):
            worker.roster = message["roster"]
            self._rosters()
        if message.get("end"):
            self.classroom.end()  # (`_ended` tells the workers)
        self._class_message(worker.number, message)
        if isinstance(message.get("position"), dict):
            for other in self.workers:
                if other is not worker and other.ready:
                    self._post(other, {"position": message["position"]})
            try:
                position = Look.from_dict(message["position"])
            except ValueError:
                return
            self._relaying = True  # (to the front's own sessions, not back to the workers)
            try:
                self.classroom.publish(position)
            finally:
                self._relaying = False

    def _class_message(self, source: int | str, message: dict) -> None:
        """Quiz mode and who leads, from a worker (`source`, its number) or the front's
        own teacher ("front"): kept here, and told to every other process."""
        quiz = {k: message[k] for k in ("quiz_on", "answer", "reveal") if k in message}
        if quiz:
            if source != "front":
                self.classroom.told_quiz(quiz)
            for other in self.workers:
                if other.number != source and other.ready:
                    self._post(other, quiz)
        name = message.get("lead")
        if not isinstance(name, str):
            return
        if name:  # (the last to claim leads: a take-over, or two teachers at once)
            self.lead_owner, self.lead_name = source, name
        elif self.lead_owner == source:
            self.lead_owner, self.lead_name = None, ""
        else:
            return  # (one that no longer led has left: the lead is elsewhere)
        for other in self.workers:
            if other.number != source and other.ready:
                self._post(other, {"lead_elsewhere": name})
        if source != "front":
            self.classroom.led_elsewhere(name)

    def _rosters(self) -> None:
        """Each worker (and the front's own teacher) knows the sessions of the others."""
        live = [w for w in self.workers if w.ready]
        self.classroom.set_others([row for w in live for row in w.roster])
        here = self.classroom.here()
        for worker in live:
            self._post(worker, {"others": here + [row for w in live if w is not worker
                                                  for row in w.roster]})

    def _ended(self) -> None:
        """The class has ended (here, or in a worker): every worker is told (its
        sessions tell their students), then the server stops."""
        if self.classroom.ended and not self.stopped.is_set():
            for worker in self.workers:
                if worker.ready:
                    self._post(worker, {"end": True})
            asyncio.get_running_loop().call_later(0.5, self.stopped.set)

    def _counted(self) -> None:
        """Every worker knows how many sessions the others have (the class's limit)."""
        live = [w for w in self.workers if w.ready]
        total = sum(w.sessions for w in live)
        for worker in live:
            seats = {kind: dict(sum((Counter(w.seats.get(kind, {})) for w in live
                                     if w is not worker), Counter()))
                     for kind in ("logins", "addresses")}
            self._post(worker, {"elsewhere": total - worker.sessions, "seats": seats})

    def _from_here(self, position: Position) -> None:
        if not self._relaying:
            for worker in self.workers:
                if worker.ready:
                    self._post(worker, {"position": position.to_dict()})

    def _lost(self, worker: Worker) -> None:
        if worker.gone:
            return
        worker.gone = True
        loop = asyncio.get_running_loop()
        loop.remove_reader(worker.link)
        loop.remove_writer(worker.link)
        worker.link.close()
        self.workers.remove(worker)
        untaken = [(client, m["connect"]) for m, client in worker.outbox if client is not None]
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
        self._class_message(worker.number, {"lead": ""})  # (its teacher, if one led, left)
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
