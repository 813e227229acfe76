"""Follow the teacher: a `Classroom` carries the teacher's `TeacherView` to every student's
`Follower`, which follows it until the student navigates on their own (and rejoins on `f`).

Headless and transport-free: the SSH server, the browser mode and the tests all use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from mgtui.session import Position
from mgtui.session.quiz import Quiz

LINE_CHARS = 200  # a teacher's line to the class is cut to this many characters
NAME_CHARS = 64  # a name on the roster is cut to this many characters
ORIENTATIONS = ("LR", "TB")


@dataclass(frozen=True)
class TeacherView(Position):
    """The teacher's `Position` and what the teacher shows the class: the Graph pane
    (open, its orientation, where it is panned), the notes full screen (`N`), the node
    pointed at (`*`) and the line sent to the class (`!`, until the next step). The one
    form of where the teacher is, from the teacher's key to each student's screen
    (across processes, `mgtui.serve.messages` writes and reads its fields)."""

    graph: bool = False
    flip: str | None = None  # "LR" or "TB" if the teacher turned it; None: by size
    pan: tuple[int, int] = (0, 0)  # the Graph pane's scroll, in cells
    notes: bool = False
    pointer: int | None = None  # a node id
    line: str = ""

    @classmethod
    def of(cls, position: Position, **shown: Any) -> TeacherView:
        """`position` with what is `shown`."""
        return cls(position.step, position.node, position.tab, position.lesson, **shown)


# -- what a classroom tells the class's other processes (its `relay`), and hears from them -----
@dataclass(frozen=True)
class QuizOn:
    on: bool


@dataclass(frozen=True)
class Answer:
    lesson: str
    student: str  # one login (`Member.identity`), or a session of its own
    step: int
    value: float
    name: str = ""  # as the roster shows the student


@dataclass(frozen=True)
class Reveal:
    lesson: str
    step: int


@dataclass(frozen=True)
class QuizState:
    """The quiz so far (`Classroom.quiz_state`), for a process that starts late."""

    on: bool
    answers: tuple[Answer, ...] = ()
    reveals: tuple[Reveal, ...] = ()


@dataclass(frozen=True)
class Lead:
    """A session of this process leads the class now (`name`; "": none does any more)."""

    name: str


QuizNews = QuizOn | Answer | Reveal | QuizState
News = QuizNews | Lead
Relay = Callable[[News], None]  # (mgtui/serve/workers.py sends it to the other processes)


def same_place(a: Position | None, b: Position | None) -> bool:
    """Whether `a` and `b` are the same step, node, tab and lesson (whatever is looked at)."""
    if a is None or b is None:
        return a is b
    return (a.step, a.node, a.tab, a.lesson) == (b.step, b.node, b.tab, b.lesson)

Listener = Callable[[TeacherView], None]
Watcher = Callable[[], None]


@dataclass
class Member:
    """One session of the class as the teacher's roster shows it."""

    name: str  # the SSH user name, or the key's comment
    teacher: bool = False  # logged in as a teacher (leading or watching)
    following: bool = True
    step: int = 0
    lesson: str = ""
    identity: str = ""  # one login's (a key's fingerprint, or the login name): its quiz answers
    gone: bool = False  # a student who has left (or dropped): on the roster as gone


GONE_KEPT = 200  # students who have left, kept on the roster (the latest)


@dataclass(frozen=True)
class Counts:
    """The students of the class (every session but the one leading)."""

    connected: int = 0
    following: int = 0
    paused: int = 0
    gone: int = 0

    def __str__(self) -> str:
        return (f"{self.connected} connected · {self.following} following · {self.paused} paused"
                + (f" · {self.gone} gone" if self.gone else ""))


class Classroom:
    """The teacher's latest position, and everyone listening for the next one."""

    def __init__(self) -> None:
        self.position: TeacherView | None = None  # None until a teacher has moved
        self._listeners: list[Listener] = []
        self.members: dict[int, Member] = {}  # by the number `enter` gave
        self.lead: int | None = None  # the member leading (one teacher at a time)
        self.ended = False  # the teacher has ended the class
        self.join_command = ""  # what students type to join, for the teacher's console
        self._watchers: list[Watcher] = []
        self._numbers = 0
        self.others: list[Member] = []  # the class in the server's other processes
        self.quiz_on = False  # the teacher has started quiz mode
        self.quizzes: dict[str, Quiz] = {}  # by lesson: the class's answers
        self.traces: dict[str, Any] = {}  # by lesson: the traces (for what others send)
        # A class served by several processes (mgtui/serve/workers.py): what this one
        # tells the others (`News`: quiz mode, reveals, answers, who leads here), through
        # the front process; None for a class in one process.
        self.relay: Relay | None = None
        self.tag = ""  # this process's mark in a student's quiz name (numbers repeat)
        self.lead_elsewhere = ""  # the teacher leading in another process ("" if none)

    def publish(self, position: TeacherView) -> None:
        """The teacher is at `position`: tell every listener (once per change)."""
        if position == self.position:
            return
        self.position = position
        for listener in list(self._listeners):
            listener(position)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with each new position; returns the call that stops it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    @property
    def listeners(self) -> int:
        return len(self._listeners)

    # -- the roster ------------------------------------------------------------------------------
    def watch(self, watcher: Watcher, roster: bool = True) -> Callable[[], None]:
        """Call `watcher` after each change of the lead or the class's end, and of the
        roster too if `roster` (a teacher's console; a student's session needs not wake
        for every other student's step). Returns the call that stops it."""
        entry = (watcher, roster)
        self._watchers.append(entry)
        return lambda: self._watchers.remove(entry) if entry in self._watchers else None

    def changed(self, roster: bool = True) -> None:
        """Tell the watchers: of the roster only if `roster`, else everyone."""
        for watcher, wants_roster in list(self._watchers):
            if wants_roster or not roster:
                watcher()

    def enter(self, name: str, teacher: bool = False, identity: str = "") -> int:
        """A session joins the class: its number in `members`. A teacher leads if no
        teacher does yet."""
        self._numbers += 1
        name = name[:NAME_CHARS]
        for number, member in list(self.members.items()):
            if member.gone and (member.identity == identity if identity
                                else member.name == name):  # (back: one row)
                del self.members[number]
        self.members[self._numbers] = Member(name, teacher, identity=identity)
        leads = teacher and self.lead is None and not self.lead_elsewhere
        if leads:
            self.lead = self._numbers
            self._told_lead()
        self.changed(roster=not leads)
        return self._numbers

    def update(self, number: int, **changes) -> None:
        member = self.members.get(number)
        if member is None:
            return
        if any(getattr(member, k) != v for k, v in changes.items()):
            for key, value in changes.items():
                setattr(member, key, value)
            self.changed()

    def leave(self, number: int) -> None:
        """A session has ended: a student stays on the roster as gone (until they come
        back under the same name), a teacher goes."""
        member = self.members.get(number)
        if member is None or member.gone:
            return
        if member.teacher or number == self.lead:
            del self.members[number]
        else:
            member.gone, member.following = True, False
            gone = [n for n, m in self.members.items() if m.gone]
            for old in gone[:-GONE_KEPT]:
                del self.members[old]
        leads = self.lead == number
        if leads:
            self.lead = None
            self._told_lead()
        self.changed(roster=not leads)

    def take_lead(self, number: int) -> None:
        """`number` leads from now on (the teacher who led watches)."""
        if number in self.members and self.lead != number:
            self.lead = number
            self.lead_elsewhere = ""
            self._told_lead()
            self.changed(roster=False)

    def leader(self) -> Member | None:
        if self.lead is None and self.lead_elsewhere:
            return Member(self.lead_elsewhere, teacher=True)
        return self.members.get(self.lead) if self.lead is not None else None

    def _told_lead(self) -> None:
        """The other processes hear who leads here (`led_elsewhere` there)."""
        if self.relay is not None:
            leader = self.members.get(self.lead) if self.lead is not None else None
            self.relay(Lead(leader.name if leader is not None else ""))

    def led_elsewhere(self, name: str) -> None:
        """A teacher in another process leads (`name`), or none does (""): one teacher
        leads the whole class, so the one leading here, if any, now watches."""
        if name == self.lead_elsewhere and not (name and self.lead is not None):
            return
        self.lead_elsewhere = name
        if name:
            self.lead = None
        self.changed(roster=False)

    @property
    def led(self) -> bool:
        """Whether a teacher leads the class now (here or in another process)."""
        return self.lead is not None or bool(self.lead_elsewhere)

    def counts(self) -> Counts:
        students = [m for m in self.roster() if not m.gone]
        following = sum(m.following for m in students)
        return Counts(len(students), following, len(students) - following,
                      len(self.roster()) - len(students))

    def roster(self) -> list[Member]:
        """Everyone but the one leading, in the order they joined (this process's
        sessions, then the others')."""
        return [m for n, m in self.members.items() if n != self.lead] + self.others

    def here(self) -> list[list]:
        """This process's sessions, as plain lists (for the server's other processes)."""
        return [[m.name, m.teacher, m.following, m.step, m.lesson, m.identity, m.gone]
                for n, m in self.members.items() if n != self.lead]

    def set_others(self, rows: list) -> None:
        """The sessions of the server's other processes (`here`'s lists)."""
        others = []
        for row in rows if isinstance(rows, list) else []:
            if (isinstance(row, list) and len(row) in (5, 6, 7) and isinstance(row[0], str)
                    and isinstance(row[3], int) and isinstance(row[4], str)):
                identity = row[5] if len(row) >= 6 and isinstance(row[5], str) else ""
                gone = len(row) == 7 and row[6] is True
                others.append(Member(row[0], bool(row[1]), bool(row[2]), row[3], row[4],
                                     identity, gone))
        if others != self.others:
            self.others = others
            self.changed()

    # -- quiz mode -------------------------------------------------------------------------------
    def quiz(self, lesson: str, trace) -> Quiz:
        """The quiz of `lesson` (made on first use)."""
        if lesson not in self.quizzes:
            self.quizzes[lesson] = Quiz(trace)
        return self.quizzes[lesson]

    def start_quiz(self, on: bool, relay: bool = True) -> None:
        if on != self.quiz_on:
            self.quiz_on = on
            self.changed(roster=False)
            if relay and self.relay is not None:
                self.relay(QuizOn(on))

    def answer(self, lesson: str, trace, student: str, step: int, value: float,
               relay: bool = True, name: str = "") -> bool | None:
        """`student` (one login: `name` shows it) predicts `value` at `step` of
        `lesson`: right or wrong (None: no question there, or a value not taken). The
        teacher's console counts it, in every process."""
        right = self.quiz(lesson, trace).answer(student, step, value, name)
        if right is not None:
            self.changed(roster=True)
            if relay and self.relay is not None:
                self.relay(Answer(lesson, student, step, value, name))
        return right

    def reveal(self, lesson: str, trace, step: int, relay: bool = True) -> None:
        """The teacher reveals `step`'s grads for everyone."""
        self.quiz(lesson, trace).reveal(step)
        self.changed(roster=False)
        if relay and self.relay is not None:
            self.relay(Reveal(lesson, step))

    def quiz_state(self) -> QuizState:
        """The quiz so far, for a process that starts late (`told_quiz` takes it in)."""
        return QuizState(self.quiz_on, tuple(
            Answer(lesson, student, step, value, quiz.names.get(student, ""))
            for lesson, quiz in self.quizzes.items()
            for student, by_step in quiz.answers.items() for step, value in by_step.items()),
            tuple(Reveal(lesson, step) for lesson, quiz in self.quizzes.items()
                  for step in sorted(quiz.revealed)))

    def told_quiz(self, news: QuizNews) -> None:
        """What another process says of the quiz (quiz mode on or off, an answer, a
        reveal, or all of it), kept here as if said here, not told on. An answer or a
        reveal of a lesson this process does not serve is left out."""
        if isinstance(news, (QuizOn, QuizState)):
            self.start_quiz(news.on, relay=False)
        answers = news.answers if isinstance(news, QuizState) else (
            (news,) if isinstance(news, Answer) else ())
        reveals = news.reveals if isinstance(news, QuizState) else (
            (news,) if isinstance(news, Reveal) else ())
        for answer in answers:
            if answer.lesson in self.traces:
                self.answer(answer.lesson, self.traces[answer.lesson], answer.student,
                            answer.step, answer.value, relay=False, name=answer.name)
        for reveal in reveals:
            if reveal.lesson in self.traces:
                self.reveal(reveal.lesson, self.traces[reveal.lesson], reveal.step, relay=False)

    def end(self) -> None:
        """The teacher ends the class: every session is told, and ends."""
        if not self.ended:
            self.ended = True
            self.changed(roster=False)


class Follower:
    """One student's side of the follow mode. Following by default: each teacher
    position is one to go to. A move of the student's own pauses it; `rejoin` resumes
    it at the teacher's latest position."""

    PAUSED = "following paused — press f to rejoin"

    def __init__(self, classroom: Classroom) -> None:
        self.classroom = classroom
        self.following = True

    @property
    def teacher(self) -> TeacherView | None:
        return self.classroom.position

    def heard(self, position: TeacherView) -> TeacherView | None:
        """The teacher moved to `position`: where to go, or None while paused."""
        return position if self.following else None

    def moved(self, position: Position) -> bool:
        """The student is now at `position` by a move of their own. Returns True if
        that paused the following (it was on, a teacher leads, and this is not where
        the teacher is). Before any teacher has moved, a student explores freely and
        still follows the teacher's first move."""
        if not self.following or self.teacher is None or same_place(position, self.teacher):
            return False
        self.following = False
        return True

    def rejoin(self) -> TeacherView | None:
        """Follow again: where the teacher is now (None if no teacher has moved yet)."""
        self.following = True
        return self.teacher

    @property
    def status(self) -> str:
        """What the student's screen says about following ("" while following), with
        where the teacher is."""
        if self.following:
            return ""
        teacher = self.teacher
        if teacher is not None and not self.classroom.led:
            return self.PAUSED + " · no teacher leads now"
        return self.PAUSED + (f" · teacher at step {teacher.step}" if teacher else "")
