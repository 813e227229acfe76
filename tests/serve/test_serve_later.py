"""A class opens with its first lesson (issue 35, point 9: a class of four lessons took
10-13 s to a student's first screen, waiting for every lesson to be recorded). The
lessons after it are recorded meanwhile and join the picker when ready, in one process
and across the worker processes; one that cannot be recorded is said in the log, and
the class goes on without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("asyncssh")
pytest.importorskip("pyte")

from sshclient import PASSWORD, ServerProcess  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
PICKER = "pick a scenario"

SLOW = '''"""A lesson that takes its time to record

It waits for the test's word (a file) before it builds its graph."""

import os
import time

from engine import Value

deadline = time.monotonic() + 100
while not os.path.exists({flag!r}) and time.monotonic() < deadline:
    time.sleep(0.05)
x = Value(3.0, label='x')
y = x * x; y.label = 'y'
'''

BROKEN = '''"""A lesson that cannot be loaded"""

def (:
'''


def lessons(tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    """chain.py first, then a lesson that waits for `flag`, then one with a syntax error."""
    flag = tmp_path / "go"
    (tmp_path / "slow.py").write_text(SLOW.format(flag=str(flag)))
    (tmp_path / "broken.py").write_text(BROKEN)
    return flag, (str(ROOT / "scenarios" / "chain.py"), str(tmp_path / "slow.py"),
                  str(tmp_path / "broken.py"))


@pytest.mark.parametrize("workers", ["1", "2"])
async def test_a_student_gets_the_first_lesson_while_the_others_record(tmp_path, workers):
    if workers != "1" and not hasattr(os, "fork"):
        pytest.skip("workers are forked")
    flag, named = lessons(tmp_path)
    server = ServerProcess(tmp_path, "--workers", workers, lessons=named)
    try:
        log = "".join(server.log)
        assert "1 lesson on" in log and "more being recorded" in log, log
        assert "slow.py recorded" not in log, log
        student = await server.join(password=PASSWORD)
        # nobody leads, one lesson so far: straight onto it (no picker of one)
        assert await student.wait_for(lambda t: "step 0/" in t and PICKER not in t,
                                      30), student.text()
        assert "The chain rule" in student.text()
        student.send("o")
        assert await student.wait_for(PICKER), student.text()
        assert "slow.py" not in student.text()  # (still being recorded)
        student.send("\x1b")
        assert await student.wait_for(lambda t: PICKER not in t), student.text()
        # the one that cannot be recorded is said, and the class goes on
        await server.logged(r"lesson broken\.py cannot be served .*broken\.py", timeout=30)
        flag.write_text("go")
        await server.logged(r"lesson slow\.py recorded: in the lesson picker now", timeout=60)
        student.send("o")
        assert await student.wait_for(lambda t: PICKER in t and "slow.py" in t), \
            student.text()
        assert "broken.py" not in student.text()
        student.send("\x1b[B\r")  # down to slow.py, enter
        assert await student.wait_for(lambda t: "takes its time" in t and PICKER not in t,
                                      10), student.text()
        # a later joiner (in any worker) has it too: in the picker nobody leads from
        late = await server.join(password=PASSWORD)
        assert await late.wait_for(lambda t: PICKER in t and "slow.py" in t, 30), late.text()
    finally:
        flag.write_text("go")
        await server.close()


# -- the warm-up lets a student on their way in go first ----------------------------------------

def test_a_connection_is_arriving_until_its_session_has_drawn(tmp_path):
    from mgtui.serve.server import Class

    klass = Class({}, auth=None)
    assert not klass.arriving
    klass.connections = 1  # logging in
    assert klass.arriving
    session = type("Session", (), {"drawn": False})()
    klass.sessions.add(session)
    assert klass.arriving  # its session is starting
    assert not klass.served
    session.drawn = True
    assert not klass.arriving


async def test_the_warm_up_waits_for_a_student_on_their_way_in(monkeypatch):
    import asyncio
    from types import SimpleNamespace

    from mgtui.run.lessons import record_lesson
    from mgtui.serve import warm
    from mgtui.serve.app import ServedApp

    lesson = record_lesson(ROOT / "scenarios" / "chain.py", "chain.py")
    ran: list[str] = []

    async def run_async(self, **_options):
        ran.append(self.lesson)

    monkeypatch.setattr(ServedApp, "run_async", run_async)
    klass = SimpleNamespace(arriving=True, served=False)
    warming = asyncio.ensure_future(warm.warm_up({"chain.py": lesson}, klass=klass))
    await asyncio.sleep(0.5)
    assert ran == [] and not warming.done()  # (the student first)
    klass.arriving = False
    assert await asyncio.wait_for(warming, 10) == 1
    assert ran == ["chain.py"]
    # one who never draws holds it up FIRST_SCREEN_WAIT at most
    monkeypatch.setattr(warm, "FIRST_SCREEN_WAIT", 0.2)
    klass.arriving = True
    assert await asyncio.wait_for(warm.warm_up({"chain.py": lesson}, klass=klass), 10) == 1
    # a session has drawn here: it loaded what the warm-up would, which stands down
    klass.arriving, klass.served = False, True
    assert await warm.warm_up({"chain.py": lesson}, klass=klass) == 0
    assert ran == ["chain.py"] * 2


@pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="a thread's own niceness")
def test_the_lessons_after_the_first_record_at_a_lower_priority():
    import subprocess
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from mgtui.serve.later import LATER_NICENESS, behind

    def niceness() -> tuple[int, int]:
        """This thread's, and a child process's it starts."""
        child = subprocess.run(["sh", "-c", "cut -d' ' -f19 /proc/self/stat"],
                               capture_output=True, text=True, check=True)
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id()), int(child.stdout)

    base = os.getpriority(os.PRIO_PROCESS, 0)
    with ThreadPoolExecutor(1) as pool:
        later = behind(niceness)
        assert pool.submit(later).result() == (base + LATER_NICENESS,) * 2
        assert pool.submit(later).result() == (base + LATER_NICENESS,) * 2  # (not lower again)
    assert os.getpriority(os.PRIO_PROCESS, 0) == base  # (this thread: as it was)
