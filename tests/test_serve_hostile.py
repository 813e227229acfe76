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
