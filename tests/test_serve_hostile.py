"""`mgtui serve` against hostile clients: what they send in the log, windows too big
to draw, keys faster than a session can step, idle connections held open, loose files.
Real asyncssh clients against a real server on 127.0.0.1, run as a user runs it."""

from __future__ import annotations

import asyncio
import re

import pytest

asyncssh = pytest.importorskip("asyncssh")
pytest.importorskip("pyte")

from sshclient import PASSWORD, ServerProcess  # noqa: E402

FORGED = "\n2099-01-01 00:00:00,000 password accepted for admin@10.0.0.1 as teacher"
RETITLE = "\x1b]0;pwned\x07"


class Leaving(asyncssh.SSHClient):
    """A client that gives a hostile reason for leaving, before it has logged in."""

    def connection_made(self, conn) -> None:
        self.conn = conn

    def password_auth_requested(self):
        self.conn.disconnect(asyncssh.DISC_PROTOCOL_ERROR, "bye" + RETITLE + FORGED)
        return None


async def test_what_a_client_sends_reaches_the_log_inert(tmp_path):
    srv = ServerProcess(tmp_path, "--workers", "1")
    try:
        # (asyncssh refuses a user name with controls in it, but not a long one)
        with pytest.raises(asyncssh.PermissionDenied):
            await asyncssh.connect("127.0.0.1", srv.port, username="eve" * 300,
                                   password="wrong password", known_hosts=None,
                                   agent_path=None, client_keys=[], preferred_auth="password")
        try:  # a hostile reason for leaving, before login
            conn, _ = await asyncssh.create_connection(
                Leaving, "127.0.0.1", srv.port, username="class", known_hosts=None,
                agent_path=None, client_keys=[], preferred_auth="password")
            await asyncio.wait_for(conn.wait_closed(), 10)
        except (asyncssh.Error, OSError):
            pass
        client = await srv.join(password=PASSWORD, term="xterm" + RETITLE + FORGED)
        assert await client.wait_for("step ", 15), client.text()  # (a TERM of no terminal)
        await srv.logged(r"TERM .* is no terminal's name: served as xterm")
        client.conn.disconnect(asyncssh.DISC_PROTOCOL_ERROR, "later" + RETITLE + FORGED)
        await srv.logged(r"session end class@")
        await srv.logged(r"disconnect 127\.0\.0\.1:\d+ \(later")
        await srv.logged(r"disconnect 127\.0\.0\.1:\d+ \(bye")
        log = "".join(srv.log)
        assert "\x1b" not in log and "\x07" not in log, log
        assert not re.search(r"^2099-01-01", log, re.M), log  # no forged line
        assert log.count("\\x1b]0;pwned\\x07\\n2099-01-01") >= 4, log  # shown, on its line
        assert "password refused for eveeve" in log and "… (900 characters)@127.0.0.1" in log
        assert "eve" * 100 not in log  # (cut to 200 characters)
    finally:
        await srv.close()


# -- 1. windows too big to draw -------------------------------------------------------------------

def drawn_at(client, width: int) -> bool:
    """The client's screen is drawn `width` wide: the header's `step N/M` ends at its
    right edge (one cell in), and nothing is drawn right of it or under row 200."""
    lines = client.text().splitlines()
    steps = [line.rstrip() for line in lines if re.search(r"step \d+/\d+$", line.rstrip())]
    return (bool(steps) and width - 2 <= len(steps[0]) <= width
            and max(len(line.rstrip()) for line in lines) <= width
            and not "".join(lines[200:]).strip())


def top(client) -> str:
    return "\n".join(line.rstrip()[-80:] for line in client.text().splitlines()[:3])


async def test_a_window_too_big_is_drawn_at_500_by_200(tmp_path):
    srv = ServerProcess(tmp_path, "--workers", "1")
    try:
        # a terminal of 600x250 on the client's side, asking for 2000x600: the header ends
        # at column 500 (the screen's right edge), and nothing is drawn under row 200
        client = await srv.join(password=PASSWORD, size=(600, 250), asks=(2000, 600))
        assert await client.wait_for(lambda _: drawn_at(client, 500), 20), top(client)
        await srv.logged(r"session start class@\S+ as student \(xterm-256color, 500x200\)")
        # a resize to 400x100, then to 30000x30000: back to 500x200
        client.resize(400, 100)
        assert await client.wait_for(lambda _: drawn_at(client, 400), 10), top(client)
        client.screen.resize(250, 600)  # (the emulator 600x250 again, asking for more)
        client.chan.change_terminal_size(30000, 30000)
        assert await client.wait_for(lambda _: drawn_at(client, 500), 10), top(client)
        # a size reported in band, among the keys (CSI 48 ; rows ; columns ; ... t), is
        # not the window's: it is ignored
        client.send("\x1b[48;600;2000;0;0tn")
        assert await client.wait_for(lambda _: "step 1/" in client.text(), 10)
        await asyncio.sleep(0.3)
        assert drawn_at(client, 500), top(client)
    finally:
        await srv.close()
