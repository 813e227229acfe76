"""Explanations that stay with the step: find takes a name as the table shows it, the
`uses` column and "contribution k of n" count the current graph (one training step's),
and a `#:` note on `loss.backward()` shows once, where the backward pass starts."""

from __future__ import annotations

import pytest

from mgtui.run.runner import run
from mgtui.session import Session
from mgtui.trace.names import fitted_name
from mgtui.tui.app import MgtuiApp
from mgtui.tui.widgets.node_table import NodeTable

TRAIN = '''
    """Two steps of training"""
    import random

    from engine.nn import MLP

    random.seed(1)
    model = MLP(2, [2, 1], activation='tanh')
    xs = [[1.0, -2.0], [0.5, 1.5]]
    ys = [1.0, -1.0]
    for k in range(2):
        ypred = [model(x) for x in xs]
        loss = sum((yout - ygt)**2 for ygt, yout in zip(ys, ypred))
        model.zero_grad()
        loss.backward()  #: backward starts at the loss
        for p in model.parameters():
            p.data += -0.05 * p.grad  #: a step against the gradient
'''
BIAS = "model.layers[1].neurons[0].b"  # the output neuron's bias: once per example


@pytest.fixture
def train(write_scenario):
    return write_scenario("train", TRAIN)


@pytest.fixture
def session(train):
    return Session(run(train).trace)


def test_find_takes_a_name_as_the_table_shows_it(session):
    trace = session.trace
    session.end()
    label = trace.label
    assert label(session.find("model.l[1].n[0].b").node) == BIAS
    ends = {label(session.find("…n[0].b").node) for _ in range(2)}
    assert ends == {BIAS, "model.layers[0].neurons[0].b"}  # both, in turn
    assert label(session.find("...n[0].b").node).endswith("neurons[0].b")  # typed `...`
    assert label(session.find("l[1].n[0].w[1]").node) == "model.layers[1].neurons[0].w[1]"
    assert label(session.find("layers[1].n[0].W[0]").node) == "model.layers[1].neurons[0].w[0]"
    # whatever width the label column has, the name it shows finds a node shown so
    # (the bias itself where that name is its own)
    (bias,) = trace.find(BIAS)
    for width in (6, 10, 14, 17, 24):
        session.select(0)
        shown = fitted_name(trace, bias, width)
        found = session.find(shown).node
        assert fitted_name(trace, found, width) == shown
        assert found == bias or width < 17, shown
    session.select(bias)
    assert session.find("n[7]").notice is not None  # no such neuron: said so, not selected
    assert session.node == bias


def uses_and_contributions(session, nid: int) -> dict[int, list[tuple[int, int]]]:
    """Per backward pass, each contribution to node `nid`'s grad as (k, n): the k-th of
    its n uses."""
    trace = session.trace
    found: dict[int, list[tuple[int, int]]] = {}
    for p in trace.passes:
        if p.kind != "backward":
            continue
        for event in trace.backward_calls(p):
            for c in session.goto(event + 1).detail.explanation.contributions:
                if c.target == nid and c.field == "grad":
                    found.setdefault(p.index, []).append((c.nth, c.uses))
    return found


def test_uses_and_contribution_k_of_n_count_this_pass(session):
    """The bias of the output neuron is used once per example: two uses in each
    training step's graph (four in the whole run), so each backward pass adds into
    its grad twice, the 1st and the 2nd of 2."""
    trace = session.trace
    (bias,) = trace.find(BIAS)
    assert trace.index.uses[bias] == 4  # the whole run: both training steps
    found = uses_and_contributions(session, bias)
    assert list(found.values()) == [[(1, 2), (2, 2)], [(1, 2), (2, 2)]]
    for p in trace.passes:  # the table's column, in every pass's graph
        assert session.goto(p.start + 1).view.uses(bias) == 2
    # the sentence the detail pane shows for the second
    second = next(e for e in trace.backward_calls(trace.passes[6])
                  if any(c.target == bias and c.nth == 2 for c in
                         session.goto(e + 1).detail.explanation.contributions))
    notes = session.goto(second + 1).detail.explanation.notes
    assert any("feeds 2 nodes: this is contribution 2 to" in n for n in notes)


def test_a_note_on_backward_shows_once_where_the_pass_starts(session):
    trace = session.trace
    seen: dict[str, list[int]] = {}
    for step in range(1, session.total + 1):
        notes = session.goto(step).detail.notes
        assert len(notes) == len(set(notes)), f"a note twice at step {step}"
        for note in notes:
            seen.setdefault(note, []).append(step)
    starts = [p.start + 1 for p in trace.passes if p.kind == "backward"]
    assert seen["backward starts at the loss"] == starts
    updates = [p.start + 1 for p in trace.passes if p.kind == "update"]
    assert seen["a step against the gradient"] == updates


def test_a_note_reached_twice_at_one_step_shows_once(write_scenario):
    path = write_scenario("twice", '''
        class V:
            def __init__(self, data, _children=()):
                self.data = data; self.grad = 0.0
                self._prev = set(_children); self._op = ''
                self._backward = lambda: None
            def __mul__(self, other):
                out = V(self.data * other.data, (self, other))
                out._op = '*'
                def _backward():
                    self.grad += other.data * out.grad  #: the other factor times out.grad
                    other.grad += self.data * out.grad  #: the other factor times out.grad
                out._backward = _backward
                return out
        a = V(3.0)
        b = V(4.0)
        c = a * b
        c.grad = 1.0
        c._backward()
    ''')
    session = Session(run(path).trace)
    notes = [session.goto(step).detail.notes for step in range(1, session.total + 1)]
    assert ("the other factor times out.grad",) in notes  # both writes' lines: once


async def test_the_app_finds_a_shortened_name_and_counts_uses_in_this_graph(train):
    app = MgtuiApp(train)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        for _ in range(500):
            await pilot.pause(0.02)
            if not app.loading and screen.trace is not None:
                break
        await pilot.press("G", "slash", *"model.l[1].n[0].b", "enter")
        await pilot.pause()
        table = screen.query_one(NodeTable)
        assert screen.trace.label(table.selected_node) == BIAS
        row = table._row(table.view.row_of(table.selected_node, screen.trace.node_count))
        *_, uses, topo = row.text.split()
        assert uses == "2" and topo.isdigit()


def test_the_lesson_page_counts_uses_in_this_graph(train):
    """`--export html` packs each graph's uses (this training step's), as the app's
    column counts them, not the whole run's (issue 23 item 6)."""
    from mgtui.tui.export_html_data import pack_lesson

    trace = run(train).trace
    data = pack_lesson(trace).data
    session = Session(trace)
    bias = next(n for n in range(trace.node_count) if fitted_name(trace, n, 60) == BIAS)
    assert trace.index.uses[bias] == 4 and "uses" not in data["nodes"]
    for p in trace.passes:
        view = session.goto(p.start + 1).view
        packed = data["views"][data["pass_view"][p.index]]
        nodes = [*view.used, *view.made]
        assert packed["uses"] == [view.uses(n) for n in nodes]
        if bias in nodes and p.kind == "backward":
            assert packed["uses"][nodes.index(bias)] == 2


@pytest.mark.skipif(not __import__("pathlib").Path("/usr/bin/chromium").exists(),
                    reason="no /usr/bin/chromium")
def test_the_lesson_page_shows_the_uses_of_this_graph(train, tmp_path):
    """In the browser, every row's uses cell is the app's count at that step."""
    import json

    from cdp import Chromium
    from mgtui.tui.export_html import lesson_html

    trace = run(train).trace
    page = tmp_path / "train.html"
    page.write_text(lesson_html(trace), encoding="utf-8")
    session = Session(trace)
    browser = Chromium()
    try:
        browser.navigate(page.as_uri())
        browser.wait_for("document.body && document.body.dataset.ready === '1'")
        checked = 0
        for key, move in (("]", session.next_pass),) * 6:
            browser.press(key)
            state = move()
            rows = json.loads(browser.evaluate(
                "JSON.stringify(Array.from(document.querySelectorAll('#rows tr'))"
                ".filter((r) => !r.hidden).map((r) => [r.children[1].textContent,"
                " r.children[7].textContent]))"))
            assert browser.evaluate("document.body.dataset.step") == str(state.step)
            for nid, uses in rows:
                assert uses == str(state.view.uses(int(nid))), (state.step, nid)
                checked += int(uses != str(trace.index.uses[int(nid)]))
        assert checked  # (some row's count differs from the whole run's)
    finally:
        browser.close()
