"""The class server's log: where its lines go (stderr, or a file when this terminal
teaches), and what a worker process's lines say about which it is."""

from __future__ import annotations

import logging
import sys


def setup_log(teach: bool, worker: int | None = None) -> str:
    """Connections are logged to stderr, or to a file when this terminal teaches; a
    worker process's lines say which it is. Returns where the log goes."""
    log = logging.getLogger("mgtui.serve")
    log.setLevel(logging.INFO)
    if teach:
        from mgtui.serve.auth import state_dir

        state_dir().mkdir(parents=True, exist_ok=True)
        where = str(state_dir() / "serve.log")
        handler: logging.Handler = logging.FileHandler(where)
    else:
        where = "stderr"
        handler = logging.StreamHandler(sys.__stderr__)  # (each app redirects sys.stderr)
    which = "" if worker is None else f"[worker {worker}] "
    handler.setFormatter(logging.Formatter(f"%(asctime)s {which}%(message)s"))
    log.addHandler(handler)
    return where
