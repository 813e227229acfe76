"""One SSH session of a class (`LessonSession`): a `ServedApp` on the client's
terminal, and what its driver needs of the channel (writes, holding input, its size,
its end). No shell, no exec, no subsystem: only the lesson.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import sys
import time
import traceback

import asyncssh

from mgtui.serve.limits import capped
from mgtui.serve.scores import write_quiz_scores
from mgtui.tui.textual_private import app_driver, app_exception, forget_exception, stream_app

log = logging.getLogger("mgtui.serve")

WRITE_BUFFER_LIMIT = 8 << 20  # bytes queued for a client that reads nothing: then it is cut
# a terminal type as terminfo names them; any other TERM a client sends is served as
# FALLBACK_TERM (it is looked up with `tput`, and logged)
TERM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
FALLBACK_TERM = "xterm"


def release_streams(app) -> None:
    """Each running app swaps `sys.stdout` and `sys.stderr` for its own capture and puts
    back what it found when it ends; apps ending in another order than they started
    leave an ended app's capture in place (`app`'s, or one that ended before it: the
    second of two sessions to start, ending last, puts back the first's). That capture
    holds its app, and all it had, for good. Put the process's own streams back then."""
    for name in ("stdout", "stderr"):
        owner = stream_app(getattr(sys, name))
        if owner is not None and (owner is app or not getattr(owner, "is_running", True)):
            setattr(sys, name, getattr(sys, f"__{name}__"))


def forget_failure(app, failure: BaseException | None) -> None:
    """Let a failed session's app go once its failure is logged: the traceback's frames
    hold the app (its screens, its session) as long as the exception lives, and Textual
    keeps it, as may a log handler that keeps records. The frames are cleared."""
    seen: set[int] = set()
    while failure is not None and id(failure) not in seen:
        seen.add(id(failure))
        traceback.clear_frames(failure.__traceback__)
        failure = failure.__cause__ or failure.__context__
    if app is not None:
        forget_exception(app)  # (Textual's own, to raise again: logged above instead)


class LessonSession(asyncssh.SSHServerSession):
    """One SSH session: a `ServedApp` on the client's terminal, in `klass` (the class
    it is served in: `mgtui.serve.server.Class`)."""

    def __init__(self, klass, user: str, peer: str, teacher: bool,
                 name: str = "", identity: str = "") -> None:
        self.klass, self.user, self.peer, self.teacher = klass, user, peer, teacher
        self.name = name or user  # as the teacher's roster shows it
        self.identity = identity  # one person, whatever the session ("": a shared login)
        self.host = peer.rsplit(":", 1)[0]
        self.chan: asyncssh.SSHServerChannel | None = None
        self.app = None
        self.task: asyncio.Task | None = None
        self.closed = False
        self.drawn = False  # (its first screen)
        self.last_active = time.monotonic()
        self.ended_because = ""

    # -- the channel ----------------------------------------------------------------------------
    def connection_made(self, chan) -> None:
        self.chan = chan

    def pty_requested(self, term_type, term_size, term_modes) -> bool:
        return True

    def shell_requested(self) -> bool:
        return True

    def exec_requested(self, command: str) -> bool:
        log.info("refused a command from %s@%s", self.user, self.peer)
        return False

    def subsystem_requested(self, subsystem: str) -> bool:
        log.info("refused subsystem %r from %s@%s", subsystem, self.user, self.peer)
        return False

    def session_started(self) -> None:
        chan, klass = self.chan, self.klass
        if chan.get_terminal_type() is None:
            self._refuse("mgtui needs a terminal: connect with ssh -t")
            return
        if klass.classroom.ended:
            self._refuse("the class has ended")
            return
        if klass.full:
            log.info("class full: refused %s@%s", self.user, self.peer)
            self._refuse(f"the class is full ({klass.limits.max_sessions} sessions): try later")
            return
        refused = klass.seat_refused(self.identity, self.host)
        if refused:
            log.info("no seat for %s@%s: %s", self.user, self.peer, refused)
            self._refuse(refused)
            return
        from mgtui.serve.app import ServedApp

        klass.sessions.add(self)
        klass.counted()
        width, height = self.terminal_size()
        term = chan.get_terminal_type()
        log.info("session start %s@%s as %s (%s, %dx%d)", self.user, self.peer,
                 "teacher" if self.teacher else "student", term, width, height)
        if not TERM_NAME.fullmatch(term):
            log.info("TERM %r of %s@%s is no terminal's name: served as %s", term,
                     self.user, self.peer, FALLBACK_TERM)
            term = FALLBACK_TERM
        self.app = ServedApp(klass.lessons, klass.classroom, teacher=self.teacher,
                             terminal=self, term=term, env=dict(chan.get_environment()),
                             name=self.name, unison=klass.unison)
        self.app.identity = self.identity  # (its quiz answers, across sessions and workers)
        if self.teacher:  # (W: the scores written now)
            self.app.quiz_mode.save_scores = functools.partial(
                write_quiz_scores, klass.classroom, klass.quiz_scores)
        self.started = time.monotonic()
        self.task = asyncio.get_running_loop().create_task(self._run())

    def _refuse(self, text: str) -> None:
        self.write(f"mgtui: {text}\r\n")
        self.chan.exit(1)

    async def _run(self) -> None:
        try:
            await self.app.run_async(size=self.terminal_size())
            failure = app_exception(self.app)  # (Textual keeps it, and ends)
            if failure is not None:
                log.error("session of %s@%s failed", self.user, self.peer,
                          exc_info=(type(failure), failure, failure.__traceback__))
                forget_failure(self.app, failure)
            del failure
        except Exception as failure:  # noqa: BLE001 - one session's failure ends that session only
            log.exception("session of %s@%s failed", self.user, self.peer)
            forget_failure(self.app, failure)
        finally:
            self.klass.sessions.discard(self)
            self.klass.counted()
            log.info("session end %s@%s after %.0f s%s", self.user, self.peer,
                     time.monotonic() - self.started,
                     f" ({self.ended_because})" if self.ended_because else "")
            if not self.closed:
                if self.ended_because:
                    self.write(f"mgtui: {self.ended_because}\r\n")
                try:
                    self.chan.exit(0)
                except (OSError, asyncssh.Error):
                    pass
            app, self.app = self.app, None  # (its screens and its session go with it)
            release_streams(app)
            self.klass.heap.session_ended(len(self.klass.sessions), app)
            del app

    def data_received(self, data: str, datatype) -> None:
        self.last_active = time.monotonic()
        driver = self._driver()
        if driver is not None:
            driver.feed(data)

    def terminal_size_changed(self, width: int, height: int, pixwidth: int,
                              pixheight: int) -> None:
        self.last_active = time.monotonic()
        driver = self._driver()
        if driver is not None:
            driver.resize(width, height)

    def eof_received(self) -> bool:
        self.end("")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        driver = self._driver()
        if driver is not None:
            driver.disable_input()  # what it sent and the app has not taken goes with it
        self.end("")

    def _driver(self):
        app = self.app
        return app_driver(app) if app is not None else None

    # -- what the driver needs ----------------------------------------------------------------
    def write(self, data: str) -> None:
        if self.closed or self.chan is None:
            return
        try:
            self.chan.write(data)
        except (OSError, asyncssh.Error):
            self.closed = True
            self.end("")
            return
        self.last_active = self.klass.heap.last_frame = time.monotonic()
        if self.chan.get_write_buffer_size() > WRITE_BUFFER_LIMIT:
            self.end("your connection fell too far behind: reconnect")
            self.closed = True
            self.chan.abort()

    def hold(self, held: bool) -> None:
        """Stop (or start again) reading the channel: its app has INPUT_HELD characters
        of the client's waiting (SSH then makes the client wait)."""
        if self.chan is None or self.closed:
            return
        try:
            self.chan.pause_reading() if held else self.chan.resume_reading()
        except (OSError, asyncssh.Error):
            pass

    def shown(self) -> None:
        """The app has drawn its first screen: what it holds now lives as long as it."""
        self.drawn = self.klass.served = True
        self.klass.heap.settle()

    def terminal_size(self) -> tuple[int, int]:
        """The client's window (80x24 if it said none), `capped`."""
        width, height = self.chan.get_terminal_size()[:2] if self.chan is not None else (0, 0)
        return capped(width or 80, height or 24)

    def end(self, because: str) -> None:
        """End this session's app (the channel closes once it has)."""
        if because and not self.ended_because:
            self.ended_because = because
        app = self.app
        if app is not None:
            app.leave_class()
        if app is not None and app.is_running:
            app.exit(0)
