"""The timeline: the state of every node at any step, stepping both ways."""

from array import array
from pathlib import Path

import pytest

from mgtui.recording.recorder import record
from mgtui.session.timeline import Timeline

SCENARIOS = Path(__file__).resolve().parent.parent.parent / "scenarios"


@pytest.fixture(scope="module")
def mlp():
    return record(SCENARIOS / "mlp.py")


def test_two_hundred_steps_forward_and_back_return_the_exact_state(mlp):
    begin = mlp.passes[6].start - 60  # the end of round 2's forward pass and zero_grad
    timeline = Timeline(mlp, position=begin)
    start = (array("d", timeline.data), array("d", timeline.grad), timeline.created)
    for _ in range(200):
        assert timeline.step()
    assert timeline.position == begin + 200
    assert timeline.grad != start[1] and timeline.created > start[2]
    for _ in range(200):
        assert timeline.back()
    assert (timeline.data, timeline.grad, timeline.created) == start


def test_walking_to_the_end_gives_the_final_state(mlp):
    timeline = Timeline(mlp)
    while timeline.step():
        pass
    assert timeline.at_end
    assert timeline.grad == mlp.replay.final_grad and timeline.data == mlp.replay.final_data
    jumped = Timeline(mlp, position=len(mlp))
    assert jumped.grad == mlp.replay.final_grad
    while timeline.back():
        pass
    assert timeline.at_start and timeline.created == 0
    assert timeline.data == mlp.node_data and not any(timeline.grad)


def test_state_in_the_middle_of_the_chain_backward_pass():
    trace = record(SCENARIOS / "chain.py")
    timeline = Timeline(trace)
    backward = trace.passes[1]
    timeline.seek(backward.start + 2)  # the seed, then L._backward()
    grads = {trace.label(n): timeline.grad[n] for n in range(trace.node_count)}
    assert grads == {"a": 0, "b": 0, "e": 0, "c": 0, "d": -2.0, "f": 4.0, "L": 1.0}
    assert timeline.event.kind == "backward" and trace.label(timeline.event.node) == "L"


class CountingArray:
    """Stands in for the timeline's state arrays and counts the writes to them."""

    def __init__(self, values):
        self.values = values
        self.writes = 0

    def __getitem__(self, i):
        return self.values[i]

    def __setitem__(self, i, v):
        self.writes += 1
        self.values[i] = v


def test_a_step_touches_only_its_own_writes(mlp):
    timeline = Timeline(mlp, position=mlp.passes[2].start)  # the first backward pass
    timeline.grad = CountingArray(timeline.grad)
    timeline.data = CountingArray(timeline.data)
    for _ in range(50):
        index = timeline.position
        own = len(mlp.event(index).writes) + (mlp.kind(index) in ("grad", "data"))
        timeline.grad.writes = timeline.data.writes = 0
        timeline.step()
        assert timeline.grad.writes + timeline.data.writes == own
        timeline.grad.writes = timeline.data.writes = 0
        timeline.back()
        assert timeline.grad.writes + timeline.data.writes == own
        timeline.step()


def test_the_start_and_the_end_share_the_traces_arrays_and_steps_change_only_a_layer(mlp):
    """At the start the state is the trace's `node_data` and no grads, at the end (`G`)
    its final state: read through, not copied (a copy of both is 48 MB at 3M nodes). A
    step changes the timeline's own layer over them, never the trace's arrays; stepping
    back to where it was gives the same state, and the final state is untouched."""
    from mgtui.trace.replay import Layer

    timeline = Timeline(mlp)
    assert isinstance(timeline.data, Layer) and timeline.data.base is mlp.node_data
    assert timeline.grad.base is None and not timeline.data.changes
    timeline.seek(len(mlp))
    assert timeline.data.base is mlp.replay.final_data or timeline.data.base is mlp.replay.final_data.base
    assert timeline.grad.base is mlp.replay.final_grad and not timeline.grad.changes
    final = (array("d", mlp.replay.final_data), array("d", mlp.replay.final_grad))
    for _ in range(40):
        timeline.back()
    assert timeline.data.changes or timeline.grad.changes  # (the last update's data writes)
    assert timeline.grad.base is mlp.replay.final_grad
    assert (array("d", mlp.replay.final_data), array("d", mlp.replay.final_grad)) == final
    walked = Timeline(mlp, position=len(mlp) - 40)  # moved there from the start, in bulk
    assert timeline.data == walked.data and timeline.grad == walked.grad
    assert [timeline.grad[n] for n in range(mlp.node_count)] == list(walked.grad)


def test_many_changes_make_an_array_of_the_timelines_own(mlp, monkeypatch):
    """Once its changes are many (more than a dict holds for the memory of an array),
    the timeline keeps an array of its own, with the same numbers."""
    from mgtui.session import timeline as timeline_module

    monkeypatch.setattr(timeline_module, "_many", lambda n: 10)
    timeline = Timeline(mlp)
    timeline.seek(mlp.passes[2].end)  # through a backward pass: many grads written
    assert isinstance(timeline.grad, array)
    walked = Timeline(mlp)
    monkeypatch.undo()
    walked = Timeline(mlp, position=mlp.passes[2].end)
    assert timeline.grad == walked.grad and timeline.data == walked.data


def test_a_long_move_forward_in_bulk_gives_the_state_stepping_gives(mlp):
    """A seek more than 64 steps ahead replays the events in bulk (`Trace.replay.between`):
    the same data, grads and nodes made as stepping there one event at a time."""
    for start, end in ((0, mlp.passes[3].end + 7), (mlp.passes[2].start + 5, len(mlp) - 3)):
        bulk = Timeline(mlp, position=start)
        bulk.seek(end)
        stepped = Timeline(mlp, position=start)
        while stepped.position < end:
            stepped.step()
        assert (bulk.position, bulk.created) == (stepped.position, stepped.created)
        assert bulk.data == stepped.data and bulk.grad == stepped.grad
