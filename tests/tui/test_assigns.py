"""`=` inside `_backward`: the write is marked `=` (not `+=`) in the node table, and its
line `!` in the Source pane, read from the closure's source, at every step."""

from pathlib import Path

import pytest

from mgtui.tui.app import MgtuiApp
from mgtui.session.assigns import assigning_lines
from mgtui.recording.recorder import record
from mgtui.session import Session
from mgtui.trace import Closure
from mgtui.tui.widgets.node_table import MARKS, NodeTable
from mgtui.tui.widgets.source_view import SourceView

BUGS = Path(__file__).resolve().parent.parent.parent / "scenarios" / "bugs"
OVERWRITE = BUGS / "overwrite.py"

pytestmark = pytest.mark.usefixtures("clean_env")


def closure(*lines: str, first: int = 10) -> Closure:
    return Closure("_backward", "f.py", first, lines)


def test_assigning_lines_are_read_from_the_source():
    c = closure("    def _backward():",
                "        x.grad = (1 - t**2) * out.grad",
                "        y.grad += 2 * out.grad",
                "        z.grad = z.grad + out.grad",
                "        w.grad = (out.grad",
                "                  * 3)",
                "        out.data = 1")
    assert assigning_lines(c) == {11, 14, 15}
    assert assigning_lines(closure("  def broken(:")) == frozenset()


def line_of(path: Path, text: str) -> int:
    (n,) = [i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s]
    return n


def tanh_step(trace) -> int:
    (o,) = trace.find("o")
    (i,) = [i for i in range(len(trace)) if trace.kind(i) == "backward"
            and trace.event_node(i) == o]
    return i + 1


def test_session_marks_the_assigned_grad_and_its_line():
    trace = record(OVERWRITE)
    session = Session(trace)
    state = session.goto(tanh_step(trace))
    (n,) = trace.find("n")
    assert state.marks[n] == "assign"
    line = line_of(OVERWRITE, "x.grad = (1 - t**2) * out.grad  # BUG")
    assert state.source.marked == {line: "!"}
    # an engine op's `+=` stays `+=`
    chain = record(BUGS.parent / "neuron.py")
    s2 = Session(chain)
    (o2,) = chain.find("o")
    step = next(i for i in range(len(chain)) if chain.kind(i) == "backward"
                and chain.event_node(i) == o2) + 1
    assert set(s2.goto(step).marks.values()) == {"run", "acc"}


async def test_the_app_shows_the_marks():
    app = MgtuiApp(OVERWRITE)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        for _ in range(400):
            if screen.trace is not None:
                break
            await pilot.pause(0.05)
        screen.goto(tanh_step(screen.trace))
        await pilot.pause()
        table = screen.query_one(NodeTable)
        (n,) = screen.trace.find("n")
        row = table._row(table.view.row_of(n, screen.trace.node_count)).text
        assert row.lstrip().startswith(MARKS["assign"].strip()) and "+=" not in row
        source = screen.query_one(SourceView).text
        (marked,) = [s for s in source.splitlines() if s.lstrip().startswith("!")]
        assert "x.grad = (1 - t**2) * out.grad" in marked
