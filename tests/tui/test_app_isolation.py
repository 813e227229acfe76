"""The app against scenarios and traces that try to hang, crash or fool it (issue 8),
driven as a person would with Pilot: it stays usable, shows the trace so far, and says
what happened in words that are never read as markup."""

from __future__ import annotations

import json
import time

import pytest

from mgtui.tui.app import MgtuiApp
from mgtui.tui.app import showing
from mgtui.tui.widgets.node_table import NodeTable
from mgtui.tui.widgets.step_detail import StepDetail

from tests.conftest import SCENARIOS, notices_of
from tests.tui.test_app import loaded, table_line

pytestmark = pytest.mark.usefixtures("clean_env", "no_user_config", "kept_notices")


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def notices(app) -> list[str]:
    return notices_of(app)


async def steps_shown(pilot, more_than: int) -> None:
    """Wait (30 s at most) until the app shows more than `more_than` steps."""
    screen = pilot.app.debugger
    for _ in range(1500):
        await pilot.pause(0.02)
        if screen.trace is not None and len(screen.trace) > more_than:
            return


async def test_a_call_blocked_in_c_stops_at_the_timeout_and_the_app_stays_usable(write_scenario):
    path = write_scenario("sleeps", """
        import time
        from engine import Value
        a = Value(1.0, label="a")
        b = a * 2; b.label = "b"
        time.sleep(1000)
    """)
    app = MgtuiApp(path, timeout=1.0)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)  # (within its 30 s: not the sleep's 1000)
        assert screen.trace.error.type == "Stopped" and len(screen.trace) == 3
        assert any("timed out after 1 s" in n for n in notices(app))
        await pilot.press("g", "n")
        assert screen.position == 1


async def test_os_exit_in_the_scenario_leaves_the_app_running(write_scenario):
    path = write_scenario("exits", """
        import os
        from engine import Value
        a = Value(1.0, label="a")
        os._exit(0)
    """)
    app = MgtuiApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        assert len(screen.trace) == 1
        assert any("os._exit(0)" in n for n in notices(app))
        await pilot.press("g", "n")
        assert screen.position == 1
        await pilot.press("q")
    assert app.return_code == 0


HOSTILE = "[/]x[i][@click=app.quit]\x1b[2J\x1b]52;c;aGk=\x07"


async def test_markup_and_escapes_in_labels_errors_and_searches_are_inert(write_scenario):
    path = write_scenario("hostile", f"""
        from engine import Value
        a = Value(2.0, label={HOSTILE!r})
        b = a * a; b.label = "[/]"
        b.backward()
        print({HOSTILE!r})
        raise ValueError({HOSTILE!r})
    """)
    app = MgtuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert app.is_running
        seen = notices(app)  # (each is gone after a few seconds: kept as they come)
        row = table_line(screen, 0)
        assert "\x1b" not in row and "[/]x[i][@click=ap" in row
        table = screen.query_one(NodeTable)
        table.focus()
        table.set_cursor(0)
        await pilot.press("b")  # a breakpoint on the node labelled with markup
        await pilot.pause()
        seen += notices(app)
        assert 0 in screen.session.breakpoints
        await pilot.press("slash", *"[/]", "enter")  # and a search for markup
        await pilot.pause()
        assert screen.trace.label(table.selected_node) == "[/]"
        await pilot.press("ctrl+p", *"node [/]")
        await pilot.pause(0.3)
        await pilot.press("escape")
        assert app.is_running
        seen += notices(app)
        assert all("\x1b" not in n for n in seen)
        assert any("[/]x[i][@click=app.quit]" in n for n in seen)
        await pilot.press("G")
        assert "\x1b" not in screen.query_one(StepDetail).text


async def test_ten_megabytes_of_output_load_and_stay_responsive(write_scenario):
    path = write_scenario("loud", """
        from engine import Value
        a = Value(1.0, label="a")
        for k in range(200_000):
            print(f"line {k} " + "x" * 45)
    """)
    app = MgtuiApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot, timeout=60)
        assert len(screen.trace.output) < 500_000 and "left out here" in screen.trace.output
        # it still answers: a step on and back, the side tabs on twice (how fast is
        # bench/step_latency.py's to measure, not a test's)
        tab = screen.session.position.tab
        await pilot.press("n")
        assert screen.position == 1
        await pilot.press("p", "t")
        assert screen.position == 0 and screen.session.position.tab != tab
        await pilot.press("t")
        assert screen.session.position.tab not in (tab, None)


async def test_a_corrupt_saved_trace_gets_an_error_screen_naming_the_field(tmp_path):
    from mgtui.trace.export import dumps
    from mgtui.recording.recorder import record

    doc = json.loads(dumps(record(SCENARIOS / "chain.py")))
    doc["nodes"][2]["children"] = [7]  # a node made later: a cycle
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    app = MgtuiApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        assert type(app.screen).__name__ == "ErrorScreen"
        assert "nodes[2].children[0]" in app.screen.text


async def test_the_first_steps_of_a_long_recording_can_be_stepped_while_it_goes_on(write_scenario):
    path = write_scenario("long", """
        import time
        from engine import Value
        a = Value(1.0, label="a")
        b = a * 2.0; b.label = "b"
        for k in range(100):  # 5 s: long enough for a loaded machine's first frame
            time.sleep(0.05)
            b = b + 1.0
    """)
    app = MgtuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        for _ in range(100):  # until the first steps are on screen
            await pilot.pause(0.05)
            if screen.trace is not None:
                break
        assert app.loading and screen.trace is not None
        assert "recording…" in screen.query_one("StepHeader").render().plain
        first = len(screen.trace)
        await pilot.press("g", "n", "n")
        assert screen.position == 2  # stepping while it records
        screen = await loaded(pilot)
        assert not app.loading and len(screen.trace) > first
        assert screen.position == 2  # the passes settled, the user stayed where they were
        assert "recording…" not in screen.query_one("StepHeader").render().plain
        assert [p.kind for p in screen.trace.passes] == ["forward"]


async def test_a_step_asked_for_beyond_the_first_steps_is_reached_once_recorded(write_scenario,
                                                                                 tmp_path):
    """`--step N` on a scenario that records for a while: the first steps on screen do
    not reach N yet, and the app must still end at N (it used to stay at the first
    steps' end)."""
    # the scenario waits, half-way, until the test has seen its first steps (on a busy
    # machine a fixed pace could finish before the first steps reach the screen)
    go_on = tmp_path / "go_on"
    path = write_scenario("slow", f"""
        import os, time
        from engine import Value
        b = Value(1.0, label="b")
        for k in range(40):
            time.sleep(0.01)
            b = b + 1.0
            if k == 10:
                for _ in range(3000):
                    if os.path.exists({str(go_on)!r}):
                        break
                    time.sleep(0.01)
    """)
    app = MgtuiApp(path, step=70)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        seen_short = False
        for _ in range(1500):
            await pilot.pause(0.02)
            if screen.trace is not None and app.loading and len(screen.trace) < 70:
                seen_short = True
                go_on.touch()
            if not app.loading and screen.trace is not None:
                break
        screen = await loaded(pilot)
        assert seen_short  # it did show a shorter trace first
        assert len(screen.trace) > 70 and screen.position == 70


async def test_a_recordings_updates_wait_while_the_user_steps_through_what_is_shown(
        write_scenario, tmp_path, monkeypatch):
    """An update of a growing trace costs the UI a frame or more: it waits while the user
    steps inside what is on screen, and comes at once for a user at its last step."""
    import mgtui.tui.app_loading

    monkeypatch.setattr(mgtui.tui.app_loading, "STEPPING", 6.0)  # (generous: a loaded machine is slow)
    monkeypatch.setattr(mgtui.tui.app_loading, "STEPPING_AT_MOST", 12.0)
    stop = tmp_path / "stop"
    path = write_scenario("records_on", f"""
        import os, time
        from engine import Value
        b = Value(1.0, label="b")
        for k in range(3000):  # a step every 10 ms, for 30 s at most
            if os.path.exists({str(stop)!r}):
                break
            time.sleep(0.01)
            b = b + 1.0
    """)
    app = MgtuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        await steps_shown(pilot, 3)
        assert app.loading and screen.trace is not None
        await pilot.press("n")  # inside what is shown
        await pilot.pause(0.3)  # (an update already on its way when the key came)
        shown = len(screen.trace)
        await pilot.press("n")
        await pilot.pause(3.0)  # three times the updates' pace: none came
        assert app.loading and len(screen.trace) == shown and screen.position == 2
        screen.goto(shown)  # the last step shown: the user wants more
        for _ in range(250):
            await pilot.pause(0.02)
            if len(screen.trace) > shown:
                break
        assert len(screen.trace) > shown
        stop.touch()
        await loaded(pilot)


async def test_the_loading_screen_never_takes_the_keys_of_a_user_stepping_the_first_steps(
        write_scenario, tmp_path, monkeypatch):
    """The first steps of a longer recording are shown at once; the loading screen,
    meant for a recording with nothing to show yet, must not come over them later and
    take the user's keys (it did when the first update was held back while they stepped,
    and on a busy machine when it was merely late)."""
    import mgtui.tui.app_loading

    monkeypatch.setattr(mgtui.tui.app_loading, "STEPPING", 6.0)  # updates held while the keys come
    monkeypatch.setattr(mgtui.tui.app_loading, "STEPPING_AT_MOST", 12.0)
    stop = tmp_path / "stop"
    path = write_scenario("first_fast", f"""
        import os, time
        from engine import Value
        b = Value(1.0, label="b")
        for k in range(20):
            b = b + 1.0  # the first steps, at once
        for k in range(3000):
            if os.path.exists({str(stop)!r}):
                break
            time.sleep(0.01)
            b = b + 1.0
    """)
    from mgtui.run.runner import UI_FIRST, Run, RunSpec

    run = Run(RunSpec(str(path), nice=UI_FIRST)).start()  # as `mgtui FILE` starts it
    for _ in range(1500):  # its first steps recorded before the app starts
        time.sleep(0.01)
        if run.snapshot() is not None and len(run.snapshot()) > 10:
            break
    app = MgtuiApp(path, run=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        await steps_shown(pilot, 10)
        assert app.loading and app.loader.first_steps  # shown in the first frame
        start = time.monotonic()
        for k in range(12):  # 2 s and more of steps, past the loading screen's 0.6 s
            before = screen.position
            await pilot.press("n" if k % 2 == 0 else "p")
            await pilot.pause(0.15)
            assert not showing(app.screen, "LoadingScreen")
            assert screen.position == before + (1 if k % 2 == 0 else -1)
        assert time.monotonic() - start > 1.0
        stop.touch()
        await loaded(pilot)


@pytest.mark.parametrize("name", ["neuron.mgtrace", "no_suffix"])
async def test_a_saved_binary_trace_opens_without_running_code(tmp_path, name):
    from mgtui.recording.recorder import record
    from mgtui.trace.binary import dumpb

    saved = tmp_path / name  # told apart by its suffix, or by its magic bytes
    saved.write_bytes(dumpb(record(SCENARIOS / "neuron.py")))
    app = MgtuiApp(saved, step=12)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert app.loader.run is None  # nothing was run
        assert screen.total == 21
        assert "n.grad: 0.0 → 0.5 (+0.5)" in screen.query_one(StepDetail).text


@pytest.mark.parametrize("after", [0.0, 0.25, 0.5])
@pytest.mark.parametrize("how", ["q", "shut down"])
async def test_quitting_while_a_big_scenario_records_ends_cleanly(after, how):
    """An update of the growing trace that arrives while the app shuts down (a `q`, or
    the app taken down from outside, as when an SSH client goes) is dropped: it used to
    reach panes already taken down (NoMatches, and a traceback on exit)."""
    app = MgtuiApp(SCENARIOS / "moons.py")
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(200):
            await pilot.pause(0.02)
            if app.debugger.trace is not None:
                break
        assert app.loading  # still recording
        if after:
            await pilot.pause(after)
        if how == "q":
            await pilot.press("q")
    # (run_test raises what the app raised, when it has shut down)
    assert app._exception is None and app.return_code in (0, None)


async def test_the_output_pane_shows_what_a_recording_prints_as_it_grows(write_scenario, tmp_path):
    # It showed the output of the first trace on screen only: a recording's first steps
    # carried none, and "(the scenario printed nothing)" stayed after it had finished.
    go_on = tmp_path / "go_on"
    path = write_scenario("prints", f"""
        import os, time
        from engine import Value
        b = Value(1.0, label="b")
        print("early line", flush=True)
        for k in range(30):
            b = b + 1.0
            if k == 10:
                for _ in range(3000):
                    if os.path.exists({str(go_on)!r}):
                        break
                    time.sleep(0.01)
        print("late line", flush=True)
    """)
    app = MgtuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        await steps_shown(pilot, 5)
        assert app.loading  # still recording: what it printed so far is there
        await pilot.press("t", "t")  # the Output tab
        output = screen.query_one("#output")
        for _ in range(500):
            await pilot.pause(0.02)
            if "early line" in str(output.content):
                break
        assert "early line" in str(output.content) and "late line" not in str(output.content)
        go_on.touch()
        screen = await loaded(pilot)
        for _ in range(500):
            if "late line" in str(output.content):
                break
            await pilot.pause(0.02)
        assert "early line\nlate line" in str(screen.query_one("#output").content)
