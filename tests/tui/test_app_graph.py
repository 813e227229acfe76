"""Pilot tests of the Graph pane: shown with m, it draws the graph lit by the step,
follows the selection, and choosing a box (keys and enter, or a click) selects that node
in the node table."""

from __future__ import annotations

import pytest

from mgtui.tui.app import MgtuiApp
from mgtui.tui.widgets.graph import GraphPane
from mgtui.tui.widgets.node_table import NodeTable

from tests.conftest import SCENARIOS

pytestmark = pytest.mark.usefixtures("clean_env", "no_user_config")


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


async def loaded(pilot):
    app = pilot.app
    for _ in range(1000):
        await pilot.pause(0.02)
        if not app.loading and app.debugger.trace is not None:
            break
    await app.workers.wait_for_complete()
    await pilot.pause()
    return app.debugger


async def settle(pilot) -> None:
    """Let the pane redraw and scroll after a key (it scrolls after its refresh)."""
    await pilot.pause()
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def screen_text(graph: GraphPane) -> list[str]:
    """What the pane shows, line by line."""
    return [graph.render_line(y).text for y in range(graph.scrollable_content_region.height)]


def on_screen(graph: GraphPane, nid: int) -> bool:
    box = graph.picture.boxes[nid]
    width, height = graph.scrollable_content_region.size
    x, y = round(graph.scroll_x), round(graph.scroll_y)
    return x <= box.x and box.x + box.w <= x + width and y <= box.y and box.y + box.h <= y + height


async def test_m_shows_the_graph_lit_by_the_step():
    app = MgtuiApp(SCENARIOS / "neuron.py", step=15)  # (x1*w1 + x2*w2)._backward
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        graph = screen.query_one(GraphPane)
        assert not graph.display and graph.picture is None  # hidden: nothing laid out
        await pilot.press("m")
        await settle(pilot)
        assert graph.display and graph.has_focus
        assert not screen.query_one("#top").display  # in place of the table
        trace = screen.trace
        assert sorted(graph.picture.boxes) == sorted([*screen.state.view.used, *screen.state.view.made])
        text = "\n".join(screen_text(graph))
        # at 120×40 the neuron graph fits whole, in compact boxes (one row, the grad)
        assert graph.picture.compact
        assert "▶x1*w1 + x2*w2   0.5" in text  # n.grad = 0.5 (the lecture), passed on
        assert "+x1*w1   0.5" in text and "+x2*w2   0.5" in text  # the grads it added
        assert "━" in text or "┃" in text  # the edges the gradient flowed along
        width, height = graph.scrollable_content_region.size
        assert graph.picture.width <= width and graph.picture.height <= height
        assert not any(glyph in text for glyph in "▋▉▃▅")  # no scrollbars: keys pan
        await pilot.press("m")
        await settle(pilot)
        assert not graph.display and screen.query_one(NodeTable).has_focus
        assert trace is screen.trace


async def test_the_graph_follows_the_selection():
    app = MgtuiApp(SCENARIOS / "neuron.py", step=10)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("m")
        await settle(pilot)
        graph = screen.query_one(GraphPane)
        laid_out = graph.picture
        for _ in range(10):  # the backward pass, node by node
            await pilot.press("n")
            await settle(pilot)
            assert graph.picture is laid_out  # laid out once; a step only repaints
            node = screen.selected
            assert graph.light.selected == node and graph.cursor == node
            assert on_screen(graph, node)
            row = graph.picture.boxes[node].row - round(graph.scroll_y)
            assert set("║╣╠") & set(screen_text(graph)[row])  # double frame: selected


async def test_choosing_a_box_with_keys_selects_it_in_the_table():
    app = MgtuiApp(SCENARIOS / "chain.py", step=15)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("m")
        await settle(pilot)
        graph = screen.query_one(GraphPane)
        start = screen.selected
        await pilot.press("l")  # the cursor moves to a box nearer the root
        await settle(pilot)
        chosen = graph.cursor
        assert chosen is not None and chosen != start
        assert screen.selected == start  # not chosen yet
        await pilot.press("enter")
        await settle(pilot)
        assert screen.selected == chosen
        assert screen.query_one(NodeTable).selected_node == chosen
        # and b sets a breakpoint on it: the Graph pane's choice is the session's
        await pilot.press("b")
        await settle(pilot)
        assert chosen in screen.state.breakpoints


async def test_clicking_a_box_selects_it():
    app = MgtuiApp(SCENARIOS / "neuron.py", step=21)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("m")
        await settle(pilot)
        graph = screen.query_one(GraphPane)
        trace = screen.trace
        target = next(n for n in graph.picture.boxes
                      if n != screen.selected and on_screen(graph, n))
        box = graph.picture.boxes[target]
        offset = (box.x - round(graph.scroll_x) + 2, box.row - round(graph.scroll_y))
        await pilot.click(GraphPane, offset=offset)
        await settle(pilot)
        assert screen.selected == target, trace.label(target)
        assert screen.query_one(NodeTable).selected_node == target


async def test_t_turns_the_picture():
    app = MgtuiApp(SCENARIOS / "chain.py", step=15)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("m")
        await settle(pilot)
        graph = screen.query_one(GraphPane)
        before = graph.picture.orientation
        await pilot.press("T")
        await settle(pilot)
        assert graph.picture.orientation != before
        assert on_screen(graph, screen.selected)


async def test_where_the_picture_lands_does_not_depend_on_what_was_on_screen():
    # chain's d._backward at 80×24: across, the picture needs two pages and a horizontal
    # scrollbar; down, three pages and a vertical one. Counted with the scrollbars on
    # screen, the choice flipped with the picture shown (CI once drew it across), and a
    # new picture kept a scroll made at a passing size.
    app = MgtuiApp(SCENARIOS / "chain.py", step=11)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("m")
        await settle(pilot)
        graph = screen.query_one(GraphPane)
        chosen, scroll = graph.picture.orientation, (graph.scroll_x, graph.scroll_y)
        for shown in ("LR", "TB", "LR"):
            graph.orientation = shown
            graph._draw()
            await settle(pilot)
            assert graph.picture.orientation == shown
            graph.orientation, graph._auto = None, None
            assert graph._orientation() == chosen
        graph._draw()
        await settle(pilot)
        graph.scroll_to(y=scroll[1] - 1, animate=False, immediate=True)  # still in sight
        graph._draw(follow=True)
        await settle(pilot)
        assert graph.picture.orientation == chosen
        assert (graph.scroll_x, graph.scroll_y) == scroll


async def test_a_big_graph_shows_the_neighbourhood_of_the_selection():
    app = MgtuiApp(SCENARIOS / "mlp.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        backward = next(p for p in screen.trace.passes if p.kind == "backward")
        screen.goto(backward.start + 5)
        await pilot.press("m")
        await settle(pilot)
        graph = screen.query_one(GraphPane)
        node = screen.selected
        assert graph.picture.center == node
        assert len(graph.picture.boxes) < len(screen.state.view.made)
        assert "more" in "\n".join(graph.picture.lines)  # "+N more" where it cuts
        await pilot.press("n")
        await settle(pilot)
        assert screen.selected in graph.picture.boxes


async def test_a_huge_screen_shows_the_graph_beside_the_table():
    app = MgtuiApp(SCENARIOS / "neuron.py", step=13)
    async with app.run_test(size=(200, 60)) as pilot:
        screen = await loaded(pilot)
        await settle(pilot)
        graph = screen.query_one(GraphPane)
        assert graph.display and screen.query_one("#top").display
        assert graph.size.height >= 20
        assert "▶ n" in "\n".join(screen_text(graph))


async def test_the_graph_pane_survives_a_tiny_terminal_and_back():
    app = MgtuiApp(SCENARIOS / "neuron_exp.py", step=24)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("m")
        await settle(pilot)
        for size in ((40, 12), (20, 8), (120, 40), (80, 24)):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            await pilot.press("n", "T", "j", "L", "K")
            await settle(pilot)
        graph = screen.query_one(GraphPane)
        assert graph.display and screen.selected in graph.picture.boxes
        await pilot.press("enter")  # the cursor's box, chosen: back on screen
        await settle(pilot)
        assert on_screen(graph, screen.selected)


async def test_hostile_labels_are_drawn_inert(write_scenario):
    path = write_scenario("hostile", '''
        """Hostile labels"""
        from engine import Value
        a = Value(1.0, label='[bold red]x[/]')
        b = Value(2.0, label='\\x1b[2Jboom')
        c = a * b; c.label = 'c'
        c.backward()
    ''')
    app = MgtuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("m")
        await settle(pilot)
        graph = screen.query_one(GraphPane)
        text = "\n".join(screen_text(graph))
        assert "[bold red]x[/]" in text  # shown as text, not as markup
        assert "\x1b" not in text


@pytest.mark.parametrize("name,size,rows", [("neuron", (80, 24), 1), ("chain", (80, 24), 1),
                                            ("neuron_exp", (120, 40), 2)])
async def test_the_lesson_graph_fits_whole(name, size, rows):
    """The 10-node neuron's whole graph on one screen at 80×24 (compact boxes, each op
    above its box): no panning needed to see it all (issue 23 item 5). neuron_exp, nine
    layers deep, fits at 120×40 in stacked boxes (the label over the number)."""
    step = {"neuron": 15, "chain": 11, "neuron_exp": 24}[name]
    app = MgtuiApp(SCENARIOS / f"{name}.py", step=step)
    async with app.run_test(size=size) as pilot:
        screen = await loaded(pilot)
        await pilot.press("m")
        await settle(pilot)
        graph = screen.query_one(GraphPane)
        width, height = graph.content_region.size
        assert graph.model.whole and graph.picture.center is None
        assert graph.picture.width <= width and graph.picture.height <= height, (
            graph.picture.width, graph.picture.height, width, height)
        assert all(on_screen(graph, nid) for nid in graph.picture.boxes)
        assert {box.h for box in graph.picture.boxes.values()} == {rows}
        shown = "\n".join(screen_text(graph))
        ops = {"neuron": ("(tanh)",), "neuron_exp": ("(exp)", "(**-1)"), "chain": ()}[name]
        for op in ("(*)", "(+)") + ops:
            assert op in shown, shown
        for nid, box in graph.picture.boxes.items():  # every label whole, in its box
            assert box.label == screen.trace.label(nid)
            assert box.label in shown_at(graph, box), (box.label, shown)


def shown_at(graph: GraphPane, box) -> str:
    """The pane's text on a box's label row, from the box's left edge."""
    line = graph.render_line(box.y - round(graph.scroll_y)).text
    return line[box.x - round(graph.scroll_x):]


async def test_panes_on_one_trace_share_its_layouts():
    """Two sessions of one trace (a class's students) share the graph's model, so a
    picture is laid out once in the process, not once a session."""
    from mgtui.run.lessons import record_lesson
    from mgtui.graph.layout import GraphModel, shared_model

    trace = record_lesson(SCENARIOS / "neuron.py", "neuron.py").trace
    models, pictures = [], []
    for _ in range(2):
        app = MgtuiApp(trace=trace, step=15)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await loaded(pilot)
            await pilot.press("m")
            await settle(pilot)
            graph = screen.query_one(GraphPane)
            models.append(graph.model)
            pictures.append(graph.picture)
    assert isinstance(models[0], GraphModel) and models[0] is models[1]
    assert pictures[0] is pictures[1]
    nodes = list(models[0].nodes)
    assert shared_model(trace, nodes) is models[0]
    other = record_lesson(SCENARIOS / "neuron.py", "neuron.py").trace  # another trace
    assert shared_model(other, nodes) is not models[0]


async def test_sessions_at_one_step_share_the_panes_lines_but_not_their_own_cursor():
    """A class's students at one step and size draw the Graph pane's lines once in the
    process (`strips.GRAPH_LINES`); a session whose cursor is elsewhere draws its own,
    and sees its cursor, not the others' lines."""
    from mgtui.run.lessons import record_lesson

    trace = record_lesson(SCENARIOS / "chain.py", "chain.py").trace
    drawn = []
    for move in (False, False, True):
        app = MgtuiApp(trace=trace, step=15)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await loaded(pilot)
            await pilot.press("m")
            await settle(pilot)
            graph = screen.query_one(GraphPane)
            if move:
                await pilot.press("l")  # this student's own cursor, on another box
                await settle(pilot)
                assert graph.cursor != screen.selected
            drawn.append([graph.render_line(y) for y in range(graph.size.height)])
    first, second, moved = drawn
    assert all(a is b for a, b in zip(first, second))  # drawn once, shown twice
    text = ["".join(s.text for s in lines) for lines in drawn]
    assert "╭" not in text[0] and "╭" in text[2]  # the cursor's round frame: its own
    assert text[0] == text[1] != text[2]
    assert not any(a is b for a, b in zip(first, moved) if a.text != b.text)
