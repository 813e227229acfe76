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
        # (issue 35: not ten lines of asyncssh's import-time deprecation warnings first)
        assert not [line for line in log if "Warning" in line], "".join(log)
    finally:
        await server.close()


def test_only_asyncssh_dsa_warning_is_quieted(recwarn):
    import warnings

    from cryptography.utils import CryptographyDeprecationWarning

    from mgtui.serve.log import quiet_asyncssh_warnings

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        quiet_asyncssh_warnings()
        dsa = "DSA is deprecated and support will be removed"
        for message, module in ((dsa, "asyncssh.crypto.dsa"), (dsa, "mgtui.x"),
                                ("Blowfish is deprecated", "asyncssh.crypto.cipher")):
            warnings.warn_explicit(message, CryptographyDeprecationWarning, "f.py", 1, module)
    shown = [(str(w.message), w.filename) for w in recwarn]
    assert len(shown) == 2 and "Blowfish" in shown[1][0], shown
