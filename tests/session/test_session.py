"""The headless session: navigation, breakpoints, the error step, find, go-to, and the
state each move returns. No Pilot: a Session imports no textual.

Expected figures come from the lecture (SPEC §2) or from how micrograd's `backward()`
walks a graph, worked out by hand here, never from the code's own output.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from mgtui.recording.recorder import record
from mgtui.session import Position, Session, sparkline
from mgtui.trace import EventKind

from tests.conftest import SCENARIOS, prefixes_of

SCENARIOS = Path(__file__).resolve().parent.parent.parent / "scenarios"

# chain.py: a, b, c, e = a*b, d = e + c, f, L = d*f are made in steps 1-7. L.backward()
# seeds L.grad (step 8), then runs _backward in the reverse of build_topo's order
# [a, b, e, c, d, f, L]: L 9, f 10, d 11, c 12, e 13, b 14, a 15.
CHAIN_MADE = {"a": 1, "b": 2, "c": 3, "e": 4, "d": 5, "f": 6, "L": 7}
CHAIN_BACKWARD = {"L": 9, "f": 10, "d": 11, "c": 12, "e": 13, "b": 14, "a": 15}
CHAIN_GRADS = {"L": 1, "f": 4, "d": -2, "e": -2, "c": -2, "a": 6, "b": -4}


@pytest.fixture(scope="module")
def chain():
    return record(SCENARIOS / "chain.py")


@pytest.fixture(scope="module")
def neuron():
    return record(SCENARIOS / "neuron.py")


@pytest.fixture(scope="module")
def mlp():
    return record(SCENARIOS / "mlp.py")


@pytest.fixture
def scenario(tmp_path):
    def write(name: str, source: str):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
        return path

    return write


def node(trace, label: str) -> int:
    return trace.find(label)[0]


def label_of(trace, state) -> str | None:
    return trace.label(state.node) if state.node is not None else None


# -- stepping ----------------------------------------------------------------------------------

def test_steps_forward_and_back_and_jumps_to_either_end(chain):
    s = Session(chain)
    assert s.total == 15 and s.state.step == 0
    assert [s.next().step for _ in range(3)] == [1, 2, 3]
    assert s.prev().step == 2
    assert s.end().step == 15
    assert s.next().step == 15  # stops at the end
    assert s.start().step == 0
    assert s.prev().step == 0  # and at the start
    assert s.goto(99).step == 15 and s.goto(-4).step == 0


def test_the_end_holds_the_lecture_figures(chain):
    state = Session(chain).end()
    assert state.data[node(chain, "L")] == -8
    assert {lab: state.grad[node(chain, lab)] for lab in CHAIN_GRADS} == CHAIN_GRADS


def test_a_forward_step_marks_the_new_node_and_works_out_its_value(chain):
    state = Session(chain).goto(CHAIN_MADE["e"])
    e = node(chain, "e")
    assert state.marks == {e: "new"}
    assert label_of(chain, state) == "e"
    assert state.explanation.equation == "e = a * b = 2.0 × -3.0 = -6.0"
    line = line_starting(chain, "e = a*b; e.label = 'e'")
    assert state.source.marked == {line: "▶"} and state.source.first_line == 1
    assert state.header.where == "forward pass 1/2 · 4/7 in pass · step 4/15"
    assert not state.running and state.event == 3


def test_the_seed_is_a_write_outside_backward(chain):
    state = Session(chain).goto(8)
    assert state.marks == {node(chain, "L"): "set"}
    assert state.explanation.title.startswith("seed: L.grad = 1")


def test_a_backward_step_marks_the_runner_and_the_grads_it_wrote(chain):
    state = Session(chain).goto(CHAIN_BACKWARD["L"])
    L, d, f = node(chain, "L"), node(chain, "d"), node(chain, "f")
    assert state.marks == {L: "run", d: "acc", f: "acc"}
    assert state.running and label_of(chain, state) == "L"
    # L = d * f: d.grad = f × L.grad = -2, f.grad = d × L.grad = 4
    changes = {c.label: (c.before, c.after) for c in state.explanation.contributions}
    assert changes == {"d": (0.0, -2.0), "f": (0.0, 4.0)}
    assert state.header.where == "backward pass 2/2 · 2/8 in pass · step 9/15"
    assert state.source.title.startswith("L._backward (*)")
    assert set(state.source.marked.values()) == {"▶"} and len(state.source.marked) >= 1
    assert state.walked == 1  # L's is the first _backward of the walk


def test_tanh_passes_half_the_gradient_to_n(neuron):
    s = Session(neuron)
    o = node(neuron, "o")
    state = s.goto_node(o, to="backward")
    [c] = state.explanation.contributions
    assert c.label == "n" and c.before == 0.0
    assert c.after == pytest.approx(0.5, abs=1e-12)  # (1 - o²) × 1 = 1 - 0.7071² = 0.5


def test_a_node_used_twice_gets_its_second_contribution(scenario):
    trace = record(scenario("add_self", '''
        from engine import Value
        a = Value(3.0, label='a')
        b = a + a; b.label = 'b'
        b.backward()
    '''))
    state = Session(trace).goto_node(node(trace, "b"), to="backward")
    contributions = state.explanation.contributions
    assert [(c.label, c.before, c.after, c.nth) for c in contributions] == [
        ("a", 0.0, 1.0, 1), ("a", 1.0, 2.0, 2)]
    assert state.marks == {node(trace, "b"): "run", node(trace, "a"): "acc"}


def test_non_finite_values_are_warned_about(scenario):
    trace = record(scenario("blows_up", '''
        from engine import Value
        a = Value(1e200, label='a')
        b = a * a; b.label = 'b'
        b.backward()
    '''))
    state = Session(trace).goto(2)  # b = a * a = 1e400: inf
    assert any(w.startswith("⚠ b.data is inf") for w in state.warnings)
    assert Session(trace).goto(1).warnings == ()


# -- passes ------------------------------------------------------------------------------------

def test_pass_keys_on_the_chain(chain):
    s = Session(chain)
    assert s.next_pass().step == 1  # the first step of the forward pass
    assert s.next_pass().step == 8  # the seed: the backward pass starts there
    assert not s.state.can("next_pass") and s.next_pass().step == 8
    s.goto(11)
    assert s.prev_pass().step == 8  # this pass's first step
    assert s.prev_pass().step == 1  # then the previous pass's
    assert s.prev_pass().step == 0


def test_pass_keys_on_a_training_loop(mlp):
    s = Session(mlp)
    s.next_pass()
    state = s.next_pass()
    assert state.step == mlp.passes[1].start + 1
    assert state.passes.kinds[state.passes.current] == "zero_grad"
    assert state.passes.kinds[:4] == ("forward", "zero_grad", "backward", "update")
    s.next()
    assert s.prev_pass().step == mlp.passes[1].start + 1


def test_the_loss_sparkline_falls_with_training(mlp):
    s = Session(mlp)
    bars = s.state.passes.bars
    backward_passes = [p for p in mlp.passes if p.kind == "backward"]
    assert len(bars) == len(backward_passes) == 20
    assert bars[0] == "█" and bars[-1] == "▁"  # the loss falls (SPEC §2)
    assert s.state.passes.loss_at == -1  # no backward pass yet
    assert s.end().passes.loss_at == 19
    assert sparkline((1.0,)) == "" and sparkline((2.0, float("nan"), 1.0)) == "█?▁"


# -- breakpoints ---------------------------------------------------------------------------------

def test_a_breakpoint_stops_when_its_grad_changes_and_when_its_backward_runs(chain):
    s = Session(chain)
    a = node(chain, "a")
    assert s.toggle_breakpoint(a).breakpoints == {a}
    assert s.continue_forward().step == CHAIN_BACKWARD["e"]  # e._backward writes a.grad
    assert s.continue_forward().step == CHAIN_BACKWARD["a"]  # a's own _backward
    state = s.continue_forward()
    assert state.step == 15 and state.notice.text.startswith("No breakpoint ahead")
    assert s.continue_back().step == CHAIN_BACKWARD["e"]
    state = s.continue_back()
    assert state.step == 0 and state.notice.text.startswith("No breakpoint behind")


def test_a_breakpoint_on_the_root_stops_at_its_seed(chain):
    s = Session(chain)
    s.toggle_breakpoint(node(chain, "L"))
    assert s.continue_forward().step == 8  # L.grad = 1
    assert s.continue_forward().step == CHAIN_BACKWARD["L"]


def test_toggling_a_breakpoint_twice_clears_it(chain):
    s = Session(chain)
    s.goto(CHAIN_MADE["c"])  # selects c
    state = s.toggle_breakpoint()
    assert state.breakpoints == {node(chain, "c")} and "Breakpoint on c" in state.notice.text
    state = s.toggle_breakpoint()
    assert state.breakpoints == frozenset() and "removed" in state.notice.text
    state = s.continue_forward()
    assert state.step == 15 and "No breakpoints set" in state.notice.text


def test_breakpoints_survive_a_new_session_where_the_node_still_exists(chain):
    s = Session(chain, breakpoints={node(chain, "a"), 10_000})
    assert s.breakpoints == {node(chain, "a")}


# -- the error step ------------------------------------------------------------------------------

RAISES = '''
    """Raises partway"""
    from engine import Value
    a = Value(2.0, label='a')
    b = a * a; b.label = 'b'
    c = b / 0
'''


def test_a_scenario_that_raised_ends_with_the_error_step(scenario):
    trace = record(scenario("raises", RAISES))
    s = Session(trace)
    assert s.total == len(trace) + 1
    state = s.end()
    assert state.at_error and state.event is None and state.marks == {}
    assert state.detail.error.type == "ZeroDivisionError"
    assert state.source.marked == {5: "✗"}  # c = b / 0 is line 5
    assert state.header.where.startswith("✗ ZeroDivisionError")
    assert state.passes.at_error and state.passes.has_error
    assert not state.can("next") and state.can("prev")
    state = s.prev()
    assert not state.at_error and state.explanation is not None
    assert s.next_pass().at_error  # the error is the step after the last pass


# -- nodes -----------------------------------------------------------------------------------------

def test_find_exact_then_containing_then_says_where(neuron):
    s = Session(neuron)
    s.end()
    assert label_of(neuron, s.find("w2")) == "w2"
    assert label_of(neuron, s.find("x2*")) == "x2*w2"
    state = s.find("nothing")
    assert label_of(neuron, state) == "x2*w2" and state.notice.severity == "warning"
    assert label_of(neuron, s.find("B")) == "b"  # containment ignores case
    assert label_of(neuron, s.find("w1")) == "w1"  # exact beats "x1*w1"
    assert s.state.step == s.total  # finding does not move in time


def test_find_goes_round_the_graph_from_the_selection(neuron):
    s = Session(neuron)
    s.end()
    first = s.find("w").node
    second = s.find("w").node
    assert first != second
    assert {neuron.label(first), neuron.label(second)} <= {"w1", "w2", "x1*w1", "x2*w2",
                                                           "x1*w1 + x2*w2"}


def test_select_moves_the_selection_but_not_the_step(chain):
    s = Session(chain)
    s.goto(5)
    state = s.select(node(chain, "b"))
    assert state.step == 5 and label_of(chain, state) == "b"
    assert state.position == Position(5, node(chain, "b"), "source", chain.scenario)


def test_go_to_a_node_here_where_it_was_made_or_where_its_backward_ran(chain):
    s = Session(chain)
    e = node(chain, "e")
    state = s.goto_node(e)  # in the current graph: selected, no move in time
    assert state.step == 0 and state.node == e
    assert s.goto_node(e, to="made").step == CHAIN_MADE["e"]
    state = s.goto_node(e, to="backward")
    assert state.step == CHAIN_BACKWARD["e"] and state.node == e
    assert chain.kind(state.event) is EventKind.BACKWARD


def test_go_to_a_node_of_another_pass_goes_where_it_was_made(mlp):
    s = Session(mlp)
    last_forward = [p for p in mlp.passes if p.kind == "forward"][-1]
    nid = mlp.made_in(last_forward)[-1]  # the last loss
    state = s.goto_node(nid)
    assert state.step == mlp.index.created_at(nid) + 1 and state.node == nid
    assert state.marks == {nid: "new"}


@dataclass
class FakeFinding:
    step: int
    node: int
    title: str
    message: str
    file: str = ""
    line: int | None = None


def test_go_to_a_finding_shows_its_step_node_and_line(chain):
    s = Session(chain)
    s.show_tab("notes")
    d = node(chain, "d")
    line = line_starting(chain, "d = e + c; d.label = 'd'")
    state = s.goto_finding(FakeFinding(10, d, "a title", "a message", chain.scenario, line))
    assert state.step == 11 and state.node == d and state.position.tab == "source"
    assert state.source.marked == {line: "!"} and "a title" in state.source.title
    assert state.notice.text == "a title: a message"
    # a finding without a line keeps the step's own source
    state = s.goto_finding(FakeFinding(10, d, "t", "m"))
    assert state.source.title.startswith("d._backward")


# -- the position ----------------------------------------------------------------------------------

def test_the_position_round_trips_through_json(chain):
    s = Session(chain)
    s.goto(CHAIN_BACKWARD["d"])
    s.next_tab()
    position = s.state.position
    assert position.tab == "notes"
    sent = json.dumps(position.to_dict())
    assert Position.from_dict(json.loads(sent)) == position
    follower = Session(chain)
    state = follower.seek(Position.from_dict(json.loads(sent)))
    assert state.position == position and state.marks == s.state.marks


@pytest.mark.parametrize("bad", [{"step": -1}, {"step": "3"}, {"node": True},
                                 {"tab": "graph!"}, {"lesson": 3}])
def test_a_malformed_position_is_refused(bad):
    with pytest.raises(ValueError):
        Position.from_dict(bad)


def test_tabs_cycle_through_source_notes_output_checks(chain):
    s = Session(chain)
    assert [s.next_tab().position.tab for _ in range(4)] == ["notes", "output", "checks",
                                                             "source"]
    with pytest.raises(ValueError):
        s.show_tab("nowhere")


# -- what can run ------------------------------------------------------------------------------------

def test_actions_are_greyed_out_at_either_end(chain):
    s = Session(chain)
    state = s.state
    assert not any(state.can(a) for a in ("prev", "start", "continue_back", "prev_pass"))
    assert all(state.can(a) for a in ("next", "end", "continue", "next_pass", "find"))
    assert state.can("breakpoint")  # the first row is selected
    state = s.end()
    assert not any(state.can(a) for a in ("next", "end", "continue", "next_pass"))
    assert state.can("prev") and state.can("continue_back")


def test_an_empty_scenario_has_nothing_to_do(scenario):
    s = Session(record(scenario("empty", '"""Nothing"""\nx = 1\n')))
    state = s.next()
    assert s.total == 0 and state.step == 0 and state.node is None
    assert not state.can("breakpoint") and not state.can("next")
    assert s.toggle_breakpoint().breakpoints == frozenset()
    assert s.find("x").node is None


def test_the_session_imports_no_textual_or_rich():
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("textual", "rich"):
                    raise ImportError(name)
        sys.meta_path.insert(0, Block())
        import mgtui.session, mgtui.session.view, mgtui.settings.bindings, mgtui.settings.config
    """)
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=Path(__file__).resolve().parent.parent.parent)


def test_two_hundred_steps_forward_and_back_return_the_exact_state(mlp):
    """Back in time is exact: every value, mark and explanation as it was, step by step
    (the app test presses fewer keys; this walks 200 steps each way headless)."""
    s = Session(mlp)
    backward = next(p for p in mlp.passes if p.kind == "backward")
    s.goto(backward.start - 60)  # across forward, zero_grad and backward steps

    def snapshot(state):
        return (state.step, list(state.data), list(state.grad), state.created,
                dict(state.marks), state.detail.explanation, state.source)

    states = [snapshot(s.state)]
    for _ in range(200):
        states.append(snapshot(s.next()))
    assert states[-1][0] == states[0][0] + 200 and states[-1][2] != states[0][2]
    for expected in reversed(states[:-1]):
        assert snapshot(s.prev()) == expected


def test_a_session_that_grows_with_its_recording_shows_what_a_new_one_shows():
    """While a scenario records, the session goes on over longer and longer traces of
    the same run. At every update it must show what a session opened on that trace at
    that step shows, while keeping its place and the views of passes that are done."""
    t = record(SCENARIOS / "mlp.py")
    grown, kept = None, 0
    for k, prefix in enumerate(prefixes_of(t, 400)):
        if grown is None:
            grown = Session(prefix)
            grown.goto(len(prefix) // 2)
            continue
        step = grown.step
        before, passes = dict(grown._views), grown.trace.passes
        state = grown.grow(prefix)
        fresh = Session(prefix)
        again = fresh.goto(step, select=grown.node)
        for f in dataclasses.fields(state):  # (a StepState compares by identity)
            assert getattr(state, f.name) == getattr(again, f.name), f.name
        assert grown.step == step
        assert list(grown.timeline.grad) == list(fresh.timeline.grad)
        assert list(grown.timeline.data) == list(fresh.timeline.data)
        done = {p.index for p in prefix.passes[: len(passes)] if p == passes[p.index]}
        for key, view in grown._views.items():  # a view of passes that are done is kept
            assert view.trace is prefix
            if key in before and all(k in done for k in key if k >= 0):
                assert view is before[key]
                kept += 1
        grown.goto(step + 150)  # the user steps on meanwhile
    assert len(grown.trace) == len(t) and kept > 10
    assert list(grown.trace.replay.final_grad) == list(t.replay.final_grad)
    end, again = grown.end(), Session(grown.trace).end()
    for f in dataclasses.fields(end):
        assert getattr(end, f.name) == getattr(again, f.name), f.name


def test_views_prepared_off_the_ui_thread_are_taken_once_by_the_next_session():
    """The app builds the first views in its loading worker (`view.prepare`); the
    session of that trace uses those very views, and builds no other at its start."""
    import threading

    from mgtui.session import view as views

    trace = record(SCENARIOS / "mlp.py")
    worker = threading.Thread(target=views.prepare, args=(trace, (0, len(trace))))
    worker.start()
    worker.join()
    ready = dict(views._prepared[1])
    assert len(ready) == 2  # the first graph and the last
    session = Session(trace)
    assert session.state.view is ready[min(ready)]
    assert session.end().view is ready[max(ready)]
    assert views.take_prepared(trace) == {}  # handed over once
    other = Session(record(SCENARIOS / "chain.py"))  # another trace builds its own
    assert other.state.view is not None and other.state.view not in ready.values()


def test_the_topological_index_answers_as_a_dict_would():
    from mgtui.session.view import TopoIndex

    topo = [5, 2, 9, 0]
    index = TopoIndex(topo, 12)
    expected = {nid: k for k, nid in enumerate(topo)}
    assert dict(index) == expected and len(index) == 4
    for nid in range(-2, 14):
        assert (nid in index) == (nid in expected)
        assert index.get(nid) == expected.get(nid)


@pytest.mark.parametrize("topo", [[3_000_005, 3_000_002, 3_000_009, 3_000_000],
                                  [7, 2_000_000, 2_000_001, 1]],
                         ids=["one span of ids", "ids far apart"])
def test_the_topological_index_of_a_graph_late_in_a_big_trace_answers_as_a_dict(topo):
    """A graph's index spans its own ids (an array from the lowest to the highest), or
    is a dict where a few of them lie far back (parameters made long before the pass):
    never an int for each node of the trace."""
    from mgtui.session.view import TopoIndex

    index = TopoIndex(topo, 3_000_010)
    expected = {nid: k for k, nid in enumerate(topo)}
    assert dict(index) == expected and list(index) == sorted(topo)
    assert (index._at is None) == (max(topo) - min(topo) > 1000)
    assert index._at is None or len(index._at) == max(topo) - min(topo) + 1
    for nid in [*topo, 0, 2, 6, 8, 3_000_001, 3_000_010, 1_999_999, -1]:
        assert (nid in index) == (nid in expected)
        assert index.get(nid) == expected.get(nid)


def line_starting(trace, text: str) -> int:
    """The number of the scenario line that starts with `text` (it may end in a `#:` note)."""
    return next(i for i, line in enumerate(trace.source.splitlines(), 1) if line.startswith(text))


def test_the_next_centre_is_what_the_next_step_shows_without_going_there(mlp):
    """(A class's Graph pane lays the next step out ahead, in the quiet after one.)"""
    session = Session(mlp)
    for step in range(session.total + 1):
        session.goto(step)
        view, node = session.next_centre()
        assert session.step == step  # it has not moved
        if step + 1 > min(session.total, len(mlp)):
            assert (view, node) == (None, None)
            continue
        state = session.next()
        assert (view, node) == (state.view, state.node), step
