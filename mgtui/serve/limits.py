"""What one client may cost a class server, whatever it sends: the largest window a
session is drawn at, how much of its input waits for the app, how many logins one
address may have open at once and how long a connection may say nothing. (README.md,
"Teaching a class", lists every limit.)"""

from __future__ import annotations

# The largest window a session is drawn at; a client asking for more gets this much. An
# app's memory grows with its cells: a 65535x65535 window took a worker past 4 GB.
MAX_WIDTH, MAX_HEIGHT = 500, 200
# Characters a client sent that wait for its app (each key a step to take, and a frame
# to draw). Past this the channel is not read, and SSH makes the client wait (its
# window is CHANNEL_WINDOW): keys held down or sent as fast as SSH allows took a worker
# past 4 GB, and kept a session stepping for minutes after its client had gone.
INPUT_HELD = 4096
CHANNEL_WINDOW = 64 << 10  # bytes a client may send that the server has not read


def capped(width: int, height: int) -> tuple[int, int]:
    """A window size a session is drawn at: at least 1x1, at most MAX_WIDTH x MAX_HEIGHT."""
    return (min(max(width, 1), MAX_WIDTH), min(max(height, 1), MAX_HEIGHT))


# Connections from one address that have not logged in yet (each is held until its
# login times out): past this, another from there is closed at once, so one machine
# cannot hold every connection the class has room for (twice the sessions, and ten)
# and lock the students out. `--max-logins-per-address` changes it (a class behind
# one NAT address, all typing the password at once, may need more).
LOGINS_PER_ADDRESS = 10
# Seconds a connection may send nothing that starts a login (its key exchange and its
# user name) before it is closed: a real client takes well under a second.
QUIET_TIMEOUT = 10.0
