"""Lessons recorded while the class starts (issue 35: a class of four lessons, `mlp`
among them, took 10-13 s to its first screen, most of it waiting for every lesson).

`mgtui serve` records every lesson side by side, each in its own runner child, and opens
the class as soon as the first one named is recorded (with any other already done). The
others join when theirs is: in this process's lessons, the one mapping every session's
picker reads (`ServedApp.lessons`), in the order they were named; and, for the worker
processes (forked with the lessons recorded so far), as a saved binary trace each loads.
A lesson that cannot be recorded later is said in the log, and the class goes on without
it; one whose recording stopped early is served up to there, and said, as at start.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from mgtui.run.lessons import Lesson, LessonError
from mgtui.safe import inert
from mgtui.serve.messages import LessonReady

log = logging.getLogger("mgtui.serve")

RECORDED_AT_ONCE = 4  # lessons recorded side by side, each in its own runner child


class Recordings:
    """Every lesson named, being recorded (in threads, each waiting for its runner
    child): `first()` waits for the first lesson only, `rest()` yields the others as each
    is done."""

    def __init__(self, named: dict[str, Path], seed: int, timeout: float) -> None:
        from mgtui.run.lessons import record_lesson

        self.order = list(named)
        self._pool = ThreadPoolExecutor(max(1, min(len(named), RECORDED_AT_ONCE)),
                                        thread_name_prefix="mgtui-record")
        self._futures: dict[str, Future] = {
            name: self._pool.submit(record_lesson if i == 0 else behind(record_lesson), path,
                                    name, seed=seed, timeout=timeout)
            for i, (name, path) in enumerate(named.items())}
        self._taken: set[str] = set()

    def first(self) -> dict[str, Lesson]:
        """The first lesson named (LessonError if it cannot be served), and every other
        already recorded without a failure, in their order."""
        lessons = {}
        for name in self.order:
            future = self._futures[name]
            if name == self.order[0] or (future.done() and future.exception() is None):
                lessons[name] = self._take(name, future.result())
        return lessons

    def all(self) -> dict[str, Lesson]:
        """Every lesson, in order, once each is recorded (LessonError for the first named
        that cannot be served)."""
        return {name: self._take(name, self._futures[name].result()) for name in self.order}

    def _take(self, name: str, lesson: Lesson) -> Lesson:
        self._taken.add(name)
        said(lesson)
        return lesson

    @property
    def waiting(self) -> list[str]:
        """The lessons not served yet (being recorded, or not reported yet)."""
        return [name for name in self.order if name not in self._taken]

    async def rest(self):
        """(name, lesson or None, why not) for each lesson not served yet, as each is
        recorded (or fails)."""
        pending = {asyncio.wrap_future(self._futures[name]): name for name in self.waiting}
        while pending:
            done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: self.order.index(pending[f])):
                name = pending.pop(future)
                self._taken.add(name)
                try:
                    yield name, future.result(), ""
                except LessonError as exc:
                    yield name, None, str(exc)
                except Exception as exc:  # noqa: BLE001 - said, as a lesson that failed
                    yield name, None, f"{name}: {exc}"

    def close(self) -> None:
        """Stop waiting: recordings not started are dropped (those running end with
        their runner's timeout)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


LATER_NICENESS = 5  # the recordings after the first: the first, and the class, go first


def behind(record: Callable) -> Callable:
    """`record`, run at a lower priority than the first lesson's recording and the
    class's start (their runner children inherit it): on Linux, where a thread has its
    own niceness; elsewhere as it is."""
    if not sys.platform.startswith("linux"):
        return record
    niceness = os.getpriority(os.PRIO_PROCESS, 0) + LATER_NICENESS  # (this thread's, +5)

    def lower(*args, **options):
        import threading

        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
        except OSError:
            pass  # (a thread already that low, or lower)
        return record(*args, **options)

    return lower


def said(lesson: Lesson) -> None:
    """A recording that stopped early, said on the server's terminal (as at start)."""
    if lesson.message:
        print(f"mgtui serve: {inert(lesson.name)}: {inert(lesson.message)} (serving the "
              "trace up to there)", file=sys.__stderr__, flush=True)


def place(lessons: dict, lesson: Lesson, order: list[str]) -> None:
    """`lesson` into `lessons`, kept in the order they were named (the picker's)."""
    lessons[lesson.name] = lesson
    ranked = sorted(lessons.items(), key=lambda item: (
        order.index(item[0]) if item[0] in order else len(order)))
    lessons.clear()
    lessons.update(ranked)


def shelve(lessons: dict, lesson: Lesson, order: list[str], classroom) -> None:
    """`lesson`, recorded later, joins the class: into `lessons` (in the `order` named)
    and the classroom's traces; every session hears that the class has changed (an open
    lesson picker lists it then, `ServedApp`)."""
    place(lessons, lesson, order)
    classroom.traces[lesson.name] = lesson.trace
    classroom.changed(roster=False)


async def serve_later(recordings: Recordings, lessons: dict, classroom,
                      each: Callable[[Lesson], None] | None = None) -> None:
    """Each lesson still being recorded, into `lessons` (and the classroom's traces) as
    it is done, then to `each` (the workers' copy); one that fails is said in the log."""
    async for name, lesson, why in recordings.rest():
        if lesson is None:
            log.error("lesson %s cannot be served (the class goes on without it): %s",
                      name, why)
            continue
        if lesson.message:  # (the log: a teacher's terminal may be their session)
            log.warning("lesson %s: %s (serving the trace up to there)", name, lesson.message)
        shelve(lessons, lesson, recordings.order, classroom)
        if each is not None:
            each(lesson)
        log.info("lesson %s recorded: in the lesson picker now", name)


# -- to the worker processes -------------------------------------------------------------------

class Shelf:
    """The front's folder of the lessons recorded since the workers were forked, each
    saved once as a binary trace for the workers to load; `messages`: each one's
    `LessonReady` for a worker, in the order they came."""

    def __init__(self, order: list[str]) -> None:
        self.order = order
        self._directory: tempfile.TemporaryDirectory | None = None
        self.messages: list[LessonReady] = []

    def saved(self, lesson: Lesson) -> LessonReady:
        from mgtui.trace.binary import dumpb

        if self._directory is None:
            self._directory = tempfile.TemporaryDirectory(prefix="mgtui-lessons-")
        path = Path(self._directory.name) / f"{len(self.messages):03d}.mgtrace"
        path.write_bytes(dumpb(lesson.trace))
        message = LessonReady(lesson.name, str(path), str(lesson.path), lesson.title,
                              lesson.message, lesson.seed, list(self.order))
        self.messages.append(message)
        return message

    def close(self) -> None:
        if self._directory is not None:
            self._directory.cleanup()


def heard_lesson(lessons: dict, message, classroom) -> None:
    """A worker told of a lesson recorded later (`LessonReady`; any other message is left
    alone): its trace loaded from the front's file, into `lessons` (the class's, in the
    order named) and the classroom's traces; a name it has already is kept."""
    if not isinstance(message, LessonReady) or message.name in lessons:
        return
    name = message.name
    from mgtui.trace.binary import load

    try:
        trace = load(Path(message.file))
        trace.index.build_indexes(final=True)
    except Exception:  # noqa: BLE001 - this worker's students go on without it
        log.exception("lesson %s could not be loaded here", name)
        return
    lesson = Lesson(name, Path(message.path), message.title, trace, message.message,
                    message.seed)
    shelve(lessons, lesson, [n for n in message.order if isinstance(n, str)], classroom)
