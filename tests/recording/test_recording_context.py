"""The probes' typed seam (issue 36): every probe of a recording is handed the run's
`RecordingContext`, never the `Recorder`; the Value classes and the names live in
objects of their own that the recorder composes; and the doctor reads recorded nodes
through the public `mgtui.recording.nodes`."""

from __future__ import annotations

import pytest

from mgtui.recording.classes import ValueClasses
from mgtui.recording.context import RecordingContext
from mgtui.recording.nodes import NODE_ID, node_fields, node_id
from mgtui.recording.probes import StopRecording
from mgtui.recording.recorder import Recorder, load_scenario

CHAIN = """\
from engine import Value
a = Value(2.0, label='a')
b = Value(-3.0, label='b')
e = a * b
L = e + a
L.backward()
"""


def _scenario(tmp_path, source: str = CHAIN):
    path = tmp_path / "chain.py"
    path.write_text(source)
    return load_scenario(path)


def _holds(obj: object, target: object) -> list[str]:
    """The attributes of `obj` (one level down) that are `target`."""
    return [name for name, value in vars(obj).items() if value is target]


@pytest.mark.parametrize("inline", [True, False])
def test_no_probe_is_handed_the_recorder(tmp_path, inline):
    rec = Recorder(_scenario(tmp_path), inline=inline)
    assert isinstance(rec.context, RecordingContext)
    assert isinstance(rec.value_classes, ValueClasses)
    seen = [*rec.probes, *rec.value_classes.hooks, rec.value_classes, rec.context.calls]
    for probe in seen:
        assert _holds(probe, rec) == [], type(probe).__name__
    for probe in rec.probes:
        assert getattr(probe, "context", None) is rec.context or \
            getattr(probe, "rec", None) is rec.context, type(probe).__name__
    trace = rec.run()
    assert trace.error is None and trace.node_count == 4
    assert sorted(name for _, name in rec.resolve_names()) == ["L", "a", "b", "e"]


@pytest.mark.parametrize("inline", [True, False])
def test_a_probe_stops_the_run_through_the_context(tmp_path, inline):
    rec = Recorder(_scenario(tmp_path), inline=inline, max_nodes=2)
    trace = rec.run()
    assert rec.stop_reason == rec.context.stop_reason == "more than 2 nodes (--max-nodes)"
    assert trace.node_count == 2 and trace.error is not None
    assert "more than 2 nodes" in trace.error.message


def test_over_limit_keeps_a_reason_given_first(tmp_path):
    rec = Recorder(_scenario(tmp_path))
    rec.cancel("cancelled")
    with pytest.raises(StopRecording, match="^cancelled$"):
        rec.context.over_limit()
    assert rec.stop_reason == "cancelled"


def test_nodes_reads_a_recorded_node_by_its_public_names(tmp_path):
    ids = []

    def before_backward(d, fn):  # (the doctor's overwrite check reads inputs this way)
        ids.append(sorted(node_id(node_fields(c)) for c in d["_prev"]))

    rec = Recorder(_scenario(tmp_path), before_backward=before_backward, inline=False)
    rec.run()
    # backward() from L (#3): its inputs e (#2) and a (#0), then e's a and b (#1), then
    # the leaves a and b, which have none
    assert ids == [[0, 2], [0, 1], [], []]
    fields = node_fields(rec.globals["a"])
    assert fields is not None and fields["data"] == 2.0
    assert node_id(fields) == 0 and fields[NODE_ID] == 0
    assert node_fields(2.0) is None
    assert node_id({}) == -1
