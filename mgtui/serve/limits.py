"""What one client may cost a class server, whatever it sends: the largest window a
session is drawn at. (README.md, "Teaching a class", lists every limit.)"""

from __future__ import annotations

# The largest window a session is drawn at; a client asking for more gets this much. An
# app's memory grows with its cells: a 65535x65535 window took a worker past 4 GB.
MAX_WIDTH, MAX_HEIGHT = 500, 200


def capped(width: int, height: int) -> tuple[int, int]:
    """A window size a session is drawn at: at least 1x1, at most MAX_WIDTH x MAX_HEIGHT."""
    return (min(max(width, 1), MAX_WIDTH), min(max(height, 1), MAX_HEIGHT))
