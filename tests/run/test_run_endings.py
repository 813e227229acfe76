"""How a run ends when the scenario fights it (issue 22): processes that leave the
process group and the session, a scenario that ignores SIGINT, a scenario that closes
mgtui's stream. Real processes, as a user runs them: `mgtui FILE ...`, or the runner.

Each test that starts a process able to outlive the run kills what is left at its end
(the machine is shared), after checking that nothing was left."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

HANG_GUARD = 60  # seconds: only so that a hang fails the test instead of the suite

# A scenario that starts a process which leaves its group: `how` is the code the process
# runs first. It writes its pid to PIDS once it has left, and sleeps; the scenario goes on
# only then (so the process is gone from the group before the scenario ends).
ESCAPE = """
import os, sys, time
from engine import Value

PIDS = {pids!r}
a = Value(2.0, label="a")
pid = os.fork()
if pid == 0:
    {how}
    with open(PIDS, "a") as f:
        f.write(f"{{os.getpid()}}\\n")
    time.sleep(1000)
    os._exit(0)
while not os.path.exists(PIDS) or not open(PIDS).read().endswith("\\n"):
    time.sleep(0.01)
{after}
b = a * 3.0; b.label = "b"
b.backward()
"""

HOW = {
    "setsid": "os.setsid()",
    "setpgid": "os.setpgid(0, 0)",
    # a daemon's double fork: its parent ends, so it is nobody's child
    "double fork": "os.setsid()\n    if os.fork():\n        os._exit(0)",
}


def alive(pid: int) -> bool:
    """Is `pid` a process that has not ended (a zombie has ended)?"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] != b"Z"


def ends(pid: int) -> bool:
    """Does `pid` end, soon? (A process signalled by one that is not its parent ends a
    moment later; the guard is only for a process that never does.)"""
    deadline = time.monotonic() + HANG_GUARD
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not alive(pid)


@pytest.fixture
def escapees(tmp_path):
    """The file escaped processes write their pids to; any still alive at the end are
    killed (after the test has said whether there were any)."""
    pids = tmp_path / "pids"
    yield pids
    for pid in read_pids(pids):
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def mgtui(*args, cwd=ROOT, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mgtui.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=HANG_GUARD, **kwargs)


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")


# -- 7. descendants that leave the process group ----------------------------------------


@needs_proc
@pytest.mark.parametrize("how", list(HOW))
@pytest.mark.parametrize("options", [(), ("--timeout", "3")], ids=["plain", "timeout"])
def test_a_process_that_leaves_the_group_ends_with_the_run(write_scenario, escapees, how,
                                                           options):
    """It used to keep the pipes open, and mgtui waited on them for ever (even with
    --timeout 3). Now the run ends when the scenario does, with its whole trace, and the
    process it left is gone."""
    path = write_scenario("escape", ESCAPE.format(pids=str(escapees), how=HOW[how],
                                                  after=""))
    result = mgtui(path, "--print", *options)
    assert result.returncode == 0, result.stderr
    assert "Nodes at the end (3)" in result.stdout
    pids = read_pids(escapees)
    assert len(pids) == 1
    assert not alive(pids[0])


@needs_proc
def test_the_runner_ends_a_process_that_left_the_group_when_the_scenario_is_stopped(
        write_scenario, escapees):
    """Stopped by --timeout while it sleeps: the scenario and what it left both end."""
    path = write_scenario("escape", ESCAPE.format(pids=str(escapees), how=HOW["setsid"],
                                                  after="time.sleep(1000)"))
    result = mgtui(path, "--print", "--timeout", "1")
    assert result.returncode == 1
    assert "recording stopped: timed out after 1 s" in result.stderr
    assert "Nodes at the end (1)" in result.stdout  # a
    assert not alive(read_pids(escapees)[0])


@needs_proc
def test_the_run_does_not_wait_on_pipes_once_its_process_has_ended(write_scenario,
                                                                    escapees):
    """The one way past the keeper: the scenario kills it, after leaving a process of
    its own session. That process still holds the pipes; the run reads them a moment
    more, and ends. (The scenario's own process, left in the keeper's group, is ended
    with the group.)"""
    path = write_scenario("kills_keeper", ESCAPE.format(
        pids=str(escapees), how=HOW["setsid"],
        after=("open(PIDS, 'a').write(f'{os.getpid()}\\n')\n"
               "os.kill(os.getppid(), 9)\n"
               "time.sleep(1000)")))
    result = mgtui(path, "--print")
    assert result.returncode == 1
    assert "its process was killed (SIGKILL" in result.stderr
    assert "Nodes at the end (1)" in result.stdout
    escaped, scenario = read_pids(escapees)
    assert ends(scenario)
    os.kill(escaped, signal.SIGKILL)  # (this one got away: the fixture's check is moot)


# -- 8. a scenario that ignores SIGINT ------------------------------------------------------

IGNORES = """
import os, signal, time
from engine import Value

for sig in {ignored}:
    signal.signal(sig, signal.SIG_IGN)
a = Value(1.0, label="a")
b = a * 2.0
open({ready!r}, "w").write(str(os.getpid()))
while True:
    time.sleep(0.01)
"""


def wait_for(path: Path, proc: subprocess.Popen) -> str:
    """What the scenario writes to `path` once it runs (failing if mgtui ended first)."""
    while not (path.exists() and path.read_text()):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    return path.read_text()


@needs_proc
@pytest.mark.parametrize("ignored, killed_by", [
    (("signal.SIGINT",), "SIGTERM"),
    (("signal.SIGINT", "signal.SIGTERM"), "SIGKILL"),
])
def test_ctrl_c_ends_a_scenario_that_ignores_sigint(write_scenario, tmp_path, ignored,
                                                    killed_by):
    """ctrl+c (SIGINT to mgtui) asks the scenario to stop; one that ignores SIGINT gets
    SIGTERM, then SIGKILL, within about a second, and the message says so."""
    ready = tmp_path / "ready"
    path = write_scenario("stubborn", IGNORES.format(ignored=f"({', '.join(ignored)},)",
                                                     ready=str(ready)))
    proc = subprocess.Popen([sys.executable, "-m", "mgtui.cli", str(path), "--print"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        scenario = int(wait_for(ready, proc))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert (f"recording stopped: interrupted; the scenario did not stop when asked, so its "
            f"process was killed ({killed_by})") in err
    assert "Nodes at the end (3)" in out  # what it recorded is kept
    assert not alive(scenario)


# -- 14. a scenario that closes mgtui's stream ------------------------------------------------

CLOSES = """
import os, time
from engine import Value

a = Value(2.0, label="a")
b = a * 3.0; b.label = "b"
time.sleep(0.2)  # (sent: the child flushes every 50 ms)
os.closerange(3, 1000)
{after}
for _ in range(100):
    b = b * 1.0
time.sleep(0.2)
b.backward()
"""


@pytest.mark.parametrize("after", ["", "reused = open({file!r}, 'wb')"],
                         ids=["closed", "number reused"])
def test_a_scenario_that_closes_its_stream_is_told_so(write_scenario, tmp_path, after):
    """It used to be reported as killed (SIGKILL: out of memory…), or as an os._exit(1)
    with mgtui's traceback. A file the scenario opens under the stream's old number gets
    none of the trace."""
    file = tmp_path / "reused.bin"
    path = write_scenario("closes", CLOSES.format(after=after.format(file=str(file))))
    result = mgtui(path, "--print")
    assert result.returncode == 1
    assert re.fullmatch(r"mgtui: \S+closes\.py: recording stopped: the scenario closed its "
                        r"stream to mgtui \(file descriptor \d+\), so the recording ended "
                        r"there \(the trace up to there was kept\)\n", result.stderr), \
        result.stderr
    assert "Traceback" not in result.stdout
    assert "Nodes at the end (3)" in result.stdout  # a, 3.0 and b: sent before it closed
    if after:
        assert file.read_bytes() == b""


# -- mgtui's own failures, never the scenario's os._exit (issue 33) -----------------------

BREAKS_PATH = """
from engine import Value
a = Value(2.0, label="a")
b = a * 3.0; b.label = "b"
b.backward()
import sys
sys.path = None  # the recorder's sandbox then fails to put the import path back
"""


def test_mgtui_failing_after_the_scenario_is_not_the_scenarios_os_exit(write_scenario):
    """An exception in mgtui's code once the scenario has run (here the sandbox putting
    back a `sys.path` the scenario replaced) left the scenario's `os._exit` stand-in in
    place, through which the process then ended: reported as "the scenario called
    os._exit(1)", which nothing did (the stray report of a `mgtui diff` run)."""
    from mgtui.run.runner import run

    result = run(write_scenario("breaks_path", BREAKS_PATH))
    assert not result.finished and "os._exit" not in result.message
    assert result.message.startswith("mgtui's recording process failed, in mgtui's own "
                                     "code, not the scenario's: TypeError: ")
    assert "Traceback" in result.trace.output  # (mgtui's, for a bug report)
    # what was recorded before it failed was sent: a, 3.0, b
    assert result.trace.node_count == 3 and result.trace.label(0) == "a"


PLANTED_JOB = '''
def make():
    raise RuntimeError("planted failure before the recording starts")
'''


def test_a_failure_before_the_recording_starts_is_mgtuis(write_scenario, tmp_path,
                                                        monkeypatch):
    """mgtui failing in the recording process before the scenario ran (a job that cannot
    be made; a fork refused) exited 1: "the scenario ended its process with os._exit(1)"."""
    from mgtui.errors import ScenarioLoadError
    from mgtui.run.runner import Run, RunSpec

    (tmp_path / "planted_job.py").write_text(PLANTED_JOB)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    path = write_scenario("fine", "from engine import Value\nValue(1.0).backward()\n")
    with pytest.raises(ScenarioLoadError) as caught:
        Run(RunSpec(str(path), job="planted_job:make")).run()
    message = caught.value.message
    assert "os._exit" not in message, message
    assert message.endswith("before it started recording: mgtui's recording process "
                            "failed, in mgtui's own code, not the scenario's: RuntimeError: "
                            "planted failure before the recording starts")
