"""`mgtui serve --record FILE`: the class as the students saw it, kept for a student who
missed it, as an asciicast v2 file (`asciinema play FILE`).

A recorder is one more session of the class, on no terminal: a `ServedApp` that
follows the teacher as a student does (their step, node and tab, the Graph pane, the
notes, the pointer and the line to the class) and draws at a fixed size into the cast,
each write with the seconds since the class started. It is on no roster and counts
for no limit; whoever leads, it follows. It shows what the teacher sees of the quiz's
grads (a recording cannot answer), and nothing of the teacher's console (the roster's
names stay out of it). Each step is a marker a player can jump to; the header asks
players to shorten the pauses to `IDLE_LIMIT` seconds.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import Mapping, TextIO

from textual import events

from mgtui.run.lessons import Lesson
from mgtui.safe import inert
from mgtui.serve.app import ServedApp
from mgtui.session import Position
from mgtui.session.follow import Classroom
from mgtui.tui.export_cast import END, START, CastWriter

log = logging.getLogger("mgtui.serve")

SIZE = (120, 40)  # the recording's terminal: the Graph pane and the side panes fit
IDLE_LIMIT = 2.0  # seconds: a player shortens longer pauses to this


class ClassRecorder(ServedApp):
    """The class's recording: a student session that never pauses and is on no roster."""

    def __init__(self, lessons: Mapping[str, Lesson], classroom: Classroom,
                 cast: CastWriter) -> None:
        super().__init__(lessons, classroom, name="recording")
        self.quiz_mode.asks = False  # (a recording cannot answer: it shows the grads as
        # the teacher does)
        self.cast = cast
        self.started = time.monotonic()
        self.failed = False
        self._marked: tuple = ()
        self.driver_class = self._cast_driver()

    def clock(self) -> float:
        return time.monotonic() - self.started

    def _cast_driver(self):
        from textual.drivers.headless_driver import HeadlessDriver

        recorder = self

        class CastDriver(HeadlessDriver):
            """A terminal that is only the cast: what the app draws goes into it."""

            @property
            def is_headless(self) -> bool:
                return False  # so the app draws

            def write(self, data: str) -> None:
                if data:
                    recorder.record(data)

        return CastDriver

    def record(self, data: str) -> None:
        if self.failed:
            return
        try:
            self.cast.output(data, self.clock())
        except OSError as exc:  # (a full disk: the class goes on, unrecorded)
            self.failed = True
            log.error("the class's recording stopped: %s", exc)

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # (ServedApp's would enter the roster, or pick a lesson)
        self._unwatch = self.classroom.watch(self._class_changed, roster=False)
        self._unsubscribe = self.classroom.subscribe(self._heard)
        self.call_after_refresh(self._catch_up)

    def arrived(self, position: Position, own: bool) -> None:
        super().arrived(position, own=False)  # (never its own move: it only follows)
        mark = (self.lesson, position.step)
        if mark != self._marked and not self.failed:
            self._marked = mark
            try:
                self.cast.marker(f"{self.lesson} step {position.step}", self.clock())
                self.cast.stream.flush()  # (a step at a time: a crash keeps the class so far)
            except OSError as exc:
                self.failed = True
                log.error("the class's recording stopped: %s", exc)

    def _class_news(self) -> None:
        self._news_due = False
        if self.classroom.ended:
            self.exit(0)


NAMES_TRIED = 999  # class-2.cast .. class-999.cast, for an earlier class's file


def open_recording(path: Path) -> TextIO:
    """The file the class is recorded to (OSError if it cannot be written; its `name`
    says which). An earlier recording is never written over: with `path` taken, the
    class goes to the first free `NAME-2.EXT`, `NAME-3.EXT`, ..., and this says so."""
    path = Path(path)
    if not (path.exists() and path.is_file()):
        return open(path, "w", encoding="utf-8")  # (a new file, or a pipe, /dev/stdout)
    for n in range(2, NAMES_TRIED + 1):
        other = path.with_name(f"{path.stem}-{n}{path.suffix}")
        try:
            stream = open(other, "x", encoding="utf-8")  # (only if nobody has it)
        except FileExistsError:
            continue
        print(f"mgtui serve: {inert(str(path))} is an earlier recording, kept: this class "
              f"is recorded to {inert(str(other))}", file=sys.stderr, flush=True)
        return stream
    raise OSError(f"{path} and {path.stem}-2{path.suffix} .. -{NAMES_TRIED} are taken: "
                  "name another file")


async def record_class(lessons: Mapping[str, Lesson], classroom: Classroom,
                       stream: TextIO, stopped: asyncio.Event | None = None,
                       size: tuple[int, int] = SIZE) -> None:
    """Record the class to `stream` until it ends (or `stopped` is set, or the task is
    cancelled), then end the cast and close the stream."""
    cast = CastWriter(stream, *size, title="mgtui class: " + ", ".join(lessons),
                      idle_time_limit=IDLE_LIMIT)
    cast.output(START, 0.0)
    recorder = ClassRecorder(lessons, classroom, cast)
    task = asyncio.get_running_loop().create_task(
        recorder.run_async(headless=False, size=size))
    waits = {task} | ({asyncio.ensure_future(stopped.wait())} if stopped else set())
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits - {task}:
            wait.cancel()
        if not task.done():
            recorder.exit(0)
            try:
                await asyncio.wait_for(asyncio.shield(task), 5)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                task.cancel()
        from mgtui.serve.ssh_session import release_streams

        release_streams(recorder)  # (the streams it took, back: other apps may run on)
        try:
            recorder.record(END.format(width=size[0], height=size[1]))
            stream.close()
        except OSError as exc:
            log.error("the class's recording could not be closed: %s", exc)
        log.info("the class's recording ended (%.0f s)", recorder.clock())
