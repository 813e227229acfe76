"""The class server's log: where its lines go (stderr, or a file when this terminal
teaches), and every line inert.

What a client sends ends up in log lines: its user name, its TERM, the reason it gives
for disconnecting, before it has logged in. Each line passes through the same
`mgtui.safe.inert_line` as the app's text, and each string in it is cut to
`CLIENT_TEXT` characters, so a client can neither forge a line (`password accepted for
admin …`) nor send the operator's terminal an escape sequence (retitle it, clear it).
The libraries' warnings (asyncssh, aiohttp) go through the same formatter.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping

from mgtui.safe import inert_line

CLIENT_TEXT = 200  # characters of any one string a log line keeps


def clipped(value: object) -> object:
    """A log line's argument: numbers as they are, anything else as a string of at most
    `CLIENT_TEXT` characters."""
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    if len(text) > CLIENT_TEXT:
        text = f"{text[:CLIENT_TEXT]}… ({len(text):,} characters)"
    return text


class InertFormatter(logging.Formatter):
    """Formats a record with its arguments clipped and the whole message on one inert
    line; a traceback keeps its lines, each inert and indented, so none reads as a line
    of the log."""

    def format(self, record: logging.LogRecord) -> str:
        record = logging.makeLogRecord(record.__dict__)  # (other handlers see the original)
        args = record.args
        if args and not isinstance(args, Mapping):
            record.args = tuple(clipped(a) for a in args)
        record.msg, record.args = inert_line(record.getMessage()), None
        return super().format(record)

    def formatException(self, ei) -> str:
        return "\n".join(f"    {inert_line(line)}"
                         for line in super().formatException(ei).splitlines())

    def formatStack(self, stack_info: str) -> str:
        return "\n".join(f"    {inert_line(line)}" for line in stack_info.splitlines())


def setup_log(teach: bool, worker: int | None = None) -> str:
    """Connections are logged to stderr, or to a file when this terminal teaches; a
    worker process's lines say which it is. Returns where the log goes."""
    where = "stderr"
    if teach:
        from mgtui.serve.auth import state_dir

        state_dir().mkdir(parents=True, exist_ok=True, mode=0o700)  # (the host key's too)
        where = str(state_dir() / "serve.log")
    which = "" if worker is None else f"[worker {worker}] "
    formatter = InertFormatter(f"%(asctime)s {which}%(message)s")

    def handler(level: int) -> logging.Handler:
        made = (logging.FileHandler(where, encoding="utf-8") if teach
                else logging.StreamHandler(sys.__stderr__))  # (each app redirects sys.stderr)
        made.setLevel(level)
        made.setFormatter(formatter)
        return made

    log = logging.getLogger("mgtui.serve")
    log.setLevel(logging.INFO)
    log.addHandler(handler(logging.INFO))
    log.propagate = False
    # the libraries' warnings: through the same formatter, not Python's raw last resort
    logging.getLogger().addHandler(handler(logging.WARNING))
    return where


def quiet_asyncssh_warnings() -> None:
    """Leave out of the log the deprecation warnings asyncssh's own modules raise on
    import (cryptography's "DSA is deprecated", ten lines at the top of every server's
    log, about a key type the server neither offers nor asks for): only that warning,
    only from asyncssh's crypto modules. Call before asyncssh is imported."""
    import warnings

    try:
        from cryptography.utils import CryptographyDeprecationWarning
    except ImportError:  # (no cryptography: no asyncssh, nothing to quiet)
        return
    warnings.filterwarnings("ignore", message=r"DSA is deprecated",
                            category=CryptographyDeprecationWarning,
                            module=r"asyncssh\.crypto(\.|$)")
