"""Quiz mode for self-study (`mgtui FILE --quiz`, issue 23 item 3): the Session asks at
each backward step for the grad it accumulates and hides the grads it writes until the
student answers; the app shows them as ? in the node table, the Graph pane and the topo
list, hides the step's working, takes the prediction on `a`, says right or wrong and at
the end the score. The chain lesson's step 9 is L's _backward: dL/dd = f = -2, and its
step 13 is e's: dL/da = b * dL/de = -3 * -2 = 6 (the lecture's numbers)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mgtui.run.lessons import record_lesson
from mgtui.session import Session
from mgtui.tui.app import MgtuiApp
from mgtui.tui.widgets.graph import GraphPane
from mgtui.tui.widgets.node_table import NodeTable
from mgtui.tui.widgets.step_detail import StepDetail
from mgtui.tui.widgets.topo_list import TopoList

from tests.conftest import SCENARIOS
from tests.tui.test_app_graph import loaded

pytestmark = pytest.mark.usefixtures("clean_env", "no_user_config")
ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture(scope="module")
def chain():
    return record_lesson(SCENARIOS / "chain.py", "chain.py").trace


def test_the_session_hides_asks_judges_and_scores(chain):
    session = Session(chain, quiz=True)
    assert session.goto(8).hidden == frozenset() and session.state.quiz == ""  # forward
    state = session.goto(9)
    d, f = (n for n in range(chain.node_count) if chain.label(n) in ("d", "f"))
    assert state.hidden == {d, f}  # L's _backward writes d.grad and f.grad
    assert state.quiz == ("quiz: predict d.grad after this step (right within ± 0.02) — "
                          "press a to answer")
    assert state.detail.asked == state.quiz  # the working is hidden too
    state = session.answer(-2.0)
    assert state.hidden == frozenset() and state.detail.asked == ""
    assert state.quiz == "quiz: you said -2: right ✓ (d.grad = -2)"
    assert session.answer(7.0).quiz == state.quiz  # the first answer counts
    session.goto(11)  # e's question, passed without an answer
    state = session.goto(13)
    assert state.quiz.startswith("quiz: predict a.grad") and "± 0.06" in state.quiz
    assert session.answer(-6.0).quiz == "quiz: you said -6: wrong ✗ (a.grad = 6)"
    assert session.goto(9).hidden == frozenset()  # answered: shown when coming back
    assert session.goto(11).hidden  # still asked
    assert session.end().quiz == ("quiz score: 1 of 2 right (50%) · 1 step passed "
                                  "without an answer")
    plain = Session(chain)
    assert plain.goto(9).hidden == frozenset() and plain.state.quiz == ""


def grad_cells(table: NodeTable, label: str) -> str:
    """Node `label`'s row in the node table, as drawn."""
    for y in range(table.size.height):
        text = table.render_line(y).text
        if f" {label} " in text[:14]:
            return text
    raise AssertionError(f"no row {label}")


def pane_text(widget) -> str:
    return "\n".join(widget.render_line(y).text for y in range(widget.size.height))


async def test_the_app_hides_every_grad_until_the_prediction():
    app = MgtuiApp(SCENARIOS / "chain.py", step=9)
    app.debugger.quiz = True
    async with app.run_test(size=(160, 48)) as pilot:  # (the Graph pane shown beside)
        screen = await loaded(pilot)
        await pilot.pause()
        table, graph = screen.query_one(NodeTable), screen.query_one(GraphPane)
        line = screen.query_one("#quiz-line")
        assert line.display and "predict d.grad" in str(line.render())
        row = grad_cells(table, "d")
        assert row.rstrip().split()[5] == "?" and "-2.0" not in row, row
        assert grad_cells(table, "L").split()[5] == "1.0"  # the seed: not asked
        drawn = pane_text(graph)  # the Graph pane gives nothing away: d's box and f's
        assert re.search(r"d │\s+4\.0 │\s+\? ", drawn), drawn
        assert re.search(r"f │\s+-2\.0 │\s+\? ", drawn), drawn
        assert "-2" not in pane_text(screen.query_one(TopoList))
        detail = pane_text(screen.query_one(StepDetail))
        assert "predict d.grad" in detail and "-2" not in detail, detail
        await pilot.press("a")
        await pilot.pause()
        for ch in "-3":
            await pilot.press(ch if ch != "-" else "minus")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
        assert "wrong ✗ (d.grad = -2)" in str(line.render())
        assert grad_cells(table, "d").split()[5] == "-2.0"
        assert re.search(r"d │\s+4\.0 │\s+-2\.0 ", pane_text(graph)), pane_text(graph)
        assert "?" not in pane_text(graph)
        assert "d.grad" in pane_text(screen.query_one(StepDetail))
        await pilot.press("G")
        await pilot.pause()
        await pilot.pause()
        assert "quiz score: 0 of 1 right (0%) · 2 steps passed without an answer" in str(
            line.render())


def test_quiz_goes_with_the_app_only():
    out = subprocess.run([sys.executable, "-m", "mgtui.cli", str(SCENARIOS / "chain.py"), "--quiz",
                          "--print"], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "NO_COLOR": "1"}, timeout=60)
    assert out.returncode == 2 and "--quiz is the app's quiz mode" in out.stderr


def test_the_command_line_quiz_in_a_terminal(tmp_path):
    """`mgtui chain.py --quiz --step 9` as a person runs it, on a terminal (a pty, read
    through pyte): d's grad is ? and the question is asked; a, -2, enter: right; q: the
    score is printed on the terminal after the app has gone."""
    import pty
    import select
    import time

    pyte = pytest.importorskip("pyte")
    screen = pyte.Screen(100, 30)
    stream = pyte.ByteStream(screen)
    pid, fd = pty.fork()
    if pid == 0:  # the child: mgtui on the pty
        os.chdir(ROOT)
        os.environ.update(TERM="xterm-256color", COLUMNS="100", LINES="30",
                          XDG_CONFIG_HOME=str(tmp_path / "config"))
        os.execv(sys.executable, [sys.executable, "-m", "mgtui.cli",
                                  str(SCENARIOS / "chain.py"), "--quiz", "--step", "9"])
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    seen = bytearray()

    def wait_for(text: str, timeout: float = 60) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in "\n".join(screen.display) or text.encode() in seen:
                return True
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    return text.encode() in seen
                seen.extend(data)
                stream.feed(data)
        return False

    try:
        assert wait_for("predict d.grad after this step"), "\n".join(screen.display)
        assert wait_for("step 9/15")
        os.write(fd, b"a")
        assert wait_for("Your prediction"), "\n".join(screen.display)
        os.write(fd, b"-2\r")
        assert wait_for("right ✓ (d.grad = -2)"), "\n".join(screen.display)
        os.write(fd, b"q")
        assert wait_for("mgtui: quiz score: 1 of 1 right (100%)"), seen[-500:]
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)
