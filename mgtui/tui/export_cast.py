"""`mgtui FILE --export cast`: the lesson as an asciicast v2 recording, played back with
asciinema (https://docs.asciinema.org/manual/asciicast/v2/).

The real app is run at a fixed size with a driver that keeps what the app writes to its
terminal (cut to the cells that change, as over SSH: `mgtui.tui.screen_diff`), and stepped
through the lesson, a fixed delay apart on the recording's clock (not the wall clock,
so the same lesson always makes the same recording). Scenario text reaches the
recording only as the app draws it, already inert (`mgtui.safe`).

`CastWriter` writes the format itself, from any stream of terminal output and times:
the class server can record a session with it (`serve --record FILE`).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Iterable, TextIO

from mgtui.safe import inert_line

if TYPE_CHECKING:
    from mgtui.trace import Trace

SIZE = (80, 24)
DELAY = 1.0  # seconds between two steps in the recording
STEP_LIMIT = 300  # a longer lesson is recorded pass by pass: each pass's first step
START = "\x1b[?25l\x1b[H\x1b[2J"  # no cursor, a clear screen
END = "\x1b[{height};{width}H\x1b[?25h"  # the cursor back, out of the way


class CastWriter:
    """An asciicast v2 file being written: its header line, then one line per event,
    `[time, code, data]`, times in seconds from the start and never going back.

    >>> cast = CastWriter(stream, 80, 24, title="class of 3 May")
    >>> cast.output("\\x1b[H…", at=0.0)   # what the terminal was sent, when
    >>> cast.resize(120, 40, at=12.5)
    """

    def __init__(self, stream: TextIO, width: int, height: int, *, title: str = "",
                 timestamp: int | None = None, env: dict[str, str] | None = None,
                 idle_time_limit: float | None = None) -> None:
        self.stream = stream
        self.last = 0.0
        header: dict = {"version": 2, "width": int(width), "height": int(height),
                        "timestamp": int(time.time() if timestamp is None else timestamp)}
        if title:
            header["title"] = inert_line(title)
        header["env"] = env if env is not None else {"TERM": "xterm-256color"}
        if idle_time_limit is not None:  # (a player shortens longer pauses to this)
            header["idle_time_limit"] = float(idle_time_limit)
        self._line(header)

    def _line(self, value) -> None:
        # JSON escapes every control character: the file itself is plain text
        self.stream.write(json.dumps(value, ensure_ascii=False) + "\n")

    def event(self, code: str, data: str, at: float) -> None:
        at = max(float(at), self.last)  # the format's times never go back
        self.last = at
        self._line([round(at, 6), code, data])

    def output(self, data: str, at: float) -> None:
        """What the terminal was sent at `at` seconds."""
        self.event("o", data, at)

    def resize(self, width: int, height: int, at: float) -> None:
        """The terminal took a new size at `at` seconds."""
        self.event("r", f"{int(width)}x{int(height)}", at)

    def marker(self, label: str, at: float) -> None:
        """A point a player can jump to (a step, say)."""
        self.event("m", inert_line(label), at)


def write_cast(stream: TextIO, frames: Iterable[tuple[float, str]], width: int, height: int,
               title: str = "", timestamp: int | None = None) -> None:
    """Write `frames`, (seconds, terminal output) in order, as an asciicast v2 file."""
    cast = CastWriter(stream, width, height, title=title, timestamp=timestamp)
    for at, data in frames:
        cast.output(data, at)


# -- recording a lesson ------------------------------------------------------------------------

def cast_steps(trace: Trace, limit: int = STEP_LIMIT) -> list[int]:
    """The steps a recording shows, after the start: every step of a short lesson; of a
    longer one, each pass's first step, then the last step."""
    total = len(trace) + (1 if trace.error is not None else 0)
    if total <= limit:
        return list(range(1, total + 1))
    steps = [p.start + 1 for p in trace.passes]
    return sorted(set(steps + [total]))


def lesson_cast(trace: Trace, stream: TextIO, *, size: tuple[int, int] = SIZE,
                delay: float = DELAY) -> None:
    """Record the lesson in the app and write it to `stream` as an asciicast v2 file."""
    frames = asyncio.run(record_lesson(trace, size=size, delay=delay))
    write_cast(stream, frames, *size, title=trace.title or trace.scenario)


async def record_lesson(trace: Trace, *, size: tuple[int, int] = SIZE,
                        delay: float = DELAY) -> list[tuple[float, str]]:
    """Run the app on `trace` at `size`, step it through `cast_steps`, and return what it
    wrote to its terminal, as (seconds, output): step k of the recording at k × delay."""
    from mgtui.tui.app import MgtuiApp

    tape = Tape()
    app = MgtuiApp(trace=trace)
    app.driver_class = tape.driver_class()  # (the app cuts its writes through ScreenDiff)

    async def steer(pilot) -> None:
        while app.loading or app.debugger.trace is None:
            await pilot.pause(0.02)
        await app.workers.wait_for_complete()
        await tape.settle(pilot)
        for k, step in enumerate(cast_steps(trace), start=1):
            tape.clock = k * delay
            app.debugger.goto(step)
            await tape.settle(pilot)
        tape.clock += delay
        tape.frames.append((tape.clock, END.format(width=size[0], height=size[1])))
        # (the last step stays on screen a while)
        tape.recording = False
        app.exit()

    await app.run_async(headless=False, size=size, auto_pilot=steer)
    return tape.frames


class Tape:
    """What the app writes to its terminal, each write with the recording's clock."""

    def __init__(self) -> None:
        self.frames: list[tuple[float, str]] = [(0.0, START)]
        self.clock = 0.0
        self.recording = True

    def driver_class(self):
        from textual.drivers.headless_driver import HeadlessDriver

        tape = self

        class TapeDriver(HeadlessDriver):
            """A terminal that is only a tape: no modes switched on, so playing the
            recording leaves the viewer's terminal as it was."""

            @property
            def is_headless(self) -> bool:
                return False  # so the app draws

            def write(self, data: str) -> None:
                if tape.recording and data:
                    tape.frames.append((tape.clock, data))

        return TapeDriver

    async def settle(self, pilot, quiet: int = 2, most: int = 50) -> None:
        """Until the app has drawn what it will: `quiet` pauses in a row with no write."""
        calm = 0
        for _ in range(most):
            before = len(self.frames)
            await pilot.pause()
            calm = calm + 1 if len(self.frames) == before else 0
            if calm >= quiet:
                return
