"""Snapshot tests of the Graph pane (m) for chain, neuron and neuron_exp, at a forward
step, at a backward step that adds into two grads, and at the end; at 80×24 and 120×40,
and under NO_COLOR. Each was looked at as a picture before it was accepted."""

from __future__ import annotations

import pytest

from mgtui.tui.app import MgtuiApp

from tests.conftest import SCENARIOS

pytestmark = pytest.mark.usefixtures("clean_env", "highlighted", "no_user_config")


@pytest.fixture(scope="module")
def highlighted():
    from mgtui.tui.widgets.source_view import warm_highlighter

    warm_highlighter()


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]

# (scenario, step): a forward step, a backward step
# whose _backward adds into two grads (in neuron_exp: e's second contribution), the end
STEPS = [
    pytest.param("chain", 4, id="chain-forward"),  # e = a * b
    pytest.param("chain", 11, id="chain-fanout"),  # d._backward: e.grad and c.grad
    pytest.param("chain", 15, id="chain-end"),
    pytest.param("neuron", 6, id="neuron-forward"),  # x1*w1
    pytest.param("neuron", 15, id="neuron-fanout"),  # (x1*w1 + x2*w2)._backward
    pytest.param("neuron", 21, id="neuron-end"),
    pytest.param("neuron_exp", 12, id="neuron_exp-forward"),
    pytest.param("neuron_exp", 24, id="neuron_exp-fanout"),  # e.grad's second +=
    pytest.param("neuron_exp", 37, id="neuron_exp-end"),
]


async def show_graph(pilot) -> None:
    app = pilot.app
    for _ in range(1000):
        await pilot.pause(0.02)
        if not app.loading and app.debugger.trace is not None:
            break
    await app.workers.wait_for_complete()
    await pilot.press("m")
    # the pane scrolls to its node after its first refresh, and paints after that:
    # wait until its scroll has stayed put for a few frames (a loaded machine is slow)
    from mgtui.tui.widgets.graph import GraphPane

    graph, last, still = app.debugger.query_one(GraphPane), None, 0
    for _ in range(100):
        await pilot.pause(0.05)
        await app.workers.wait_for_complete()
        now = (graph.scroll_x, graph.scroll_y, graph.size, id(getattr(graph, "picture", None)))
        still = still + 1 if now == last else 0
        last = now
        if still >= 4:
            break
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name,step", STEPS)
def test_graph_pane(snap_compare, name, step, size):
    app = MgtuiApp(SCENARIOS / f"{name}.py", step=step)
    assert snap_compare(app, terminal_size=size, run_before=show_graph)


@pytest.mark.parametrize("name,step", [p for p in STEPS if "fanout" in p.id])
def test_graph_pane_without_colour(snap_compare, name, step, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = MgtuiApp(SCENARIOS / f"{name}.py", step=step)
    assert snap_compare(app, terminal_size=(80, 24), run_before=show_graph)


def test_graph_pane_mlp_neighbourhood(snap_compare):
    """mlp's graph is big: the pane draws the neighbourhood of the step's node, whole at
    120×40 (compact boxes: the grads of this backward step)."""
    app = MgtuiApp(SCENARIOS / "mlp.py", step=460)
    assert snap_compare(app, terminal_size=(120, 40), run_before=show_graph)
