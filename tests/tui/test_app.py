"""Pilot tests of the debugger app: every key, every entry point, errors, time travel."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
from array import array

import pytest

from mgtui.tui.app import MgtuiApp, run_app
from mgtui.tui.widgets.debugger import DebuggerScreen
from mgtui.tui.widgets.node_table import NodeTable
from mgtui.tui.widgets.source_view import SourceView
from mgtui.tui.widgets.step_detail import StepDetail
from mgtui.tui.widgets.topo_list import TopoList

from tests.conftest import SCENARIOS

pytestmark = pytest.mark.usefixtures("clean_env", "no_user_config")


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    """The default keys, whatever the developer's own ~/.config/mgtui holds."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


async def loaded(pilot, timeout: float = 20.0) -> DebuggerScreen:
    """Wait until the app has finished loading (a trace or an error screen) and return
    the debugger screen."""
    app = pilot.app
    for _ in range(int(timeout / 0.02)):
        await pilot.pause(0.02)
        if not app.loading and (app.debugger.trace is not None or app.screen is not app.debugger):
            break
    await app.workers.wait_for_complete()
    await pilot.pause()
    return app.debugger


def detail(screen: DebuggerScreen) -> str:
    return screen.query_one(StepDetail).text


def table_line(screen: DebuggerScreen, nid: int) -> str:
    """The node table's row for node `nid`, as text."""
    table = screen.query_one(NodeTable)
    row = table.view.row_of(nid, screen.trace.node_count)
    return table._row(row).text


def first_step(trace, kind: str, label: str) -> int:
    """The step (1-based position) of the first event of `kind` on node `label`."""
    nid = trace.find(label)[0]
    for i in range(len(trace)):
        if trace.event(i).kind == kind and trace.event_node(i) == nid:
            return i + 1
    raise AssertionError(f"no {kind} event on {label}")


# -- what a step shows ------------------------------------------------------------------------

async def test_forward_step_writes_out_the_equation():
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert screen.position == 0
        assert "start" in detail(screen)
        step = first_step(screen.trace, "create", "e")
        for _ in range(step):
            await pilot.press("n")
        assert screen.position == step
        assert "e = a * b = 2.0 × -3.0 = -6.0" in detail(screen)
        e = screen.trace.find("e")[0]
        assert table_line(screen, e).lstrip().startswith("●")
        assert screen.query_one(NodeTable).selected_node == e
        source = screen.query_one(SourceView).text
        assert "▶" in source and "e = a*b" in source


async def test_backward_step_shows_accumulation_with_numbers():
    app = MgtuiApp(SCENARIOS / "neuron.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        trace = screen.trace
        screen.goto(first_step(trace, "backward", "o"))
        await pilot.pause()
        text = detail(screen)
        assert "n.grad += (1 - o²) × o.grad = 0.5 × 1.0" in text
        assert "n.grad: 0.0 → 0.5 (+0.5)" in text
        o, n = trace.find("o")[0], trace.find("n")[0]
        assert table_line(screen, o).lstrip().startswith("▶")
        assert "+=" in table_line(screen, n)[:4]
        # the topo list marks the running node and the one it wrote to
        topo = screen.query_one(TopoList)
        assert topo.running == 0 and topo.walked == 1
        # the source pane shows the engine's tanh closure with the writing line marked
        source = screen.query_one(SourceView).text
        assert "_backward" in source and "tanh" in source
        marked = [line for line in source.splitlines() if line.startswith("▶")]
        assert marked and "grad +=" in marked[0]


async def test_second_contribution_of_a_fan_out_node_is_called_out(add_self):
    app = MgtuiApp(add_self)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        screen.goto(first_step(screen.trace, "backward", "b"))
        await pilot.pause()
        text = detail(screen)
        assert "a.grad: 0.0 → 1.0 (+1.0)" in text
        assert "a.grad: 1.0 → 2.0 (+1.0)" in text
        assert "2nd contribution" in text


async def test_custom_op_is_explained_from_its_closure_source(write_scenario):
    path = write_scenario("custom", '''
        """A hand-written sigmoid"""
        import math
        from engine import Value

        def sigmoid(x):
            s = 1 / (1 + math.exp(-x.data))
            out = Value(s, (x,), 'sigmoid')
            def _backward():
                x.grad += s * (1 - s) * out.grad
            out._backward = _backward
            return out

        x = Value(0.5, label='x')
        y = sigmoid(x); y.label = 'y'
        y.backward()
    ''')
    app = MgtuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        screen.goto(first_step(screen.trace, "backward", "y"))
        await pilot.pause()
        text = detail(screen)
        assert "x.grad += s * (1 - s) * out.grad" in text
        assert "x.grad: 0.0 → 0.235" in text
        source = screen.query_one(SourceView).text
        assert "custom.py" in source
        assert any(line.startswith("▶") and "x.grad +=" in line for line in source.splitlines())


# -- keys --------------------------------------------------------------------------------------

async def test_next_and_previous_keys():
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        for key, expected in [("n", 1), ("right", 2), ("space", 3), ("p", 2), ("left", 1)]:
            await pilot.press(key)
            assert screen.position == expected, key
        await pilot.press("left", "left", "left")
        assert screen.position == 0  # stops at the start


async def test_pass_keys_and_start_end():
    app = MgtuiApp(SCENARIOS / "mlp.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        trace = screen.trace
        await pilot.press("right_square_bracket")
        assert screen.position == 1  # the first step of the first pass
        await pilot.press("right_square_bracket")
        assert screen.position == trace.passes[1].start + 1
        assert screen.session.timeline.pass_.kind == "zero_grad"
        await pilot.press("n", "left_square_bracket")
        assert screen.position == trace.passes[1].start + 1  # back to this pass's start
        await pilot.press("left_square_bracket")
        assert screen.position == 1
        await pilot.press("G")
        assert screen.position == screen.total and screen.session.timeline.at_end
        await pilot.press("g")
        assert screen.position == 0


async def test_breakpoint_and_continue_both_ways():
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        trace = screen.trace
        await pilot.press("c")  # no breakpoints: runs to the end
        assert screen.position == screen.total
        await pilot.press("g")
        a = trace.find("a")[0]
        screen.query_one(NodeTable).set_cursor(screen.query_one(NodeTable).view.row_of(a, trace.node_count))
        await pilot.press("b")
        assert a in screen.session.breakpoints
        assert table_line(screen, a).startswith("◆")
        await pilot.press("c")
        event = trace.event(screen.position - 1)
        assert event.kind == "backward" and any(w.node == a for w in event.writes)
        stop = screen.position
        await pilot.press("c")  # a's own _backward runs later
        assert screen.position > stop
        assert trace.event(screen.position - 1).node == a
        await pilot.press("C")
        assert screen.position == stop
        await pilot.press("C")
        assert screen.position == 0
        screen.query_one(NodeTable).set_cursor(screen.query_one(NodeTable).view.row_of(a, trace.node_count))
        await pilot.press("b")
        assert not screen.session.breakpoints


async def test_find_a_node_by_label():
    app = MgtuiApp(SCENARIOS / "neuron.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("G", "slash")
        await pilot.press(*"w2", "enter")
        await pilot.pause()
        assert screen.trace.label(screen.query_one(NodeTable).selected_node) == "w2"
        assert screen.position == screen.total  # finding does not move in time
        await pilot.press("slash", *"x2*", "enter")  # a part of a label
        await pilot.pause()
        assert screen.trace.label(screen.query_one(NodeTable).selected_node) == "x2*w2"
        await pilot.press("slash", *"nothing", "enter")
        await pilot.pause()
        assert screen.trace.label(screen.query_one(NodeTable).selected_node) == "x2*w2"


async def test_table_selection_moves_freely():
    app = MgtuiApp(SCENARIOS / "neuron.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("G")
        table = screen.query_one(NodeTable)
        table.focus()
        await pilot.press("home")
        assert table.cursor == 0
        await pilot.press("down", "down")
        assert table.cursor == 2
        await pilot.press("end")
        assert table.cursor == table.row_count - 1
        await pilot.press("up")
        assert table.cursor == table.row_count - 2
        await pilot.click(NodeTable, offset=(5, 2))
        assert table.cursor == 1


async def test_reload_keeps_the_position(write_scenario):
    path = write_scenario("edit_me", '''
        """Edit me"""
        from engine import Value
        a = Value(2.0, label='a')
        b = a * a; b.label = 'b'
        b.backward()
    ''')
    app = MgtuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("n", "n", "n")
        path.write_text(path.read_text().replace("2.0", "5.0"))
        await pilot.press("r")
        await loaded(pilot)
        assert screen.position == 3
        assert screen.trace.replay.final_data[0] == 5.0
        assert "Reloaded" in " ".join(n.message for n in app._notifications)


async def test_tab_help_panes_and_quit():
    app = MgtuiApp(SCENARIOS / "neuron.py")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        assert screen.has_class("-narrow") and screen.has_class("-medium")
        assert not screen.query_one(TopoList).display or not screen.query_one(TopoList).region
        first = app.focused
        await pilot.press("tab")
        assert app.focused is not first
        await pilot.press("v")  # the secondary panes, at 80×24
        assert screen.has_class("-panes")
        assert screen.query_one(TopoList).region.width > 0
        await pilot.press("t")
        assert screen.query_one("#side").active == "tab-notes"
        await pilot.press("t")
        assert screen.query_one("#side").active == "tab-output"
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        assert app.screen is screen
        await pilot.press("q")
    assert app.return_code == 0


async def test_command_palette_goes_to_a_step():
    app = MgtuiApp(SCENARIOS / "neuron.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"step 12")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert screen.position == 12


async def test_command_palette_goes_to_a_node_in_another_pass():
    app = MgtuiApp(SCENARIOS / "neuron.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        screen.goto_node(screen.trace.find("o")[0])
        await pilot.pause()
        assert screen.trace.label(screen.query_one(NodeTable).selected_node) == "o"


async def test_check_action_greys_out_what_cannot_run():
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert screen.check_action("prev", ()) is None
        assert screen.check_action("start", ()) is None
        assert screen.check_action("next", ()) is True
        await pilot.press("G")
        assert screen.check_action("next", ()) is None
        assert screen.check_action("next_pass", ()) is None
        assert screen.check_action("prev", ()) is True
        assert screen.check_action("toggle_panes", ()) is False  # the wide layout shows all
        # every binding has an id and a description
        for binding in DebuggerScreen.BINDINGS:
            assert binding.id and binding.description


# -- entry points --------------------------------------------------------------------------------

def test_run_app_has_the_cli_signature():
    params = inspect.signature(run_app).parameters
    assert list(params) == ["path", "step", "seed", "max_nodes", "timeout", "max_memory", "run",
                            "argv", "lesson_dir", "quiz"]


async def test_open_at_a_given_step():
    app = MgtuiApp(SCENARIOS / "neuron.py", step=14)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert screen.position == 14
        assert "step 14/21" in detail(screen)


async def test_open_a_saved_trace_without_running_it(tmp_path):
    from mgtui.trace.export import dumps
    from mgtui.recording.recorder import record

    trace = record(SCENARIOS / "neuron.py")
    saved = tmp_path / "neuron.json"
    saved.write_text(dumps(trace))
    app = MgtuiApp(saved, step=12)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert screen.total == len(trace)
        assert "n.grad: 0.0 → 0.5 (+0.5)" in detail(screen)


def plain(renderable, width: int) -> str:
    """A Rich renderable as the plain text it shows at `width` columns."""
    from io import StringIO

    from rich.console import Console

    console = Console(width=width, file=StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()


async def test_picker_lists_the_bundled_scenarios_and_opens_one():
    app = MgtuiApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert type(app.screen).__name__ == "PickerScreen"
        options = app.screen.query_one("#picker-list")
        prompts = [plain(options.get_option_at_index(i).prompt, 80)
                   for i in range(options.option_count)]
        assert any(p.startswith("chain ") and "chain rule" in p for p in prompts)
        # a title too long for its line wraps under itself, never back to column 0
        wrapped = [p for p in prompts if "\n" in p.strip()]
        assert wrapped, "no title wraps at 80 columns any more: pick a narrower width"
        for p in wrapped:
            first, *more = p.rstrip().split("\n")
            column = first.index(first.split()[1])  # where the title starts
            assert all(line[:column].strip() == "" and line[column] != " " for line in more)
        await pilot.press("enter")  # the first one: chain
        screen = await loaded(pilot)
        assert app.screen is screen
        assert screen.trace.title.startswith("The chain rule")


async def test_syntax_error_shows_file_line_and_caret(write_scenario):
    path = write_scenario("bad", '''
        """Bad"""
        from engine import Value
        a = Value(2.0
        b = 3
    ''')
    app = MgtuiApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        assert type(app.screen).__name__ == "ErrorScreen"
        text = app.screen.text
        assert "bad.py:3:" in text and "SyntaxError" in text
        assert "^" in text and "Traceback" not in text
        path.write_text(path.read_text().replace("Value(2.0", "Value(2.0)"))
        await pilot.press("r")  # fixed: try again
        screen = await loaded(pilot)
        assert app.screen is screen and screen.total > 0


@pytest.mark.parametrize("target", ["missing.py", "a_directory", "data.txt"])
async def test_unloadable_files_get_a_message(tmp_path, target):
    (tmp_path / "a_directory").mkdir()
    (tmp_path / "data.txt").write_text("hello")
    app = MgtuiApp(tmp_path / target)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        assert type(app.screen).__name__ == "ErrorScreen"
        assert target in app.screen.text
        await pilot.press("o")
        assert type(app.screen).__name__ == "PickerScreen"


async def test_a_scenario_that_raises_ends_with_the_error_step(write_scenario):
    path = write_scenario("raises", '''
        """Raises partway"""
        from engine import Value
        a = Value(2.0, label='a')
        b = a * a; b.label = 'b'
        print("about to fail")
        c = b / 0
    ''')
    app = MgtuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert screen.total == len(screen.trace) + 1
        await pilot.press("G")
        assert screen.at_error
        assert "ZeroDivisionError" in detail(screen) and "line 6" in detail(screen)
        source = screen.query_one(SourceView).text
        assert any(line.startswith("✗") and "b / 0" in line for line in source.splitlines())
        await pilot.press("p")
        assert not screen.at_error and "b = a * a" in detail(screen)
        output = str(screen.query_one("#output").content)
        assert "about to fail" in output


async def test_printed_output_goes_to_the_output_pane():
    app = MgtuiApp(SCENARIOS / "neuron.py")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        assert "o = 0.7071" in str(screen.query_one("#output").content)
        assert "o = 0.7071" not in "".join(
            screen.query_one(StepDetail).text for _ in range(1))
    assert sys.stdout is not None and type(sys.stdout).__name__ != "StringIO"


async def test_lesson_notes_render_as_markdown():
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        screen.show_tab("tab-notes")
        await pilot.pause()
        await pilot.pause()
        notes = screen.query_one("#notes")
        assert type(notes).__name__ == "Markdown"
        assert "chain rule" in notes.source


INFINITE = '''
    """Never ends"""
    from engine import Value
    a = Value(1.0, label='a')
    while True:
        a = a * 1.0
'''


async def test_ctrl_c_while_loading_stops_cleanly(write_scenario):
    path = write_scenario("forever", INFINITE)
    app = MgtuiApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        # wait for the first steps on screen (on a loaded machine the child may still be
        # starting after a fixed pause, and ctrl+c then stops a recording of nothing)
        for _ in range(1000):
            await pilot.pause(0.02)
            if app.debugger.trace is not None:
                break
        assert app.loading and app.screen is app.debugger
        await pilot.press("ctrl+c")
        screen = await loaded(pilot)
        assert app.screen is screen
        assert screen.trace.error is not None and screen.trace.error.type == "Stopped"
        assert screen.trace.node_count > 1


async def test_timeout_stops_the_recording(write_scenario):
    path = write_scenario("forever", INFINITE)
    app = MgtuiApp(path, timeout=0.3)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        assert screen.trace.error.type == "Stopped"
        assert "timed out" in screen.trace.error.message


async def test_quitting_while_loading_ends_the_scenarios_process(write_scenario):
    path = write_scenario("forever", INFINITE)
    app = MgtuiApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.4)
        assert app.loading
        pid = app.loader.run.pid  # the child recording the scenario, and its process group
        os.killpg(pid, 0)  # alive
        await pilot.press("q")  # cancels the recording, waits for it, then quits
        await pilot.pause()
    assert app.return_code == 0
    app.stop_recording_now()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # the whole group has gone
    assert sys.stdout is sys.__stdout__ or type(sys.stdout).__name__ != "StringIO"


# -- layout and robustness ---------------------------------------------------------------------

async def test_resizing_down_to_40x12_and_back():
    app = MgtuiApp(SCENARIOS / "neuron.py", step=13)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert screen.has_class("-wide") and screen.has_class("-tall")
        for size in [(100, 30), (80, 24), (60, 20), (40, 12), (41, 13), (120, 40)]:
            await pilot.resize_terminal(*size)
            await pilot.pause()
            await pilot.press("n", "p")
            assert screen.query_one(NodeTable).region.height > 0, size
            assert screen.query_one(StepDetail).region.height > 0, size
        assert screen.has_class("-wide")


async def test_stepping_forward_and_back_with_the_keys_returns_the_exact_state():
    """40 presses each way through the app (tests/session/test_session.py walks 200 headless)."""
    app = MgtuiApp(SCENARIOS / "mlp.py")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        backward = next(p for p in screen.trace.passes if p.kind == "backward")
        screen.goto(backward.start - 20)  # 40 steps: zero_grad, then backward
        await pilot.pause()
        table = screen.query_one(NodeTable)

        def state():
            tl = screen.session.timeline
            return (screen.position, array("d", tl.data), array("d", tl.grad), tl.created,
                    detail(screen), table.selected_node, dict(table.marks),
                    screen.query_one(SourceView).text)

        start = state()
        await pilot.press(*["n"] * 40)
        assert screen.position == start[0] + 40
        moved = state()
        assert moved[2] != start[2]  # grads were written on the way
        await pilot.press(*["p"] * 40)
        assert state() == start


async def test_a_big_graph_renders_only_the_rows_on_screen(write_scenario):
    path = write_scenario("long_chain", '''
        """A long chain"""
        from engine import Value
        x = Value(1.0, label='x')
        for k in range(3000):
            x = x + 1.0
        x.backward()
    ''')
    app = MgtuiApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("G")
        table = screen.query_one(NodeTable)
        assert table.row_count == screen.trace.node_count
        assert table.virtual_size.height == table.row_count + 1
        calls = []
        original = table._render_row
        table._render_row = lambda *args: calls.append(args) or original(*args)
        table._cache.clear()
        table.refresh()
        await pilot.pause()
        assert 0 < len(calls) < 30


async def test_source_pane_shows_pypi_micrograd_closures(write_scenario):
    path = write_scenario("with_micrograd", '''
        """A neuron on PyPI micrograd"""
        from micrograd.engine import Value
        x = Value(2.0)
        w = Value(-3.0)
        n = x * w
        o = n.relu()
        o.backward()
    ''')
    app = MgtuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        trace = screen.trace
        step = next(i + 1 for i in range(len(trace))
                    if trace.event(i).kind == "backward" and trace.op(trace.event_node(i)) == "*")
        screen.goto(step)
        await pilot.pause()
        source = screen.query_one(SourceView).text
        assert "micrograd/engine.py" in source
        assert any(line.startswith("▶") and "grad +=" in line for line in source.splitlines())
        assert "x.grad" in detail(screen) or "grad: 0.0 →" in detail(screen)


async def test_command_palette_runs_the_debugger_actions():
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        titles = [c.title for c in app.get_system_commands(screen)]
        for title in ("Next step", "Go to the end", "Toggle a breakpoint on the selected node",
                      "Find a node by label", "Reload the scenario", "Show the lesson notes"):
            assert title in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Go to the end")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert screen.position == screen.total


async def test_pass_bar_and_header_say_where_we_are():
    app = MgtuiApp(SCENARIOS / "mlp.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        trace = screen.trace
        update = next(p for p in trace.passes if p.kind == "update")
        screen.goto(update.start + 2)
        await pilot.pause()
        header = screen.query_one("#header")
        assert header.where.startswith(f"update pass {update.index + 1}/{len(trace.passes)}")
        assert "2/" in header.where.split("·")[1]
        bar = str(screen.query_one("#passbar").render())
        assert f"pass {update.index + 1}/{len(trace.passes)}" in bar
        assert "loss" in bar


async def test_non_finite_values_are_flagged(write_scenario):
    path = write_scenario("blows_up", '''
        """Overflows"""
        from engine import Value
        a = Value(1e200, label='a')
        b = a * a; b.label = 'b'
        b.backward()
    ''')
    app = MgtuiApp(path, step=2)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert "⚠ b.data is inf" in detail(screen)
        assert "inf" in table_line(screen, screen.trace.find("b")[0])


async def test_an_empty_scenario_says_so(write_scenario):
    """A run that records no node is never shown as an empty trace (issue 19): the
    app shows why, as the command line says it, and the keys do nothing harmful."""
    app = MgtuiApp(write_scenario("empty", '"""Nothing"""\nx = 1\n'))
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        assert type(app.screen).__name__ == "ErrorScreen"
        assert "no micrograd-style node was recorded" in app.screen.text
        await pilot.press("n", "G", "c", "b", "right_square_bracket")
        assert "Traceback" not in app.screen.text


async def test_quick_tab_changes_settle_on_the_last_one():
    """Tab changes right after start-up, before the compact layout's side tabs are in:
    the stale TabActivated events must not flip the tab back and forth."""
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.debugger
        while screen.trace is None:
            await pilot.pause(0.01)
        await asyncio.wait_for(pilot.press("t", "t"), timeout=10)  # it never settled
        side = screen.query_one("#side")
        for _ in range(500):  # (the compact layout's tabs come in behind: at a load of 7
            if side.active == "tab-output":  # that took longer than the 0.3 s once waited)
                break
            await pilot.pause(0.02)
        await pilot.pause(0.3)  # and it stays there
        assert side.active == "tab-output"
        assert screen.session.position.tab == "output"
        assert "L  data   -8.0" in str(screen.query_one("#output").content)


async def test_at_80_columns_the_footer_shows_quit_and_leaves_the_palette_key_out():
    # with the palette's key beside them the keys ran under it: "q ▏^p palette"
    from textual.widgets._footer import FooterKey

    def footer_keys(screen) -> list[str]:
        return [f"{k.key} {k.description}" for k in screen.query(FooterKey)]

    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        await pilot.pause(0.1)
        keys = footer_keys(screen)
        assert "q Quit" in keys and not any("palette" in k for k in keys)
        footer = screen.query_one("KeyFooter")
        quit_key = next(k for k in screen.query(FooterKey) if k.key == "q")
        assert quit_key.region.right <= footer.region.right  # on screen, not under another
        await pilot.resize_terminal(120, 40)
        await pilot.pause(0.2)
        assert any("palette" in k for k in footer_keys(screen))
        assert "q Quit" in footer_keys(screen)
