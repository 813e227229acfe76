"""A Textual driver whose terminal is one SSH channel: the app's output goes to the
channel, and the channel's keys, mouse and window changes come back as Textual events.

Textual's own Linux driver owns a process's tty (termios, signals, a reader thread),
which a server with many terminals in one process cannot use; this one is fed by the
SSH session instead, on the event loop, with no thread.

Input is paced by the app: what the client sends waits here, unparsed, and each event
goes to the app once it has handled all but a few before it (`_hand_one`). What waits is
bounded (`INPUT_HELD`): past it the channel stops being read, and SSH's flow control
makes the client wait. A client sending keys as fast as SSH allows costs the server
that much and no more; when it leaves, what it sent and the app has not taken is
dropped with it.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Protocol

from textual import constants, events
from textual.driver import Driver
from textual.geometry import Size

from mgtui.serve.limits import INPUT_HELD, capped
from mgtui.tui.textual_private import release_parser, set_driver_size, xterm_parser

ESCAPE_WAIT = constants.ESCAPE_DELAY + 0.02  # seconds: a lone ESC, nothing after it, is
# the escape key (once the parser's own wait is over)
PARSED_AT_ONCE = 64  # characters parsed at a time, as the app takes their events
QUEUED_AT_MOST = 4  # messages waiting in the app (and its screen, and the focused
# widget) before the next event waits too: a few let it take a burst of keys in one go
BUSY_WAIT = 0.01  # seconds between looks at an app still that busy
BUSY_AT_MOST = 1.0  # seconds an event waits for an app that stays busy: then it goes
# A pasted text comes as keys: these marks would make the parser keep all of it, of
# any length, as one Paste event (and a session has no use for one).
PASTE_MARKS = ("\x1b[200~", "\x1b[201~")
PASTE_PREFIXES = tuple({mark[:k] for mark in PASTE_MARKS for k in range(1, len(mark))})

ENTER = (
    "\x1b[?1049h"  # the alternate screen
    "\x1b[?25l"  # no cursor
    "\x1b[?1000h\x1b[?1006h"  # mouse clicks and wheel, as SGR (no motion: it floods a link)
    "\x1b[?7l"  # no line wrap
)
LEAVE = (
    "\x1b[?1000l\x1b[?1006l"
    "\x1b[?7h"
    "\x1b[?25h"
    "\x1b[?1049l"
)


class Terminal(Protocol):
    """What the driver needs of its connection (a `LessonSession`)."""

    def write(self, data: str) -> None: ...

    def terminal_size(self) -> tuple[int, int]: ...

    def shown(self) -> None: ...

    def hold(self, held: bool) -> None:
        """Stop (True) or start again (False) reading what the client sends."""


class ChannelDriver(Driver):
    """Drives an app whose `terminal` attribute is the connection's `Terminal`."""

    def __init__(self, app, *, debug: bool = False, mouse: bool = True,
                 size: tuple[int, int] | None = None) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self.terminal: Terminal = app.terminal
        self.session_app = app  # (the app this driver drives: its session's)
        self._event_loop = asyncio.get_running_loop()
        self._parser = xterm_parser(debug)
        self._tick: asyncio.TimerHandle | None = None
        self._input = False
        self._raw = ""  # what the client sent, not parsed yet
        self._held = False  # the channel is not being read (`_raw` is full)
        self._pending: deque[events.Event] = deque()  # parsed, not yet handed to the app
        self._resized = False  # the window changed: a Resize is due
        self._handing: asyncio.Handle | None = None
        self._waiting_since = 0.0  # when the app was first found busy with the last event

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
        """No more input: what the client sent and the app has not taken is dropped."""
        self._input = False
        self._raw = ""
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
        """Let the app go when its session ends (Textual's parser keeps its last keys,
        each holding its app: `release_parser`)."""
        release_parser(self._parser)

    # -- input, from the connection -------------------------------------------------------------
    def feed(self, data: str) -> None:
        """Keys (and mouse reports) the client typed: kept until the app takes them."""
        if not self._input:
            return
        self._wake()
        raw = self._raw + data
        if any(mark in raw for mark in PASTE_MARKS):
            for mark in PASTE_MARKS:
                raw = raw.replace(mark, "")
        self._raw = raw
        if len(raw) > INPUT_HELD and not self._held:
            self._held = True
            self.terminal.hold(True)
        self._next_turn()

    def resize(self, width: int, height: int) -> None:
        """The client's window is now `width`×`height` (`capped`): the app hears of it
        when it has handled what came before (once, however many changes came)."""
        self._size_now = capped(width, height)
        set_driver_size(self, self._size_now)
        self._wake()
        if self._input:
            self._resized = True
            self._next_turn()

    def _wake(self) -> None:
        """Input for an app its group draws for (mgtui/serve/unison.py): it draws for
        itself from now on, and the input waits until it has caught up (`_busy`)."""
        membership = getattr(self.session_app, "membership", None)
        if membership is not None and membership.group is not None:
            membership.wake()

    def waiting(self) -> bool:
        """Whether input is waiting for the app (keys, a window change)."""
        return bool(self._pending or self._raw or self._resized)

    def next_turn(self) -> None:
        """Hand the app what waits (it has caught up, say)."""
        self._next_turn()

    def _next_turn(self) -> None:
        if self._handing is None and self._input:
            self._handing = self._event_loop.call_soon(self._hand_one)

    def _busy(self) -> bool:
        """The app, its screen and the widget with the focus have QUEUED_AT_MOST
        messages waiting (the last events, forwarded from one to the other, and what
        they caused)."""
        app = self.session_app
        if getattr(app, "waking", False):  # (coming to where its class is, first)
            return True
        pumps = [app]
        try:
            pumps += [app.screen, app.screen.focused]
        except Exception:  # noqa: BLE001 - (no screen yet, or no more)
            pass
        return sum(pump.message_queue_size for pump in pumps if pump is not None) \
            >= QUEUED_AT_MOST

    def _hand_one(self) -> None:
        """Give the app its next event, one per turn of the event loop (one client's
        burst of keys must not keep the server's other sessions waiting), and none
        while it is behind (`_busy`; BUSY_AT_MOST at most)."""
        self._handing = None
        if not self._input:
            return
        if not self._pending:
            self._parse_some()
        if not (self._pending or self._resized):
            return
        now = time.monotonic()
        if self._busy():
            self._waiting_since = self._waiting_since or now
            if now - self._waiting_since < BUSY_AT_MOST:
                self._handing = self._event_loop.call_later(BUSY_WAIT, self._hand_one)
                return
        self._waiting_since = 0.0
        if self._resized:
            self._resized = False
            size = Size(*self._size_now)
            self.process_message(events.Resize(size, size))
        else:
            event = self._pending.popleft()
            if not isinstance(event, events.Resize):  # (a window size comes from the
                self.process_message(event)  # channel only: one sent among the keys
                # would go round the cap)
        if self._held and len(self._raw) <= INPUT_HELD // 2:
            self._held = False
            self.terminal.hold(False)  # (what the channel kept comes now, to `feed`)
        if self._pending or self._raw or self._resized:
            self._next_turn()

    def _parse_some(self) -> None:
        """Parse the next PARSED_AT_ONCE characters of what the client sent. The start
        of a paste mark at the very end waits for what follows (it is taken out), or
        for ESCAPE_WAIT; a lone ESC there is the escape key, after ESCAPE_WAIT."""
        raw = self._raw
        cut = min(len(raw), PARSED_AT_ONCE)
        if cut == len(raw) and raw.endswith(PASTE_PREFIXES):
            cut = max(k for k in range(len(raw)) if raw[k] == "\x1b")
        text, self._raw = raw[:cut], raw[cut:]
        if text:
            self._pending.extend(self._parser.feed(text))
        if text or (self._raw and self._tick is None):
            if self._tick is not None:
                self._tick.cancel()
            self._tick = self._event_loop.call_later(ESCAPE_WAIT, self._flush_escape)

    def _flush_escape(self) -> None:
        """Nothing came for ESCAPE_WAIT: what waits at the end is what it is."""
        self._tick = None
        if not self._input:
            return
        if self._pending or len(self._raw) > PARSED_AT_ONCE:  # (the app is still busy)
            self._tick = self._event_loop.call_later(ESCAPE_WAIT, self._flush_escape)
            return
        text, self._raw = self._raw, ""
        if text == "\x1b":
            self._pending.append(events.Key("escape", "\x1b"))
        elif text:  # (the start of a paste mark, and nothing after it: the parser's now)
            self._pending.extend(self._parser.feed(text))
            self._tick = self._event_loop.call_later(ESCAPE_WAIT, self._flush_escape)
        else:
            self._pending.extend(self._parser.tick())
        self._next_turn()
