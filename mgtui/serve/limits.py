"""What one client may cost a class server, whatever it sends: the largest window a
session is drawn at, how much of its input waits for the app, how many logins one
address may have open at once and how long a connection may say nothing. (docs/teaching.md,
"What one student can cost the class", lists every limit.)"""

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


# Sessions one login may have open at once (a key, or a login name of one person's own);
# `--max-sessions-per-login` changes it. Two terminals, and one to spare.
SESSIONS_PER_LOGIN = 3
# Login names shared by a class (the join command's `class`): no one person's, so they
# count per address only, and their quiz answers per session.
SHARED_NAMES = frozenset({"", "class", "student", "students", "guest", "anonymous", "user"})
IDENTITY_CHARS = 200  # of a login name, in an identity (a client chooses it)


def identity_of(user: str, key_fingerprint: str = "") -> str:
    """One person across their sessions and the server's processes: `key SHA256:…` for
    a key, `login NAME` for a password login under a name of their own, "" for one
    under a name a class shares (SHARED_NAMES)."""
    if key_fingerprint:
        return f"key {key_fingerprint}"
    if user.strip().casefold() in SHARED_NAMES:
        return ""
    return f"login {user[:IDENTITY_CHARS]}"


def sessions_per_address(max_sessions: int) -> int:
    """`--max-sessions-per-address`'s default: half the class, and 10 at least (a
    machine that holds half the seats leaves the rest to everyone else; a class behind
    one NAT address raises it)."""
    return max(10, max_sessions // 2)


def seat_refused(logins: dict, addresses: dict, identity: str, host: str,
                 per_login: int, per_address: int) -> str:
    """Why a session of `identity` from `host` gets no seat ("" if it does): `logins`
    and `addresses` count the sessions open now, in every process of the class."""
    mine = logins.get(identity, 0) if identity else 0
    if mine >= per_login:
        return (f"this login has {mine} sessions open already (at most {per_login}): end "
                "one first")
    there = addresses.get(host, 0)
    if there >= per_address:
        return (f"{there} sessions are open from your address already (at most "
                f"{per_address}): try later")
    return ""


def heaviest(pending: dict, host: str) -> str | None:
    """The address to close a login in progress of, to make room for one from `host`
    when the class's connections are all taken: the one with the most logins in
    progress, if it has more than `host` (None: `host` itself holds the most)."""
    if not pending:
        return None
    top = max(pending, key=lambda h: (pending[h], h != host))
    return top if top != host and pending[top] > pending.get(host, 0) else None
