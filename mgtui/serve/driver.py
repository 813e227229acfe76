"""A Textual driver whose terminal is one SSH channel: the app's output goes to the
channel, and the channel's keys, mouse and window changes come back as Textual events.

Textual's own Linux driver owns a process's tty (termios, signals, a reader thread),
which a server with many terminals in one process cannot use; this one is fed by the
SSH session instead, on the event loop, with no thread.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Protocol

from textual import events
from textual._xterm_parser import XTermParser
from textual.driver import Driver
from textual.geometry import Size

from mgtui.serve.limits import capped

ESCAPE_WAIT = 0.1  # seconds: a lone ESC with nothing after it is the escape key

ENTER = (
    "\x1b[?1049h"  # the alternate screen
    "\x1b[?25l"  # no cursor
    "\x1b[?1000h\x1b[?1006h"  # mouse clicks and wheel, as SGR (no motion: it floods a link)
    "\x1b[?2004h"  # bracketed paste
    "\x1b[?7l"  # no line wrap
)
LEAVE = (
    "\x1b[?1000l\x1b[?1006l"
    "\x1b[?2004l"
    "\x1b[?7h"
    "\x1b[?25h"
    "\x1b[?1049l"
)


class Terminal(Protocol):
    """What the driver needs of its connection (a `LessonSession`)."""

    def write(self, data: str) -> None: ...

    def terminal_size(self) -> tuple[int, int]: ...

    def shown(self) -> None: ...


class ChannelDriver(Driver):
    """Drives an app whose `terminal` attribute is the connection's `Terminal`."""

    def __init__(self, app, *, debug: bool = False, mouse: bool = True,
                 size: tuple[int, int] | None = None) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self.terminal: Terminal = app.terminal
        self._parser = XTermParser(debug)
        self._tick: asyncio.TimerHandle | None = None
        self._input = False
        self._pending: deque[events.Event] = deque()  # parsed, not yet handed to the app
        self._handing: asyncio.Handle | None = None

    # -- output -----------------------------------------------------------------------------
    def write(self, data: str) -> None:
        self.terminal.write(data)

    def flush(self) -> None:
        pass

    # -- application mode --------------------------------------------------------------------
    def start_application_mode(self) -> None:
        self.write(ENTER)
        self._input = True
        self.resize(*self.terminal.terminal_size())

    def disable_input(self) -> None:
        self._input = False
        self._pending.clear()
        for handle in (self._tick, self._handing):
            if handle is not None:
                handle.cancel()
        self._tick = self._handing = None

    def stop_application_mode(self) -> None:
        self.disable_input()
        self.write(LEAVE)
        self._forget_input()

    def _forget_input(self) -> None:
        """Let the app go when its session ends. Textual's parser caches the keys it
        parsed (in an lru_cache on the class, keyed by the parser) and its generator
        keeps the last one; each key holds its app as sender. One parser per process
        never notices; a server with a parser per session would keep every ended
        session's app alive."""
        self._parser._gen.close()
        parse_extended_key = getattr(XTermParser, "_parse_extended_key", None)
        if hasattr(parse_extended_key, "cache_clear"):
            parse_extended_key.cache_clear()

    # -- input, from the connection -------------------------------------------------------------
    def feed(self, data: str) -> None:
        """Keys (and mouse reports, pastes) the client typed."""
        if not self._input:
            return
        self._hand_over(self._parser.feed(data))
        if self._tick is None:
            self._tick = self._loop.call_later(ESCAPE_WAIT, self._flush_escape)

    def _flush_escape(self) -> None:
        self._tick = None
        if self._input:
            self._hand_over(self._parser.tick())

    def _hand_over(self, parsed) -> None:
        """Give the app the events in order, one per turn of the event loop. An app
        handles every message in its queue before it lets another run: twenty keys
        pasted or held down at once would keep every other session of the server
        waiting until all twenty steps were taken."""
        # (a window size comes from the SSH channel only: one reported in band, in the
        # keys, would go round the cap)
        self._pending.extend(e for e in parsed if not isinstance(e, events.Resize))
        if self._handing is None:
            self._hand_one()

    def _hand_one(self) -> None:
        self._handing = None
        if self._pending and self._input:
            self.process_message(self._pending.popleft())
            if self._pending:
                self._handing = self._loop.call_soon(self._hand_one)

    def resize(self, width: int, height: int) -> None:
        """The client's window is now `width`×`height` (`capped`)."""
        size = Size(*capped(width, height))
        self._size = (size.width, size.height)
        if self._input:
            self.process_message(events.Resize(size, size))
