"""The Checks pane: the gradient doctor in the app, run in a worker, its findings
listed, and a chosen finding taking the timeline to its step and node."""

from pathlib import Path

from textual.widgets import OptionList, TabbedContent

from mgtui.tui.app import MgtuiApp
from mgtui.tui.widgets.checks import ChecksPane
from mgtui.tui.widgets.node_table import NodeTable
from mgtui.tui.widgets.source_view import SourceView

SCENARIOS = Path(__file__).resolve().parent.parent.parent / "scenarios"


async def wait_for(pilot, condition, seconds=90.0):
    """Until `condition()` holds, or `seconds` pass: the doctor runs the scenario in
    processes of its own, which a stalled disk (a fresh install writing back) can hold
    up for tens of seconds; a healthy run returns in a few."""
    for _ in range(int(seconds / 0.05)):
        if condition():
            return True
        await pilot.pause(0.05)
    return condition()


async def test_findings_are_listed_marked_and_lead_to_their_step():
    app = MgtuiApp(SCENARIOS / "bugs" / "wrong_derivative.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        assert await wait_for(pilot, lambda: screen.trace is not None)
        await pilot.press("d")
        pane = screen.query_one(ChecksPane)
        assert screen.query_one("#side", TabbedContent).active == "tab-checks"
        assert await wait_for(pilot, lambda: pane.findings)
        assert "1 problem found" in pane.status
        [finding] = pane.findings
        # the bug planted in the scenario: sigmoid's derivative without its (1 - s)
        assert finding.kind == "wrong-derivative" and finding.label == "o"
        assert "s * out.grad" in finding.text
        table = screen.query_one(NodeTable)
        assert table.flagged == {finding.node}
        screen.query_one("#checks-list", OptionList).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert screen.position == finding.step + 1
        assert table.selected_node == finding.node
        assert screen.query_one("#side", TabbedContent).active == "tab-source"
        source = screen.query_one(SourceView)
        marked = [line for line in source.text.splitlines() if line.lstrip().startswith("!")]
        assert len(marked) == 1
        assert str(finding.line) in marked[0] and "s * out.grad" in marked[0]


async def test_a_clean_scenario_says_so():
    app = MgtuiApp(SCENARIOS / "neuron.py")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.debugger
        assert await wait_for(pilot, lambda: screen.trace is not None)
        await pilot.press("d")
        pane = screen.query_one(ChecksPane)
        assert await wait_for(pilot, lambda: "no problems" in pane.status)
        assert pane.findings == [] and not screen.query_one(NodeTable).flagged


async def test_a_saved_trace_cannot_be_checked(tmp_path, capsys):
    from mgtui.cli import main

    assert main([str(SCENARIOS / "chain.py"), "--export", "json"]) == 0
    saved = tmp_path / "chain.json"
    saved.write_text(capsys.readouterr().out)
    app = MgtuiApp(saved)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        assert await wait_for(pilot, lambda: screen.trace is not None)
        await pilot.press("d")
        await pilot.pause()
        assert "no code to run" in screen.query_one(ChecksPane).status


async def test_what_was_not_checked_is_no_clean_bill_in_the_app(tmp_path):
    """A float32 tensor engine: no gradient could be checked numerically (issue 33)."""
    from tests.doctor import test_doctor_real_shapes as shapes

    path = tmp_path / "float32_engine.py"
    path.write_text(shapes.FLOAT32)
    app = MgtuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        assert await wait_for(pilot, lambda: screen.trace is not None)
        await pilot.press("d")
        pane = screen.query_one(ChecksPane)
        assert await wait_for(pilot, lambda: "clean bill" in pane.status)
        assert "✓" not in pane.status and "checked numerically" in pane.status
