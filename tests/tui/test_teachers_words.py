"""The teacher's words in sight (issue 35 point 5): a node table shorter than its room
takes only its rows, and the step detail below gets the others, so a step's `#:` note
shows whole, not under `↓ N more lines`; a big table keeps the room it had. In the
Graph pane a parameter's path is shortened as the table shortens it
(`n.l[2].n[0].b`, its end kept), so two parameters never look the same."""

from __future__ import annotations

import pytest

from mgtui.run.lessons import record_lesson
from mgtui.graph.layout import GraphModel
from mgtui.tui.app import MgtuiApp
from mgtui.tui.export_html import lesson_html
from mgtui.tui.widgets.node_table import NodeTable
from mgtui.tui.widgets.step_detail import StepDetail

from tests.tui.test_app import loaded
from tests.cli.test_export_html import packed_of

pytestmark = pytest.mark.usefixtures("clean_env", "no_user_config")
NOTE = ("a product: backward, each input gets the other input times e.grad. Before the "
        "step, ask the class what a.grad will be, then what b.grad will be, and why one "
        "is the other's value: the local derivative of a product with respect to one "
        "factor is the other factor, and the chain rule multiplies it by e.grad, which "
        "the sum above passed down unchanged from L. Last words of the note")


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture
def noted(write_scenario):
    """Five nodes; step 9 is e's _backward, on the line with the long note."""
    return write_scenario("noted", f'''
        """A lesson of our own"""
        from engine import Value

        a = Value(2.0, label='a')
        b = Value(-3.0, label='b')
        c = Value(10.0, label='c')
        e = a*b; e.label = 'e'  #: {NOTE}
        L = e + c; L.label = 'L'
        L.backward()
    ''')


def shown_lines(widget) -> list[str]:
    return [widget.render_line(y).text for y in range(widget.size.height)]


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_a_small_table_leaves_its_rows_to_the_step_detail(noted, size):
    app = MgtuiApp(noted, step=9)
    async with app.run_test(size=size) as pilot:
        screen = await loaded(pilot)
        await pilot.pause(0.2)
        assert "e._backward()" in screen.query_one(StepDetail).text
        table = screen.query_one(NodeTable)
        assert table.row_count == 5 and table.region.height == 6  # its header and 5 rows
        shown = shown_lines(screen.query_one(StepDetail))
        text = " ".join(line.strip() for line in shown)
        assert "Last words of the note" in text, shown
        assert not any("more lines" in line for line in shown), shown


async def test_a_big_table_keeps_its_room(write_scenario):
    path = write_scenario("many", '''
        """Forty nodes"""
        from engine import Value

        total = Value(0.0, label='s0')
        for i in range(20):
            total = total + Value(float(i), label=f'x{i}')
        total.backward()
    ''')
    app = MgtuiApp(path, step=5)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.pause(0.2)
        assert screen.query_one(NodeTable).row_count > 30
        assert screen.query_one("#bottom").region.height == 16  # as the full layout has it
        assert screen.query_one("#top").region.height == 40 - 1 - 2 - 16 - 1


def test_the_graph_pane_shortens_paths_as_the_table_does(write_scenario):
    path = write_scenario("layers", '''
        """Three layers of two neurons"""
        from engine import Value

        class Neuron:
            def __init__(self, k):
                self.w = [Value(0.1 * k), Value(-0.2 * k)]
                self.b = Value(0.3 * k)

        class Layer:
            def __init__(self, k):
                self.neurons = [Neuron(k), Neuron(k + 1)]

        class Net:
            def __init__(self):
                self.layers = [Layer(1), Layer(3), Layer(5)]

        def forward(net):
            last = net.layers[2].neurons
            return last[0].b * last[0].w[0] + last[1].b * last[1].w[0]

        n = Net()
        out = forward(n)
        out.backward()
    ''')
    trace = record_lesson(path, "layers.py").trace
    b0, b1 = (trace.find(f"n.layers[2].neurons[{k}].b")[0] for k in (0, 1))
    model = GraphModel(trace, list(range(trace.node_count)))
    for compact in (False, True, 2):
        picture = model.picture(None, "LR", compact)
        labels = {nid: picture.boxes[nid].label.strip() for nid in (b0, b1)}
        assert labels == {b0: "n.l[2].n[0].b", b1: "n.l[2].n[1].b"}, (compact, labels)
    # the html page's graph shows the same (its boxes carry the label they show)
    lesson = packed_of(lesson_html(trace))
    shown = {box[4] for picture in lesson["pictures"] for box in picture["boxes"]
             if len(box) > 4}
    assert {"n.l[2].n[0].b", "n.l[2].n[1].b", "n.l[2].n[0].w[0]"} <= shown, shown
