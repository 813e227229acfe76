"""Saving a trace to a file, all or nothing: a save that fails or is killed partway
leaves whatever the path held before, never a truncated file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable


def save_trace(trace, path: str | os.PathLike,
               on_progress: Callable[[int, int], None] | None = None) -> Path:
    """Write `trace` to `path`: JSON if its name ends in `.json`, else the binary format.

    The bytes go to a temporary file beside `path`, are flushed to disk, and only then
    replace it (`os.replace`, atomic on one file system). Raises `OSError` (a missing
    folder, no permission, a full disk, a file size limit) with nothing changed at
    `path`. `on_progress(steps, all steps)` as a binary file is encoded."""
    path = Path(path)
    data = encoded(trace, path, on_progress)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial",
                                dir=path.parent if str(path.parent) else ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return path


def encoded(trace, path: Path, on_progress: Callable[[int, int], None] | None = None) -> bytes:
    if path.suffix == ".json":
        from mgtui.trace.export import dumps

        return dumps(trace).encode("utf-8")
    from mgtui.trace.binary import dumpb

    return dumpb(trace, on_progress)
