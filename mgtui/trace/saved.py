"""Whether a file is a saved trace to read, JSON or binary, rather than a scenario to run.
A module of its own, light to import: the app asks it before its first frame, and
`mgtui.trace.export` (JSON reading and writing) is not needed then."""

from __future__ import annotations

import os
from pathlib import Path

from mgtui.trace import binary

SUFFIX = ".json"  # a saved trace in JSON (`mgtui.trace.export`)


def is_saved_trace(path: str | os.PathLike) -> bool:
    """Is this a saved trace to read, JSON or binary, rather than a scenario to run? By
    its name (`.json`, `.mgtrace`), or by the magic a binary trace starts with. (The one
    place that says so: the command line, the app and the lessons all ask here.)"""
    return Path(path).suffix == SUFFIX or binary.is_trace_file(path)
