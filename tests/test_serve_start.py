"""Quick to start (issue 23, item 5, the server's half): `mgtui serve` accepts students
as soon as the lessons are recorded, and warms up in the background. Checked by the
order of events in its log (the port announced, a student's session started, the
warm-up done), not by the clock."""

from __future__ import annotations

import pytest

pytest.importorskip("asyncssh")
pytest.importorskip("pyte")

from sshclient import PASSWORD, ServerProcess  # noqa: E402


def first(log: list[str], text: str) -> int:
    return next(i for i, line in enumerate(log) if text in line)


@pytest.mark.parametrize("workers", ["1", "2"])
async def test_the_server_listens_before_its_warm_up_is_done(tmp_path, workers):
    server = ServerProcess(tmp_path, "--workers", workers, lessons=())
    try:
        student = await server.join(password=PASSWORD)
        assert await student.wait_for("step 0/", 30), student.text()
        done = await server.logged(r"warmed up \d+ lesson", timeout=120)
        log = list(server.log)
        listening = first(log, "students type: ssh -p")
        assert listening < log.index(done), "".join(log)
        assert first(log, "recording chain.py") < listening
    finally:
        await server.close()
