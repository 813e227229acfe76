"""Labels and ops in CJK and emoji take two terminal cells a character: the node table
and the Graph pane clip them by cells, not by their length, so no row runs past its
width and every column stays in place."""

from __future__ import annotations

import textwrap

import pytest
from rich.cells import cell_len

from mgtui.graph.layout import GraphModel
from mgtui.tui.graph_paint import Lighting, paint
from mgtui.run.runner import run
from mgtui.session import Session

SCENARIO = '''
"""Wide labels"""
from engine import Value

a = Value(2.0, label="中文标签很长很长的名字")
b = Value(-3.0, label="😀😀😀😀😀😀😀😀😀😀")
c = Value(10.0, label="e\\u0301te")
e = a*b; e.label = "积"
d = Value(e.data * 2, (e,), "乘法乘法乘法乘法"); d.label = "双"
L = d + c; L.label = "L"
L.backward()
'''


@pytest.fixture
def wide(tmp_path):
    path = tmp_path / "wide.py"
    path.write_text(textwrap.dedent(SCENARIO), encoding="utf-8")
    return path


def at_cell(text: str, x: int) -> str:
    """The character of `text` that covers terminal cell `x`."""
    cells = 0
    for ch in text:
        cells += cell_len(ch)
        if cells > x:
            return ch
    return ""


@pytest.mark.parametrize("orientation", ["LR", "TB"])
def test_the_graph_picture_clips_wide_labels_and_ops_by_cells(wide, orientation):
    trace = run(wide).trace
    state = Session(trace).goto(Session(trace).total)
    picture = GraphModel(trace, [*state.view.used, *state.view.made]).picture(None, orientation)
    lines = paint(picture, Lighting(state.data, state.grad, state.created, state.marks))
    assert [line.cell_len for line in lines] == [picture.width] * picture.height
    text = "\n".join(line.plain for line in lines)
    assert "中文标签" in text and "😀😀" in text and "…" in text and "(乘法" in text
    assert "\x00" not in text
    for nid, box in picture.boxes.items():  # each box's right edge where its frame says
        row = lines[box.row].plain
        assert at_cell(row, box.x + box.w - 1) in "│├║╠", (trace.label(nid), row)


async def test_the_node_table_clips_wide_labels_by_cells_and_keeps_its_columns(
        wide, clean_env, monkeypatch, tmp_path):
    from mgtui.tui.app import MgtuiApp
    from mgtui.tui.widgets.node_table import NodeTable

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    app = MgtuiApp(wide)
    async with app.run_test(size=(110, 30)) as pilot:
        for _ in range(500):
            await pilot.pause(0.02)
            if not app.loading and app.debugger.trace is not None:
                break
        await pilot.press("G")  # the end: every node made, with its numbers
        await pilot.pause()
        table = app.screen.query_one(NodeTable)
        width = table.scrollable_content_region.width
        lines = [table.render_line(y).text for y in range(table.scrollable_content_region.height)]
        header = lines[0]
        grad_end = cell_len(header[:header.index("grad") + len("grad")]) - 1
        rows = [line for line in lines[1:] if line.strip()]
        assert len(rows) == 6
        for line in rows:
            assert cell_len(line) == width, line
            assert at_cell(line, grad_end).isdigit(), (line, grad_end)  # in its column
        shown = "\n".join(rows)
        assert "中文标签" in shown and "😀" in shown and "…" in shown
