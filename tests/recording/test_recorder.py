"""The recorder, on the engine, on PyPI micrograd and on a Value class defined in the file.

Expected grads are the lecture's figures (SPEC section 2) or finite differences; none
are copied from the recorder's own output.
"""

import gc
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mgtui.recording.recorder import ID, Recorder, ScenarioLoadError, StopRecording, load_scenario, record
from mgtui.trace import EventKind, Trace

ROOT = Path(__file__).resolve().parent.parent.parent
SCENARIOS = ROOT / "scenarios"
NEURON_LEAF_GRADS = {"x1": -1.5, "w1": 1.0, "x2": 0.5, "w2": 0.0, "b": 0.5}


def write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def final_grads(trace: Trace) -> dict[str, float]:
    return {trace.label(n): trace.replay.final_grad[n] for n in range(trace.node_count)}


# -- the three kinds of Value class ---------------------------------------------------------

MICROGRAD_NEURON = """
    '''The neuron on PyPI micrograd, with tanh written as a custom op'''
    import math
    from micrograd.engine import Value

    def tanh(v):
        t = math.tanh(v.data)
        out = Value(t, (v,), 'tanh')
        def _backward():
            v.grad += (1 - t**2) * out.grad
        out._backward = _backward
        return out

    x1 = Value(2.0); x2 = Value(0.0)
    w1 = Value(-3.0); w2 = Value(1.0)
    b = Value(6.8813735870195432)
    n = x1*w1 + x2*w2 + b
    o = tanh(n)
    o.backward()
"""

OWN_CLASS_NEURON = """
    '''The neuron on a Value class written in the scenario, as in the lecture'''
    import math

    class Value:
        def __init__(self, data, _children=(), _op='', label=''):
            self.data = data
            self.grad = 0.0
            self._backward = lambda: None
            self._prev = set(_children)
            self._op = _op
            self.label = label

        def __add__(self, other):
            out = Value(self.data + other.data, (self, other), '+')
            def _backward():
                self.grad += 1.0 * out.grad
                other.grad += 1.0 * out.grad
            out._backward = _backward
            return out

        def __mul__(self, other):
            out = Value(self.data * other.data, (self, other), '*')
            def _backward():
                self.grad += other.data * out.grad
                other.grad += self.data * out.grad
            out._backward = _backward
            return out

        def tanh(self):
            t = (math.exp(2*self.data) - 1) / (math.exp(2*self.data) + 1)
            out = Value(t, (self,), 'tanh')
            def _backward():
                self.grad += (1 - t**2) * out.grad
            out._backward = _backward
            return out

        def backward(self):
            topo = []
            visited = set()
            def build_topo(v):
                if v not in visited:
                    visited.add(v)
                    for child in v._prev:
                        build_topo(child)
                    topo.append(v)
            build_topo(self)
            self.grad = 1.0
            for node in reversed(topo):
                node._backward()

    x1 = Value(2.0, label='x1'); x2 = Value(0.0, label='x2')
    w1 = Value(-3.0, label='w1'); w2 = Value(1.0, label='w2')
    b = Value(6.8813735870195432, label='b')
    x1w1 = x1*w1; x2w2 = x2*w2
    n = x1w1 + x2w2 + b
    o = n.tanh()
    o.backward()
"""


def test_engine_neuron_has_the_lecture_grads():
    trace = record(SCENARIOS / "neuron.py")
    grads = final_grads(trace)
    for label, expected in NEURON_LEAF_GRADS.items():
        assert grads[label] == pytest.approx(expected, abs=1e-12)
    assert grads["n"] == pytest.approx(0.5)
    o = trace.find("o")[0]
    assert trace.replay.final_data[o] == pytest.approx(0.7071, abs=1e-4)


@pytest.mark.parametrize("body", [MICROGRAD_NEURON, OWN_CLASS_NEURON], ids=["micrograd", "own-class"])
def test_the_same_neuron_on_other_classes_records_the_same_leaf_grads(tmp_path, body):
    trace = record(write(tmp_path, "neuron.py", body))
    assert trace.error is None
    grads = final_grads(trace)
    for label, expected in NEURON_LEAF_GRADS.items():
        assert grads[label] == pytest.approx(expected, abs=1e-12), label
    # one backward pass: the seed, then one `_backward` per node
    kinds = [p.kind for p in trace.passes]
    assert kinds == ["forward", "backward"]
    backward = trace.passes[1]
    assert len(trace.backward_order(backward)) == trace.node_count


def test_node_lines_point_at_the_scenario_not_the_class(tmp_path):
    trace = record(write(tmp_path, "neuron.py", OWN_CLASS_NEURON))
    source = trace.source.splitlines()
    n = trace.find("n")[0]
    o = trace.find("o")[0]
    assert source[trace.line(n) - 1].strip() == "n = x1w1 + x2w2 + b"
    assert source[trace.line(o) - 1].strip() == "o = n.tanh()"
    # the `*` node made inside micrograd's own __mul__ gets the scenario line too
    trace = record(write(tmp_path, "mg.py", MICROGRAD_NEURON))
    mul = next(i for i in range(trace.node_count) if trace.op(i) == "*")
    assert trace.source.splitlines()[trace.line(mul) - 1].strip() == "n = x1*w1 + x2*w2 + b"


def test_writes_inside_backward_have_their_closure_lines():
    trace = record(SCENARIOS / "chain.py")
    backward = next(p for p in trace.passes if p.kind == "backward")
    first_call = next(trace.event(i) for i in range(backward.start, backward.end)
                      if trace.event(i).kind == "backward")
    assert trace.label(first_call.node) == "L"
    closure = trace.closures[first_call.closure]
    assert closure.filename.endswith("engine/value.py")
    texts = [closure.lines[w.line - closure.first_line].strip() for w in first_call.writes]
    assert texts == ["self.grad += other.data * out.grad", "other.grad += self.data * out.grad"]
    assert [trace.label(w.node) for w in first_call.writes] == ["d", "f"]
    assert [(w.before, w.after) for w in first_call.writes] == [(0.0, -2.0), (0.0, 4.0)]


def test_backward_calls_made_by_hand_are_recorded(tmp_path):
    path = write(tmp_path, "by_hand.py", """
        '''Backprop by hand, one _backward at a time, as in the lecture'''
        from engine import Value
        a = Value(2.0, label='a'); b = Value(-3.0, label='b')
        e = a*b; e.label = 'e'
        c = Value(10.0, label='c')
        d = e + c; d.label = 'd'
        d.grad = 1.0
        d._backward()
        e._backward()
    """)
    trace = record(path)
    events = list(trace.events())
    calls = [e for e in events if e.kind == "backward"]
    assert [trace.label(e.node) for e in calls] == ["d", "e"]
    assert [trace.label(w.node) for w in calls[1].writes] == ["a", "b"]
    assert final_grads(trace)["a"] == -3.0 and final_grads(trace)["b"] == 2.0
    lines = trace.source.splitlines()
    assert [lines[e.line - 1] for e in calls] == ['d._backward()', 'e._backward()']
    assert [p.kind for p in trace.passes] == ["forward", "backward"]


def test_labels_come_from_label_then_variable_then_id(tmp_path):
    path = write(tmp_path, "labels.py", """
        from engine import Value
        a = Value(1.0, label='alpha')
        b = Value(2.0)
        c = a * b
        c.label = 'late'
        d = a + b
        total = d + Value(3.0)
    """)
    trace = record(path)
    labels = [trace.label(i) for i in range(trace.node_count)]
    assert labels == ["alpha", "b", "late", "d", "#4", "total"]


def test_same_file_same_trace_across_processes(tmp_path):
    """micrograd keeps `_prev` in a set, whose order follows memory addresses; two
    separate processes must still give byte-identical traces."""
    path = write(tmp_path, "mg.py", MICROGRAD_NEURON + """
    from micrograd.nn import MLP
    model = MLP(3, [4, 4, 1])
    loss = sum((model([1.0, -2.0, 0.5]) - 1.0)**2 for _ in range(2))
    model.zero_grad()
    loss.backward()
    """)
    outputs = [
        subprocess.run([sys.executable, "-m", "mgtui.cli", str(path), "--export", "json"],
                       capture_output=True, text=True, check=True, env=_env(seed)).stdout
        for seed in ("1", "2")
    ]
    assert outputs[0] == outputs[1]
    assert len(json.loads(outputs[0])["events"]) > 100


def _env(hashseed: str) -> dict:
    import os

    env = dict(os.environ)
    env["PYTHONHASHSEED"] = hashseed
    return env


def test_the_trace_keeps_no_live_values(tmp_path):
    path = write(tmp_path, "keep.py", OWN_CLASS_NEURON)
    trace = record(path)
    gc.collect()
    alive = [o for o in gc.get_objects()
             if type(o).__name__ == "Value" and type(o).__module__ == "__main__"
             and getattr(type(o), "__qualname__", "") == "Value"
             and "_mgtui_id" in getattr(o, "__dict__", {})]
    assert alive == []
    assert trace.node_count == 10


def test_the_classes_are_restored_after_recording():
    from engine import Value

    before = dict(vars(Value))
    record(SCENARIOS / "chain.py")
    assert dict(vars(Value)) == before
    v = Value(2.0) * Value(3.0)
    v.backward()
    assert "_mgtui_id" not in vars(v)


def test_mlp_trains_for_twenty_rounds_with_a_falling_loss():
    trace = record(SCENARIOS / "mlp.py")
    assert trace.error is None
    kinds = [p.kind for p in trace.passes]
    assert kinds == ["forward", "zero_grad", "backward", "update"] * 20
    losses = [loss for _, loss in trace.losses()]
    assert len(losses) == 20
    assert all(later < earlier for earlier, later in zip(losses, losses[1:]))
    # the loss the trace saw is the one the scenario printed
    printed = [float(line.split()[1]) for line in trace.output.splitlines()[1:21]]
    assert printed[:20] == pytest.approx(losses, rel=1e-4)


def test_a_scenario_that_raises_keeps_its_trace_and_the_error_line(tmp_path):
    path = write(tmp_path, "boom.py", """
        from engine import Value
        a = Value(2.0, label='a')
        b = a * a
        b.backward()
        c = a / 0.0
    """)
    trace = record(path)
    assert trace.error is not None
    assert trace.error.type == "ZeroDivisionError"
    assert trace.error.line == 6
    assert final_grads(trace)["a"] == 4.0  # 2a, accumulated from both inputs of a*a
    assert trace.error.after_event == len(trace)


@pytest.mark.parametrize("body, error_type, line", [
    ("from micrograd.engine import Value\na = Value(2.0)\nb = Value(3.0)\nc = a ** b\n",
     "AssertionError", 4),
    ("import math\nfrom engine import Value\na = Value(1000.0)\nb = Value(math.exp(a.data))\n",
     "OverflowError", 4),
])
def test_errors_from_the_spec(tmp_path, body, error_type, line):
    trace = record(write(tmp_path, "err.py", body))
    assert trace.error.type == error_type and trace.error.line == line


def test_recursive_topological_sort_overflowing_is_an_error_not_a_crash(tmp_path):
    path = write(tmp_path, "deep.py", """
        from micrograd.engine import Value
        x = Value(1.0)
        for _ in range(20000):
            x = x + 1
        x.backward()
    """)
    trace = record(path)
    assert trace.error.type == "RecursionError"
    assert trace.error.line == 6
    assert trace.node_count == 40001


def test_print_input_and_exit_are_contained(tmp_path):
    printed = record(write(tmp_path, "p.py", "print('hello')\nimport sys\nprint('err', file=sys.stderr)\n"))
    assert printed.output == "hello\nerr\n" and printed.error is None
    asked = record(write(tmp_path, "i.py", "x = input('number? ')\n"))
    assert asked.error.type == "EOFError" and "input()" in asked.error.message
    assert asked.error.line == 1
    quits = record(write(tmp_path, "q.py", "import sys\nsys.exit(0)\n"))
    assert quits.error is None
    fails = record(write(tmp_path, "f.py", "import sys\nsys.exit(3)\n"))
    assert fails.error.type == "SystemExit" and fails.error.line == 2


def test_max_nodes_stops_recording(tmp_path):
    path = write(tmp_path, "many.py", """
        from engine import Value
        x = Value(0.0)
        while True:
            x = x + 1
    """)
    trace = record(path, max_nodes=500)
    assert trace.node_count == 500
    assert trace.error.type == "Stopped" and "500" in trace.error.message


def test_timeout_stops_a_loop_that_makes_no_nodes(tmp_path):
    path = write(tmp_path, "spin.py", "from engine import Value\na = Value(1.0)\nwhile True:\n    pass\n")
    trace = record(path, timeout=0.3)
    assert trace.error.type == "Stopped" and "timed out" in trace.error.message
    assert trace.node_count == 1


def test_cancel_from_another_thread(tmp_path):
    import threading

    path = write(tmp_path, "spin.py", "from engine import Value\nwhile True:\n    Value(1.0)\n")
    recorder = Recorder(load_scenario(path))

    def cancel_once_recording() -> None:  # (not after a fixed time: a loaded machine may
        # take longer than that to record its first node)
        deadline = time.monotonic() + 60
        while recorder.records.node_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        recorder.cancel()

    threading.Thread(target=cancel_once_recording, daemon=True).start()
    trace = recorder.run()
    assert trace.error.type == "Stopped" and trace.node_count > 0


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.py", "no such file"),
    (lambda d: d, "is a directory"),
    (lambda d: _write_bytes(d / "image.png", b"\x89PNG\r\n\x1a\n\0\0"), "not a Python file"),
    (lambda d: _write_bytes(d / "notes.txt", b"just words"), "not a Python file"),
])
def test_files_that_cannot_run(tmp_path, make, message):
    with pytest.raises(ScenarioLoadError) as info:
        load_scenario(make(tmp_path))
    assert message in info.value.message


def _write_bytes(path, data):
    path.write_bytes(data)
    return path


def test_syntax_error_has_line_column_and_caret(tmp_path):
    path = write(tmp_path, "bad.py", "from engine import Value\na = Value(2.0\nb = 3\n")
    with pytest.raises(ScenarioLoadError) as info:
        load_scenario(path)
    assert info.value.message.startswith(f"{path}:2:")
    assert "SyntaxError" in info.value.message
    assert "^" in info.value.detail and "a = Value(2.0" in info.value.detail


def test_nudge_changes_a_node_at_its_creation():
    """The doctor's numerical gradient: L(a + h) - L(a - h) over 2h is a.grad."""
    chain = load_scenario(SCENARIOS / "chain.py")
    h = 1e-6

    def nudge(amount):
        def on_create(nid, d):
            if nid == 0:
                d["data"] = d["data"] + amount
        return on_create

    plus = record(chain, on_create=nudge(h))
    minus = record(chain, on_create=nudge(-h))
    root = plus.find("L")[0]
    numerical = (plus.node_data[root] - minus.node_data[root]) / (2 * h)
    assert numerical == pytest.approx(6.0, rel=1e-6)


def test_before_backward_runs_before_each_call_and_can_end_the_run():
    """The hook sees each recorded `_backward` call first; what it records is forgotten,
    and a StopRecording from it ends the run before that call."""
    chain = load_scenario(SCENARIOS / "chain.py")
    full = record(chain)
    calls = full.events_of(EventKind.BACKWARD)
    assert len(calls) >= 3
    seen = []

    def stop_at_the_third(d, fn):
        seen.append(d[ID])
        fn()  # the closure's writes from this extra call are not recorded
        if len(seen) == 3:
            raise StopRecording("enough")

    trace = record(chain, before_backward=stop_at_the_third)
    assert seen == [full.event_node(i) for i in calls[:3]]
    assert trace.events_of(EventKind.BACKWARD) == calls[:2]
    assert [trace.write_count_of(i) for i in calls[:2]] == [
        full.write_count_of(i) for i in calls[:2]]
    assert len(trace) == calls[2]  # nothing after the stopped call
    assert trace.error is not None and trace.error.type == "Stopped"


def test_passes_split_by_kind(tmp_path):
    path = write(tmp_path, "manual.py", """
        from engine import Value
        a = Value(2.0, label='a'); b = Value(-3.0, label='b')
        L = a * b; L.label = 'L'
        L.grad = 1.0          # by hand, as the lecture does before _backward exists
        a.grad = -3.0
        a.grad = 0.0
        b.grad = 0.0
        L.backward()
        a.data += 0.01 * a.grad
        c = a * 2
    """)
    trace = record(path)
    got = [(p.kind, p.start, p.end) for p in trace.passes]
    assert got == [("forward", 0, 3), ("other", 3, 5), ("zero_grad", 5, 7),
                   ("backward", 7, 11), ("update", 11, 12), ("forward", 12, 14)]
    assert trace.backward_root(trace.passes[3]) == trace.find("L")[0]


def test_only_the_recording_thread_output_is_captured(tmp_path, capsys):
    """The app records in a worker while its UI thread keeps the real streams."""
    import threading

    started, go_on = threading.Event(), threading.Event()
    path = write(tmp_path, "talks.py", """
        import builtins
        print('from the scenario')
        builtins._mgtui_test_started.set()
        builtins._mgtui_test_go_on.wait(5)
    """)
    import builtins
    builtins._mgtui_test_started, builtins._mgtui_test_go_on = started, go_on
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("trace", record(path)))
    try:
        worker.start()
        assert started.wait(5)
        print("from the UI thread")
        go_on.set()
        worker.join(5)
    finally:
        del builtins._mgtui_test_started, builtins._mgtui_test_go_on
    assert result["trace"].output == "from the scenario\n"
    assert capsys.readouterr().out == "from the UI thread\n"
    assert sys.stdout is not None and not hasattr(sys.stdout, "capture")


def test_timeout_wakes_a_scenario_blocked_in_sleep(tmp_path):
    path = write(tmp_path, "sleepy.py", "import time\nprint('zzz')\ntime.sleep(60)\n")
    trace = record(path, timeout=0.3)
    # stopped inside the sleep (had it slept on, the scenario would have ended well)
    assert trace.error.type == "Stopped" and trace.error.line == 3
    assert trace.output == "zzz\n"
