"""The recorder's cheaper paths (issue 12, point 1) keep what they record: the custom-op
values watcher (`on_backward`) sees exactly the calls it asks for, at their event, in
both modes; micrograd's `set(_children)` keeps the order given; and a node the namer
waits on is named only if its variable holds it."""

from __future__ import annotations

import pytest

from mgtui.recording.recorder import Recorder, load_scenario, record
from mgtui.trace import EventKind
from tests.recording.test_recorder import MICROGRAD_NEURON, OWN_CLASS_NEURON

SIGMOID = """
    import math
    from engine import Value

    def sigmoid(x):
        s = 1 / (1 + math.exp(-x.data))
        out = Value(s, (x,), 'sigmoid')
        def _backward():
            x.grad += s * (1 - s) * out.grad
        out._backward = _backward
        return out

    a = Value(0.5); b = Value(-1.0)
    z = a * b + a
    y = sigmoid(z)
    y.backward()
"""


class Watcher:
    """An `on_backward` hook that notes each call it is given and skips `+` and `*`."""

    def __init__(self) -> None:
        self.skip = {"+", "*"}
        self.seen: list[tuple[object, int]] = []
        self.recorder: Recorder | None = None

    def __call__(self, op, fn) -> None:
        self.seen.append((op, self.recorder.records.event_count()))


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "hooks"])
def test_the_watcher_sees_the_calls_it_does_not_skip_at_their_event(write_scenario, inline):
    path = write_scenario("sigmoid", SIGMOID)
    watcher = Watcher()
    recorder = Recorder(load_scenario(path), on_backward=watcher, inline=inline)
    watcher.recorder = recorder
    error, output = recorder.execute()
    trace = recorder.finish(error, output)
    assert error is None
    backward = [i for i in range(len(trace)) if trace.kind(i) == EventKind.BACKWARD]
    ops = [trace.op(trace.event(i).node) for i in backward]
    # sigmoid, then the +, the *, and the leaves a, b (op ''); + and * are skipped
    assert sorted(ops) == sorted(["sigmoid", "+", "*", "", ""])
    expected = [(trace.op(trace.event(i).node), i) for i in backward
                if trace.op(trace.event(i).node) not in ("+", "*")]
    assert watcher.seen == expected
    assert watcher.seen[0][0] == "sigmoid"


def test_a_watcher_records_nothing_the_recording_takes_back(write_scenario):
    """The trace with the watcher is the trace without it."""
    path = write_scenario("sigmoid", SIGMOID)
    watcher = Watcher()
    recorder = Recorder(load_scenario(path), on_backward=watcher)
    watcher.recorder = recorder
    with_watcher = recorder.finish(*recorder.execute())
    plain = record(path)
    assert len(with_watcher) == len(plain) and with_watcher.write_count == plain.write_count
    assert [with_watcher.event(i) for i in range(len(plain))] == \
        [plain.event(i) for i in range(len(plain))]


@pytest.mark.parametrize("source", [MICROGRAD_NEURON, OWN_CLASS_NEURON],
                         ids=["micrograd", "own class"])
def test_a_set_of_children_keeps_the_order_given(write_scenario, source):
    """`self._prev = set(_children)` is made in the order the op gave its children, so
    the scenario's own backward() walks the same order every run."""
    path = write_scenario("neuron", source + """
    p, q = x1 * w1, w1 * x1
    order = ([c is x1 for c in p._prev], [c is w1 for c in q._prev])
    """)
    recorder = Recorder(load_scenario(path))
    error, _ = recorder.execute()
    assert error is None
    assert recorder.globals["order"] == ([True, False], [True, False])


def test_a_candidate_its_variable_no_longer_holds_is_not_named(write_scenario):
    path = write_scenario("rebound", """
        from engine import Value

        a = Value(2.0); b = Value(3.0)
        e = a * b
        e = 5  # the variable no longer holds the node made under its assignment
        for k in range(3):
            s = a + b  # a loop's next turn settles the last one, while `s` holds it
        d = a * b
    """)
    trace = record(path)
    names = [trace.label(n) for n in range(trace.node_count)]
    assert "e" not in names
    assert names.count("s") == 3 and names.count("d") == 1


MIXED_LABELS = """
    from engine import Value

    a = Value(2.0, label='a'); b = Value(-3.0, label=None)  # not a string: sent as ""
    b.label = 5
    c = a * b; c.label = 7
    d = c + a
    d.backward()
    a.data += 0.1 * a.grad  # a write outside any `_backward`
"""


@pytest.mark.parametrize("source", [MICROGRAD_NEURON, MIXED_LABELS], ids=["micrograd", "labels"])
def test_the_child_streams_the_trace_recorded_in_process(write_scenario, source):
    """The flusher's columns, converted at C speed, are those `Recorder.finish` builds:
    for micrograd (no labels at all) and for labels of every kind."""
    from mgtui.run.runner import run

    path = write_scenario("streamed", source)
    here, there = record(path), run(path)
    assert there.finished and there.message == ""
    t = there.trace
    assert len(t) == len(here) > 0 and t.write_count == here.write_count
    assert [t.event(i) for i in range(len(t))] == [here.event(i) for i in range(len(t))]
    assert [t.node(n) for n in range(t.node_count)] == \
        [here.node(n) for n in range(here.node_count)]
    assert [t.label(n) for n in range(t.node_count)] == \
        [here.label(n) for n in range(here.node_count)]
