"""The runner: every recording in a child process of its own. Nothing a scenario does can
hang the parent, lose the trace recorded so far, leak into the next run, or corrupt the
stream; every way a run ends gives one clear message."""

from __future__ import annotations

import random
import threading
import time

import pytest

from mgtui.recording.recorder import ScenarioLoadError, record
from mgtui.run.runner import LiveTrace, Run, RunSpec, run

from tests.conftest import SCENARIOS

HANG_GUARD = 120  # seconds: only so that a run that never ends fails its test


def run_guarded(path, **options):
    """`run(path, **options)`, failing the test if it never returns (a hang guard, not
    a measure of speed: the tests wait on what happened, not on the clock)."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["result"] = run(path, **options)
        except BaseException as exc:  # noqa: BLE001 - raised again in the test
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_GUARD)
    assert not thread.is_alive(), f"the run did not end within {HANG_GUARD} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def ended(pid: int) -> bool:
    """Has process `pid` ended (a zombie has)?"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2 :][:1] == b"Z"


def test_a_run_in_a_child_gives_the_same_trace_as_in_process():
    here, there = record(SCENARIOS / "mlp.py"), run(SCENARIOS / "mlp.py")
    assert there.finished and there.message == ""
    t = there.trace
    assert len(t) == len(here) and t.passes == here.passes and t.output == here.output
    assert all(t.event(i) == here.event(i) for i in range(len(t)))
    assert all(t.node(n) == here.node(n) for n in range(t.node_count))


def test_a_trace_from_the_child_saves_compressed(tmp_path):
    """The child streams its chunks uncompressed; the parent keeps none of them, and a
    trace saved from a run is deflated like any other and loads back the same."""
    import io
    import zlib

    from mgtui.trace import binary as tracefile

    t = run(SCENARIOS / "mlp.py").trace
    data = tracefile.dumpb(t)
    sizes = [(len(p), len(zlib.decompress(p)))
             for tag, p in tracefile.records(io.BytesIO(data)) if tag in "NEW"]
    assert sum(p for p, _ in sizes) * 3 < sum(r for _, r in sizes)
    back = tracefile.loadb(data)
    assert len(back) == len(t) and all(back.event(i) == t.event(i) for i in range(len(t)))
    assert all(back.node(n) == t.node(n) for n in range(t.node_count))


def test_the_lecture_figures_come_through_the_child():
    t = run(SCENARIOS / "chain.py").trace
    grads = {t.label(n): t.replay.final_grad[n] for n in range(t.node_count)}
    assert {k: grads[k] for k in "Lfdecab"} == dict(L=1, f=4, d=-2, e=-2, c=-2, a=6, b=-4)


def test_a_scenario_that_cannot_run_is_an_error_not_a_trace(write_scenario):
    bad = write_scenario("bad", "a = (\n")
    with pytest.raises(ScenarioLoadError) as info:
        run(bad)
    assert "SyntaxError" in info.value.message
    with pytest.raises(ScenarioLoadError, match="no such file"):
        run("/nonexistent/x.py")


def test_a_call_blocked_in_c_ends_at_the_timeout_with_the_trace_so_far(write_scenario):
    path = write_scenario("sleeper", """
        import time
        from engine import Value
        a = Value(1.0)
        b = a * 2
        time.sleep(1000)
    """)
    result = run_guarded(path, timeout=1.0)
    assert not result.finished and "timed out after 1 s" in result.message
    assert len(result.trace) == 3  # a, the constant 2, b
    assert result.trace.error.type == "Stopped"


def test_os_exit_keeps_the_trace_and_does_not_count_as_finished(write_scenario):
    path = write_scenario("exits", """
        import os
        from engine import Value
        a = Value(1.0)
        b = a + a
        os._exit(0)
    """)
    result = run(path)
    assert not result.finished
    assert "os._exit" in result.message or "ended before it finished" in result.message
    assert len(result.trace) == 2


def test_a_monkeypatch_does_not_outlive_its_run(write_scenario):
    path = write_scenario("patcher", """
        from engine import Value
        old = Value.__add__
        Value.__add__ = lambda self, other: old(old(self, other), Value(100.0))
        b = Value(1.0) + Value(2.0)
        print(b.data)
    """)
    assert [run(path).trace.output.strip() for _ in range(3)] == ["103.0"] * 3
    t = run(SCENARIOS / "chain.py").trace
    assert t.replay.final_data[t.find("L")[0]] == -8.0


def test_an_edited_imported_module_is_seen_by_the_next_run(tmp_path, write_scenario):
    (tmp_path / "myops.py").write_text("K = 2.0\n")
    path = write_scenario("uses", """
        from engine import Value
        import myops
        y = Value(3.0) * myops.K
    """)
    first = run(path).trace
    (tmp_path / "myops.py").write_text("K = 5.0\n")
    second = run(path).trace
    assert first.replay.final_data[first.find("y")[0]] == 6.0
    assert second.replay.final_data[second.find("y")[0]] == 15.0


def test_threads_that_print_or_never_end_cannot_spoil_the_run(write_scenario):
    path = write_scenario("threads", """
        import threading, time
        from engine import Value

        def chatter():
            while True:
                print("noise from a thread")
                Value(0.5)
                time.sleep(0.001)

        threading.Thread(target=chatter).start()  # not a daemon: it never ends
        a = Value(2.0)
        for _ in range(200):
            a = a * 1.0
        time.sleep(0.1)
    """)
    result = run_guarded(path)
    assert result.finished and result.trace.error is None
    assert "noise from a thread" in result.trace.output


def test_a_replaced_stdout_does_not_touch_the_trace(write_scenario):
    path = write_scenario("redirects", """
        import io, sys
        from engine import Value
        sys.stdout = io.StringIO()
        a = Value(1.0) * 3
        print("into the void")
    """)
    result = run(path)
    assert result.finished and len(result.trace) == 3


@pytest.mark.parametrize("seed", range(4))
def test_cancelling_at_a_random_moment_keeps_a_partial_trace(seed):
    """At a random point of the recording: once a random number of the ~200k nodes has
    arrived (a moment the recording reaches however fast the machine is)."""
    at = random.Random(seed).randrange(1_000, 120_000)

    def progress(nodes: int) -> None:
        if nodes >= at:
            r.cancel("interrupted")

    r = Run(RunSpec(str(SCENARIOS / "moons.py")), on_progress=progress).start()
    result = r.wait()
    assert not result.finished and result.message == "interrupted"
    assert result.trace is not None and result.trace.error.type == "Stopped"
    assert 0 < len(result.trace)
    assert len(result.trace.passes) >= 1


def test_a_memory_cap_ends_the_run_with_a_message(write_scenario):
    path = write_scenario("hog", """
        from engine import Value
        a = Value(1.0)
        hog = []
        while True:
            hog.append(bytearray(50_000_000))
    """)
    result = run(path, max_memory=1 << 30)
    trace = result.trace
    assert len(trace) == 1
    assert trace.error is not None
    assert trace.error.type == "MemoryError" or "memory" in result.message


def test_megabytes_of_output_are_kept_within_a_budget(write_scenario):
    path = write_scenario("loud", """
        import sys, threading
        def loud():
            for k in range(200_000):
                sys.stdout.write(f"line {k} " + "x" * 40 + "\\n")
        t = threading.Thread(target=loud); t.start(); t.join()
        print("the end")
        from engine import Value
        a = Value(1.0)  # (a run that records no node is refused)
    """)
    result = run(path)
    out = result.trace.output
    assert len(out) < 500_000
    assert "line 0 " in out and "line 199999 " in out and "left out here" in out


def test_the_doctor_checks_a_custom_op_whose_backward_makes_values(write_scenario):
    """The probe replays each `_backward`; one that builds Values while it runs must not
    leave stray nodes in the trace (they would break creation order)."""
    from mgtui.doctor import diagnose

    path = write_scenario("valued_backward", """
        from engine import Value

        def cube(x):
            out = Value(x.data ** 3, (x,), 'cube')
            def _backward():
                local = Value(3.0) * x.data ** 2  # a Value made inside _backward
                x.grad += local.data * out.grad
            out._backward = _backward
            return out

        a = Value(2.0, label='a')
        y = cube(a); y.label = 'y'
        y.backward()
    """)
    report = diagnose(path)
    assert report.error is None and report.findings == []
    t = report.trace
    assert t.replay.final_grad[t.find("a")[0]] == 12.0  # d(a**3)/da = 3 * 2**2


def test_a_snapshot_between_events_and_their_writes_loses_nothing():
    """The stream sends a chunk of events, then the chunk of their writes. A snapshot
    taken between the two shows the trace as it was; the events are not dropped (they
    once were, and every later creation then looked out of order)."""
    from mgtui.trace import binary as tracefile
    from mgtui.trace import chunks_of

    t = record(SCENARIOS / "mlp.py")
    stream = [tracefile.encode_header(t.scenario, t.title, t.notes, t.source)]
    stream += [tracefile.encode_closure(c) for c in t.closures]
    stream += [tracefile.encode_chunk(c) for c in chunks_of(t, size=500)]
    live = LiveTrace()  # what a Run reads its child's stream with
    shown, between = 0, 0
    for k, record_ in enumerate(stream):
        live.feed(record_)
        snap = live.snapshot("")
        assert live.error is None
        if snap is None:
            continue
        assert shown <= len(snap) <= len(t)
        for i in range(shown, len(snap)):  # each shown step is the recorded one
            assert snap.event(i) == t.event(i)
        shown = len(snap)
        if record_[:1] == b"E":
            between += 1
    assert between > 3  # snapshots were taken between events and their writes
    live.feed(tracefile.encode_end(t.error, t.output, None))
    assert len(live.snapshot("")) == len(t)


def test_records_that_arrive_after_a_snapshot_wait_for_the_next_one(write_scenario):
    """After the first snapshot the reader keeps what arrives as it came, and the next
    snapshot (or the end) adds it: nothing is lost or reordered."""
    path = write_scenario("slow", """
        import time
        from engine import Value
        a = Value(1.0, label="a")
        for k in range(40):
            time.sleep(0.02)
            a = a + 1.0
    """)
    r = Run(RunSpec(str(path))).start()
    first = None
    while first is None or len(first) == 0:
        time.sleep(0.05)
        first = r.snapshot()
    while not r.live.waiting and not r.done_within(0.02):
        pass  # (the scenario makes a node every 20 ms, for 0.8 s)
    assert r.live.waiting  # what came since waits, compressed
    later = r.snapshot()
    assert len(later) > len(first)
    whole = r.wait().trace
    assert whole.node_count == 81 and whole.replay.final_data[80] == 41.0  # (each 1.0 a node)


def test_a_process_the_scenario_leaves_behind_cannot_keep_the_run_open(write_scenario):
    """The scenario starts a process that inherits its output and outlives it: once the
    scenario's process has sent its end and exited, the run ends, whole, and the process
    it left has been ended by the keeper. (It used to hold the run open until it ended
    by itself: the group was signalled only while the child lived.)"""
    path = write_scenario("leaves", """
        import subprocess, sys
        from engine import Value
        left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print("left", left.pid)
        a = Value(2.0, label="a")
        b = a * 3.0; b.label = "b"
    """)
    result = run_guarded(path)
    assert result.finished and result.trace.error is None
    assert result.trace.label(result.trace.node_count - 1) == "b"
    left = int(result.trace.output.split("left ")[1].split()[0])
    assert ended(left)
