"""What the class server's processes say to each other (mgtui/serve/workers.py): one
frozen dataclass a message, and one codec (`encode`, `decode`) for the wire, where each
is a JSON object `{"kind": KIND, FIELD: VALUE, ...}` in one packet of a Unix socket pair
(or one line of a browser visitor's socket, mgtui/serve/web.py). What a classroom says
(the quiz, who leads: `mgtui.session.follow.News`) and where the teacher is (its
`TeacherView`) are the session's own dataclasses, sent as they are.

  either way        quiz mode: `QuizOn`, `Answer`, `Reveal` (a worker's to the front,
                    which keeps the class's quiz and tells the other workers; a worker
                    that starts late gets all of it: `QuizState`); who leads: `Lead`
                    (a worker's session leads now; "" none does any more) and
                    `LeadElsewhere` (from the front: a session of another process leads,
                    so none of this one does); `PositionMessage` (the teacher's: from the
                    worker whose session leads, to the front and the other workers);
                    `End` (a teacher has ended the class)
  front -> worker   `Connect` + the client's socket; `Elsewhere` (sessions in the other
                    workers, for the limits); `Others` (their rows, for the roster);
                    `Join` (what students type, for a teacher's console); `Evict` (close
                    a login in progress from that address: every connection is taken);
                    `Retire` (no more connections will come: end when empty);
                    `LessonReady` (a lesson recorded since the worker was forked)
  worker -> front   `Ready` once warmed up; `Count` (connections, sessions, logins in
                    progress by address, connections handed over it has counted, seats);
                    `Roster` (its sessions); `Retiring` (its class has left: it would end)
  front -> zygote   `Fork` + the worker's end of its link

A packet that is not one of these, or has a field of the wrong type, cannot come from
mgtui: `decode` logs a line saying so and reads it as `Nothing`, which every side
ignores.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from typing import Union

from mgtui.session import Position
from mgtui.session.follow import (LINE_CHARS, ORIENTATIONS, Answer, Lead, QuizOn, QuizState,
                                  Reveal, TeacherView)

log = logging.getLogger("mgtui.serve")

KINDS: dict[str, type] = {}


def kind(name: str):
    """Register a message class under `name`, its kind on the wire."""
    def register(cls: type) -> type:
        cls.KIND = name
        KINDS[name] = cls
        return cls
    return register


@dataclass(frozen=True)
class Nothing:
    """No message: nothing to read yet, or a packet that could not be read."""


# -- either way ------------------------------------------------------------------------------------
# (what a classroom says to the other processes: `mgtui.session.follow`'s `News`, as it is)
for _name, _news in (("quiz_on", QuizOn), ("answer", Answer), ("reveal", Reveal),
                     ("quiz_state", QuizState), ("lead", Lead)):
    kind(_name)(_news)


@kind("lead_elsewhere")
@dataclass(frozen=True)
class LeadElsewhere:
    name: str


@kind("position")
@dataclass(frozen=True)
class PositionMessage:
    position: TeacherView


@kind("end")
@dataclass(frozen=True)
class End:
    pass


# -- front -> worker -------------------------------------------------------------------------------
@kind("connect")
@dataclass(frozen=True)
class Connect:
    peer: str


@kind("elsewhere")
@dataclass(frozen=True)
class Elsewhere:
    sessions: int
    seats: Seats = field(default_factory=dict)


@kind("others")
@dataclass(frozen=True)
class Others:
    rows: list


@kind("join")
@dataclass(frozen=True)
class Join:
    command: str


@kind("evict")
@dataclass(frozen=True)
class Evict:
    address: str


@kind("retire")
@dataclass(frozen=True)
class Retire:
    pass


@kind("lesson")
@dataclass(frozen=True)
class LessonReady:
    """A lesson recorded since the worker was forked (`mgtui.serve.later`): its trace
    saved by the front in `file`, and the lessons' order as named."""
    name: str
    file: str
    path: str
    title: str = ""
    message: str = ""
    seed: int = 0
    order: list = field(default_factory=list)


# -- worker -> front -------------------------------------------------------------------------------
@kind("ready")
@dataclass(frozen=True)
class Ready:
    pid: int


@kind("count")
@dataclass(frozen=True)
class Count:
    connections: int
    sessions: int
    logging_in: Counts = field(default_factory=dict)  # address -> not logged in yet
    taken: int = 0  # connections handed over it has counted so far
    seats: Seats = field(default_factory=dict)  # its sessions by login and by address


@kind("roster")
@dataclass(frozen=True)
class Roster:
    rows: list


@kind("retiring")
@dataclass(frozen=True)
class Retiring:
    pass


# -- front -> zygote -------------------------------------------------------------------------------
@kind("fork")
@dataclass(frozen=True)
class Fork:
    number: int


Message = Union[Nothing, QuizOn, Answer, Reveal, QuizState, Lead, LeadElsewhere,
                PositionMessage, End, Connect, Elsewhere, Others, Join, Evict, Retire,
                LessonReady, Ready, Count, Roster, Retiring, Fork]
QUIZ_NEWS = (QuizOn, Answer, Reveal)  # (as they happen)
QUIZ = (*QUIZ_NEWS, QuizState)
Counts = dict  # {KEY: N}: str keys, int counts (others are left out)
Seats = dict  # {"logins": Counts, "addresses": Counts}


# -- the codec -------------------------------------------------------------------------------------
class Malformed(ValueError):
    pass


def counts_of(seats: dict) -> dict:
    """`{"logins": {IDENTITY: N}, "addresses": {HOST: N}}` as another process sent it,
    with anything else left out."""
    return {kind: {k: n for k, n in seats.get(kind, {}).items()
                   if isinstance(k, str) and isinstance(n, int)}
            for kind in ("logins", "addresses") if isinstance(seats.get(kind), dict)}


def _int(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise Malformed("not a whole number")


def _float(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise Malformed("not a number")


def _typed(*types):
    def check(value):
        if isinstance(value, types):
            return value
        raise Malformed(f"not a {types[0].__name__}")
    return check


def _counts(value):
    return {k: n for k, n in _typed(dict)(value).items() if isinstance(n, int)}


def _seats(value):
    return counts_of(_typed(dict)(value))


def _rows(cls):
    def read(value):
        rows = []
        for row in _typed(list)(value):
            fields = dataclasses.fields(cls)
            if not isinstance(row, list) or len(row) != len(fields):
                raise Malformed(f"a row that is not {len(fields)} values")
            rows.append(cls(*(READ[f.type](v) for f, v in zip(fields, row))))
        return tuple(rows)
    return read


def _view(value) -> TeacherView:
    """A `TeacherView` from its fields on the wire (a position's alone reads as one
    with nothing shown). Raises ValueError on a malformed value."""
    data = _typed(dict)(value)
    place = Position.from_dict(data)
    graph, flip, pan = data.get("graph", False), data.get("flip"), data.get("pan", [0, 0])
    notes, pointer, line = data.get("notes", False), data.get("pointer"), data.get("line", "")
    if not isinstance(graph, bool) or not isinstance(notes, bool):
        raise ValueError("graph and notes must be true or false")
    if flip is not None and flip not in ORIENTATIONS:
        raise ValueError(f"flip must be LR, TB or null, not {flip!r}")
    if (not isinstance(pan, list) or len(pan) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 1 << 20
                       for n in pan)):
        raise ValueError(f"pan must be two cell counts, not {pan!r}")
    if pointer is not None and (not isinstance(pointer, int) or isinstance(pointer, bool)
                                or pointer < 0):
        raise ValueError(f"pointer must be a node id or null, not {pointer!r}")
    if not isinstance(line, str):
        raise ValueError("line must be a string")
    return TeacherView.of(place, graph=graph, flip=flip, pan=(pan[0], pan[1]), notes=notes,
                          pointer=pointer, line=line[:LINE_CHARS])


READ = {"int": _int, "float": _float, "str": _typed(str), "bool": _typed(bool),
        "list": _typed(list), "dict": _typed(dict), "Counts": _counts, "Seats": _seats,
        "TeacherView": _view, "tuple[Answer, ...]": _rows(Answer), "tuple[Reveal, ...]": _rows(Reveal)}
WRITE = {"TeacherView": dataclasses.asdict,
         "tuple[Answer, ...]": lambda rows: [list(dataclasses.astuple(row)) for row in rows],
         "tuple[Reveal, ...]": lambda rows: [list(dataclasses.astuple(row)) for row in rows]}


def encode(message: Message) -> bytes:
    """`message` as one packet."""
    data = {"kind": message.KIND}
    for f in dataclasses.fields(message):
        value = getattr(message, f.name)
        data[f.name] = WRITE.get(f.type, lambda v: v)(value)
    return json.dumps(data).encode()


def decode(data: bytes, where: str = "") -> Message:
    """The message in one packet; `Nothing`, and a line in the log saying why, if it
    is not one mgtui sends (`where`: who reads it, for that line)."""
    try:
        raw = json.loads(data)
        if not isinstance(raw, dict):
            raise Malformed("not a JSON object")
        cls = KINDS.get(raw.get("kind"))
        if cls is None:
            raise Malformed(f"an unknown kind of message: {str(raw.get('kind'))[:40]!r}")
        values = {}
        for f in dataclasses.fields(cls):
            if f.name in raw:
                try:
                    values[f.name] = READ[f.type](raw[f.name])
                except ValueError as exc:
                    raise Malformed(f"{cls.KIND}'s {f.name}: {exc}") from None
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise Malformed(f"{cls.KIND} without its {f.name}")
        return cls(**values)
    except ValueError as exc:  # (json's too)
        log.warning("%sa message it cannot read, ignored: %s", where, str(exc)[:200])
        return Nothing()
