"""One step-number convention everywhere: step N is the N-th event of the trace (step 0
is the start, before any). The doctor's text report, `--check --json`, the app's header
and Checks pane, and `--step N` all name the same step by the same number.

The expected step is found here by scanning the trace for the event the planted bug is
in (the `_backward` of `o`), not taken from the doctor's output.
"""

import json
import re
from pathlib import Path

import pytest

from mgtui import cli
from mgtui.tui.app import MgtuiApp
from mgtui.recording.recorder import record
from mgtui.tui.widgets.checks import ChecksPane
from mgtui.tui.widgets.step_header import StepHeader

BUG = Path(__file__).resolve().parent.parent.parent / "scenarios" / "bugs" / "wrong_derivative.py"

pytestmark = pytest.mark.usefixtures("clean_env")


def backward_step_of(label: str) -> int:
    """The step number of the `_backward` call of node `label`: its event index + 1."""
    trace = record(BUG)
    (nid,) = trace.find(label)
    (index,) = [i for i in range(len(trace))
                if trace.kind(i) == "backward" and trace.event_node(i) == nid]
    return index + 1


async def wait_for(pilot, condition, seconds=30.0):
    for _ in range(int(seconds / 0.05)):
        if condition():
            return True
        await pilot.pause(0.05)
    return condition()


async def test_the_text_report_json_app_and_step_option_agree(capsys, monkeypatch):
    expected = backward_step_of("o")

    # 1. the text report
    assert cli.main([str(BUG), "--check"]) == 1
    text = capsys.readouterr().out
    (shown,) = re.findall(r"node\s+o \(#\d+, op sigmoid\), step (\d+)", text)
    assert int(shown) == expected

    # 2. --check --json
    assert cli.main([str(BUG), "--check", "--json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)
    assert finding["step"] == expected

    # 3. --step N: the command line hands N to the app as it is
    opened = {}
    monkeypatch.setattr(cli, "launch_app", lambda path, args: opened.update(step=args.step) or 0)
    assert cli.main([str(BUG), "--step", str(expected)]) == 0
    assert opened["step"] == expected

    # 4. the app, opened at that step, is on o's _backward and says "step N/…"; its
    #    Checks pane names the same step, and choosing the finding goes there
    app = MgtuiApp(BUG, step=opened["step"])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        assert await wait_for(pilot, lambda: screen.trace is not None)
        await pilot.pause()
        trace = screen.trace
        assert screen.position == expected
        assert trace.kind(expected - 1) == "backward"
        assert trace.label(trace.event_node(expected - 1)) == "o"
        assert f"step {expected}/{len(trace)}" in screen.query_one(StepHeader).where
        screen.goto(0)
        await pilot.press("d")
        pane = screen.query_one(ChecksPane)
        assert await wait_for(pilot, lambda: pane.findings)
        (f,) = pane.findings
        assert f"step {expected}" in str(ChecksPane._prompt(f))
        screen.query_one("#checks-list").focus()
        await pilot.press("enter")
        await pilot.pause()
        assert screen.position == expected
        assert f"step {expected}/{len(trace)}" in screen.query_one(StepHeader).where
