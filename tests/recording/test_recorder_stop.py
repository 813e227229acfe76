"""A stop that lands in the middle of mgtui's own recording code (ctrl+c, cancel, a
timeout: a signal on the scenario's thread) waits until that code has returned: raised in
a pack of the record store, it left the store half moved, and the stream the runner's
child sent could not be read ("makes node 111391, but the next node to be made is
114689")."""

from __future__ import annotations

import signal
import sys

import pytest

from mgtui.recording.recorder import Recorder
from mgtui.recording.scenario import load_scenario
from mgtui.recording.store import Records
from mgtui.trace import EventKind

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")

CHAIN = """
from engine import Value
x = Value(1.0, label="x")
for _ in range(20_000):
    x = x * 1.0001 + 0.0
"""


def _stopped_in_a_pack(write_scenario, monkeypatch, when: str) -> tuple[Recorder, object]:
    """Record the chain, stopping it as if a signal landed inside the store's first pack,
    `when` its rows are half moved."""
    recorder = Recorder(load_scenario(write_scenario("chain", CHAIN)))
    landed: list[bool] = []
    pack_ends = Records._pack_ends

    def pack_ends_then_signal(records, since, chunks):
        pack_ends(records, since, chunks)
        if not landed:
            landed.append(True)
            recorder.stop_reason = "interrupted"
            # the handler, as Python calls it, with the frame the signal landed in
            recorder._on_alarm(signal.SIGALRM, sys._getframe(1) if when == "pack" else None)

    monkeypatch.setattr(Records, "_pack_ends", pack_ends_then_signal)
    error, output = recorder.execute()
    assert landed
    return recorder, error


def test_a_stop_landing_in_a_pack_of_the_store_waits_until_the_pack_is_done(
        write_scenario, monkeypatch):
    recorder, error = _stopped_in_a_pack(write_scenario, monkeypatch, "pack")
    assert error is not None and error.type == "Stopped"
    records = recorder.records
    assert records.packed.nodes >= 16_384  # the pack went through whole
    assert records.node_count() > records.packed.nodes  # and the stop landed later
    trace = recorder.finish(error, "")  # the chunks rebuild a trace, node ids in order
    assert trace.node_count == records.node_count()
    creates = [trace.event_node(i) for i in trace.events_of(EventKind.CREATE)]
    assert creates == sorted(creates) and len(set(creates)) == len(creates)


def test_a_stop_landing_in_the_scenarios_code_is_raised_there(write_scenario, monkeypatch):
    # (the frame None stands for code that is not mgtui's: the stop is raised at once)
    recorder, error = _stopped_in_a_pack(write_scenario, monkeypatch, "scenario")
    assert error is not None and error.type == "Stopped"
    assert recorder.records.node_count() <= 16_385
