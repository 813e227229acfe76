"""Follow the teacher: a `Classroom` carries the teacher's `Position` to every student's
`Follower`, which follows it until the student navigates on their own (and rejoins on `f`).

Headless and transport-free: the SSH server, the browser mode and the tests all use it.
"""

from __future__ import annotations

from typing import Callable

from mgtui.session import Position

Listener = Callable[[Position], None]


class Classroom:
    """The teacher's latest position, and everyone listening for the next one."""

    def __init__(self) -> None:
        self.position: Position | None = None  # None until a teacher has moved
        self._listeners: list[Listener] = []

    def publish(self, position: Position) -> None:
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


class Follower:
    """One student's side of the follow mode. Following by default: each teacher
    position is one to go to. A move of the student's own pauses it; `rejoin` resumes
    it at the teacher's latest position."""

    PAUSED = "following paused — press f to rejoin"

    def __init__(self, classroom: Classroom) -> None:
        self.classroom = classroom
        self.following = True

    @property
    def teacher(self) -> Position | None:
        return self.classroom.position

    def heard(self, position: Position) -> Position | None:
        """The teacher moved to `position`: where to go, or None while paused."""
        return position if self.following else None

    def moved(self, position: Position) -> bool:
        """The student is now at `position` by a move of their own. Returns True if
        that paused the following (it was on, a teacher leads, and this is not where
        the teacher is). Before any teacher has moved, a student explores freely and
        still follows the teacher's first move."""
        if not self.following or self.teacher is None or position == self.teacher:
            return False
        self.following = False
        return True

    def rejoin(self) -> Position | None:
        """Follow again: where the teacher is now (None if no teacher has moved yet)."""
        self.following = True
        return self.teacher

    @property
    def status(self) -> str:
        """What the student's screen says about following ("" while following)."""
        return "" if self.following else self.PAUSED
