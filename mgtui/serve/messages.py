"""What the class server's processes say to each other (mgtui/serve/workers.py): one
frozen dataclass a message, and one codec (`encode`, `decode`) for the wire, where each
is a JSON object `{"kind": KIND, FIELD: VALUE, ...}` in one packet of a Unix socket pair.

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
from mgtui.session.follow import Look

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
@kind("quiz_on")
@dataclass(frozen=True)
class QuizOn:
    on: bool


@kind("answer")
@dataclass(frozen=True)
class Answer:
    lesson: str
    student: str
    step: int
    value: float
    name: str = ""


@kind("reveal")
@dataclass(frozen=True)
class Reveal:
    lesson: str
    step: int


@kind("quiz_state")
@dataclass(frozen=True)
class QuizState:
    """The quiz so far (`Classroom.quiz_state`), for a worker that starts late."""
    on: bool
    answers: Answers = ()
    reveals: Reveals = ()


@kind("lead")
@dataclass(frozen=True)
class Lead:
    name: str


@kind("lead_elsewhere")
@dataclass(frozen=True)
class LeadElsewhere:
    name: str


@kind("position")
@dataclass(frozen=True)
class PositionMessage:
    position: Position  # (read as a `Look`: a plain position's is one with nothing looked at)


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
Answers = tuple  # of `Answer`s, each a list on the wire (`Answer`'s fields in order)
Reveals = tuple  # of `Reveal`s, likewise
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


def _position(value):
    return Look.from_dict(_typed(dict)(value))  # (ValueError if malformed)


READ = {"int": _int, "float": _float, "str": _typed(str), "bool": _typed(bool),
        "list": _typed(list), "dict": _typed(dict), "Counts": _counts, "Seats": _seats,
        "Position": _position, "Answers": _rows(Answer), "Reveals": _rows(Reveal)}
WRITE = {"Position": lambda position: position.to_dict(),
         "Answers": lambda rows: [list(dataclasses.astuple(row)) for row in rows],
         "Reveals": lambda rows: [list(dataclasses.astuple(row)) for row in rows]}


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


# -- the classroom's words (mgtui.session.follow speaks in dicts) ---------------------------------
def from_classroom(said: dict) -> Message:
    """What a `Classroom` relays (`{"lead": NAME}`, `{"quiz_on": B}`, `{"answer": [...]}`,
    `{"reveal": [...]}`) as a message."""
    if "lead" in said:
        return Lead(said["lead"])
    if "quiz_on" in said:
        return QuizOn(said["quiz_on"])
    if "answer" in said:
        return Answer(*said["answer"])
    if "reveal" in said:
        return Reveal(*said["reveal"])
    raise ValueError(f"not a classroom's message: {sorted(said)}")


def quiz_state_of(state: dict) -> QuizState:
    """`Classroom.quiz_state`'s dict as a message."""
    return QuizState(state["quiz_on"], tuple(Answer(*row) for row in state["answers"]),
                     tuple(Reveal(*row) for row in state["reveals"]))


def for_classroom(message: Message) -> dict:
    """A quiz message (`QUIZ`) as `Classroom.told_quiz` reads it."""
    if isinstance(message, QuizOn):
        return {"quiz_on": message.on}
    if isinstance(message, Answer):
        return {"answer": [message.lesson, message.student, message.step, message.value,
                           message.name]}
    if isinstance(message, Reveal):
        return {"reveal": [message.lesson, message.step]}
    if isinstance(message, QuizState):
        return {"quiz_on": message.on,
                "answers": [for_classroom(a)["answer"] for a in message.answers],
                "reveals": [for_classroom(r)["reveal"] for r in message.reveals]}
    raise TypeError(f"not a quiz message: {message!r}")
