"""The in-code API: `mgtui.show`, `mgtui.record` and `mgtui.check`.

Expected gradients come from the lecture's neuron (o = 0.7071; n 0.5, b 0.5, x1 -1.5,
w1 1.0, x2 0.5, w2 0.0) and from finite differences, never from mgtui's own output.
"""

from __future__ import annotations

import io
import math
import subprocess
import sys
import tempfile
import types

import pytest

import mgtui
import mgtui.api
from engine import Value
from mgtui.trace.binary import load

from tests.conftest import ROOT, SCENARIOS

B = 6.8813735870195432  # the lecture's bias


@pytest.fixture(autouse=True)
def _shown_traces_in_tmp_path(tmp_path, monkeypatch):
    """`show()` saves the trace it shows into the system's temporary directory, for the
    user to open again; the tests' copies go with their tmp_path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def lecture_neuron():
    x1 = Value(2.0, label="x1")
    x2 = Value(0.0, label="x2")
    w1 = Value(-3.0, label="w1")
    w2 = Value(1.0, label="w2")
    b = Value(B, label="b")
    n = x1 * w1 + x2 * w2 + b
    n.label = "n"
    o = n.tanh()
    o.label = "o"
    return o, {"x1": x1, "x2": x2, "w1": w1, "w2": w2, "b": b, "n": n, "o": o}


def walk(root) -> list:
    seen, stack, out = set(), [root], []
    while stack:
        v = stack.pop()
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
            stack.extend(v._prev)
    return out


def state(nodes) -> list:
    """Everything about each node: its fields by identity and value."""
    out = []
    for v in nodes:
        fields = getattr(v, "__dict__", None)
        if fields is None:  # __slots__
            fields = {k: getattr(v, k) for k in type(v).__slots__ if hasattr(v, k)}
        out.append((v.data, v.grad, {k: (x, id(x)) for k, x in fields.items()}))
    return out


def sigmoid(x):
    """A custom op, as a user writes one, with the right derivative."""
    s = 1 / (1 + math.exp(-x.data))
    out = Value(s, (x,), "sigmoid")

    def _backward():
        x.grad += s * (1 - s) * out.grad
    out._backward = _backward
    return out


def bad_sigmoid(x):
    s = 1 / (1 + math.exp(-x.data))
    out = Value(s, (x,), "sigmoid")

    def _backward():
        x.grad += s * out.grad  # BUG: the derivative is s * (1 - s)
    out._backward = _backward
    return out


def assigning_tanh(x):
    t = math.tanh(x.data)
    out = Value(t, (x,), "tanh")

    def _backward():
        x.grad = (1 - t**2) * out.grad  # BUG: = instead of +=
    out._backward = _backward
    return out


# -- show ----------------------------------------------------------------------------------


def test_show_leaves_every_data_and_grad_as_it_was(capsys):
    o, named = lecture_neuron()
    o.backward()
    o.backward()  # grads accumulated twice: not what a replay from zero gives
    nodes = walk(o)
    before = state(nodes)
    mgtui.show(o)
    assert state(nodes) == before
    # The second pass added to grads that were not zeroed: n 0.5 -> 1.0, x1*w1 0.5 -> 2.0
    # (its + node passes on 0.5 + 1.0), so x1 -1.5 + (-3.0 * 2.0) = -7.5. Still there:
    assert named["x1"].grad == pytest.approx(-7.5)
    assert not any("_mgtui_id" in vars(v) for v in nodes)


def test_show_before_backward_leaves_the_grads_at_zero(capsys):
    o, named = lecture_neuron()
    nodes = walk(o)
    before = state(nodes)
    path = mgtui.show(o)
    assert state(nodes) == before
    assert all(v.grad == 0 for v in nodes)
    trace = load(path)
    by_label = {trace.label(i): trace.replay.final_grad[i] for i in range(trace.node_count)}
    expected = {"o": 1.0, "n": 0.5, "b": 0.5, "x1": -1.5, "w1": 1.0, "x2": 0.5, "w2": 0.0}
    for label, grad in expected.items():
        assert by_label[label] == pytest.approx(grad, abs=1e-12), label
    o_id = trace.find("o")[0]
    assert trace.replay.final_data[o_id] == pytest.approx(math.sqrt(0.5))


def test_show_of_micrograd_and_a_slots_class_leaves_them_alone(capsys):
    from micrograd.engine import Value as MValue  # _prev is a set, ops are closures

    a, b = MValue(2.0), MValue(-3.0)
    c = a * b + a
    d = (c * c).relu()
    d.backward()
    nodes = walk(d)
    before = state(nodes)
    trace = load(mgtui.show(d))
    assert state(nodes) == before
    # dd/da = 2c * (b + 1) = 2 * (-4) * (-2) = 16; dd/db = 2c * a = -16
    labels = {trace.label(i): trace.replay.final_grad[i] for i in range(trace.node_count)}
    assert labels["a"] == pytest.approx(16.0) and labels["b"] == pytest.approx(-16.0)

    class Slim:
        __slots__ = ("data", "grad", "_prev", "_op", "_backward", "label")

        def __init__(self, data, _children=(), _op=""):
            self.data = data
            self.grad = 0.0
            self._backward = lambda: None
            self._prev = tuple(_children)
            self._op = _op
            self.label = ""

        def __mul__(self, other):
            out = Slim(self.data * other.data, (self, other), "*")

            def _backward():
                self.grad += other.data * out.grad
                other.grad += self.data * out.grad
            out._backward = _backward
            return out

    p, q = Slim(3.0), Slim(4.0)
    r = p * q
    nodes = walk(r)
    before = state(nodes)
    trace = load(mgtui.show(r))
    assert state(nodes) == before
    labels = {trace.label(i): trace.replay.final_grad[i] for i in range(trace.node_count)}
    assert labels == {"p": 4.0, "q": 3.0, "r": 1.0}  # the manual loop: Slim has no backward


def test_show_never_writes_to_a_node_a_closure_names_as_a_global(capsys):
    global shared
    shared = Value(5.0, label="shared")
    x = Value(2.0, label="x")
    out = x * 3.0

    def _backward():  # writes to a global node outside the graph as well
        x.grad += 3.0 * out.grad
        shared.grad += 1.0
    out._backward = _backward
    mgtui.show(out)
    assert shared.grad == 0 and x.grad == 0 and out.grad == 0


def test_show_names_nodes_from_the_callers_variables(capsys):
    weight = Value(-3.0)
    inputs = [Value(2.0), Value(1.0)]
    total = inputs[0] * weight + inputs[1]
    trace = load(mgtui.show(total))
    labels = {trace.label(i) for i in range(trace.node_count)}
    assert {"weight", "inputs[0]", "inputs[1]", "total"} <= labels
    assert trace.title == "mgtui.show(total)"
    trace = load(mgtui.show(total, name="y"))
    assert trace.title == "mgtui.show(y)"


def test_show_without_a_terminal_saves_the_trace_and_says_how_to_open_it(capsys):
    o, _ = lecture_neuron()
    path = mgtui.show(o)
    printed = capsys.readouterr().out
    assert "not a terminal" in printed
    assert f"mgtui {path}" in printed
    assert path.suffix == ".mgtrace" and load(path).node_count == 10
    proc = subprocess.run([sys.executable, "-m", "mgtui.cli", str(path), "--print"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0 and "n.grad" in proc.stdout


async def test_show_under_a_running_event_loop_does_not_crash(capsys):
    o, _ = lecture_neuron()
    path = mgtui.show(o)
    assert "event loop" in capsys.readouterr().out
    assert load(path).node_count == 10


def test_show_in_a_notebook_prints_a_compact_view(capsys, monkeypatch):
    kernel_shell = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython",
                        types.SimpleNamespace(get_ipython=lambda: kernel_shell))
    o, _ = lecture_neuron()
    path = mgtui.show(o)
    printed = capsys.readouterr().out
    assert "Jupyter" in printed and f"mgtui {path}" in printed
    assert "mgtui.show(o): 10 nodes" in printed  # the node table
    assert "backward pass" in printed
    assert "n.grad" in printed and "0.5" in printed  # a worked backward step


def test_show_refuses_what_is_not_a_value_with_a_message():
    with pytest.raises(TypeError, match="micrograd-style Value"):
        mgtui.show(3.0)


def test_show_of_a_torch_tensor_says_how_to_record_it_instead():
    """A tensor's graph is not found afterwards: the message says so and names the way
    that records it (not the Value fields, which a tensor has no use for)."""
    torch = pytest.importorskip("torch")
    x = torch.tensor([2.0], requires_grad=True)
    with pytest.raises(TypeError, match="does not take a PyTorch Tensor") as refused:
        mgtui.show(torch.tanh(x * 3))
    assert "mgtui.record()" in str(refused.value) and "fields" not in str(refused.value)
    with pytest.raises(TypeError, match="PyTorch Parameter"):
        mgtui.show(torch.nn.Parameter(torch.ones(2)))


@pytest.mark.usefixtures("clean_env")
def test_show_runs_the_app_under_pilot_and_returns_when_it_quits(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    seen = {}

    async def auto_pilot(pilot):
        app = pilot.app
        for _ in range(200):
            await pilot.pause(0.02)
            if not app.loading and app.debugger.trace is not None:
                break
        screen = app.debugger
        seen["title"] = screen.trace.title
        await pilot.press("G")  # the end: the last backward step
        seen["position"] = screen.position
        seen["steps"] = len(screen.trace)
        await pilot.press("d")  # the doctor explains it needs code to re-run
        await pilot.pause(0.3)
        from mgtui.tui.widgets.checks import ChecksPane

        seen["checks"] = screen.query_one(ChecksPane).status
        await pilot.press("q")

    monkeypatch.setattr(mgtui.api, "no_terminal", lambda: None)
    monkeypatch.setattr(mgtui.api, "APP_RUN_OPTIONS",
                        {"headless": True, "size": (80, 24), "auto_pilot": auto_pilot})
    o, named = lecture_neuron()
    nodes = walk(o)
    before = state(nodes)
    assert mgtui.show(o) is None  # returned once the app quit
    assert seen["title"] == "mgtui.show(o)"
    assert seen["position"] == seen["steps"]
    assert "mgtui.check" in seen["checks"]
    assert state(nodes) == before


# -- record --------------------------------------------------------------------------------


def test_record_a_block_labels_its_nodes_and_keeps_its_lines():
    with mgtui.record() as rec:
        assert "grad" in vars(Value) and hasattr(Value.__init__, "__wrapped__")  # hooked
        a = Value(2.0)
        b = Value(-3.0)
        c = a * b
        L = sigmoid(c)
        L.backward()
    line_of_c = sys._getframe().f_lineno - 3
    t = rec.trace
    labels = [t.label(i) for i in range(t.node_count)]
    assert labels[:4] == ["a", "b", "c", "L"]
    assert t.line(2) == line_of_c
    assert t.scenario == __file__
    s = 1 / (1 + math.exp(6.0))
    # by hand: dL/da = s(1-s) * b, dL/db = s(1-s) * a
    assert t.replay.final_grad[0] == pytest.approx(s * (1 - s) * -3.0)
    assert t.replay.final_grad[1] == pytest.approx(s * (1 - s) * 2.0)
    assert [p.kind for p in t.passes] == ["forward", "backward"]
    assert not any("_mgtui_id" in vars(v) for v in (a, b, c, L))
    # the hooks are off again: no field descriptors, the class's own __init__
    assert not {"grad", "data", "_backward", "label"} & set(vars(Value))
    assert not hasattr(Value.__init__, "__wrapped__")


def test_record_takes_in_values_made_before_the_block():
    w = Value(-0.5)
    x = Value(2.0, label="x")
    with mgtui.record() as rec:
        y = w * x
        y.backward()
        w.data -= 0.1 * w.grad  # an update of a parameter made before the block
    t = rec.trace
    assert [t.label(i) for i in range(t.node_count)] == ["w", "x", "y"]
    assert t.children(2) == (0, 1)
    assert w.grad == 2.0 and w.data == pytest.approx(-0.7)  # the block ran as it would
    assert t.replay.final_grad[0] == 2.0 and t.replay.final_data[0] == pytest.approx(-0.7)
    assert [p.kind for p in t.passes] == ["forward", "backward", "update"]
    assert "_mgtui_id" not in vars(w) and "_mgtui_id" not in vars(x)


def test_record_keeps_the_blocks_error_and_lets_it_go_on():
    with pytest.raises(ZeroDivisionError):
        with mgtui.record() as rec:
            a = Value(1.0)
            b = a * 2
            1 / 0
    assert rec.trace.node_count == 3
    assert rec.trace.error.type == "ZeroDivisionError"
    assert rec.trace.error.line == sys._getframe().f_lineno - 3


def test_record_save_and_open(tmp_path):
    with mgtui.record() as rec:
        o, _ = lecture_neuron()
        o.backward()
    path = rec.save(tmp_path / "neuron.mgtrace")
    again = load(path)
    assert again.node_count == rec.trace.node_count == 10
    assert list(again.replay.final_grad) == list(rec.trace.replay.final_grad)


def test_record_and_check_under_sys_settrace():
    """Coverage and debuggers set sys.settrace: the recording does not notice it."""
    calls = 0  # (a count: a list the tracer appends to would grow under any walk of it)

    def tracer(frame, event, arg):
        nonlocal calls
        calls += 1
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        with mgtui.record() as rec:
            x = Value(0.5)
            y = assigning_tanh(x * 2)
            y.backward()
        found = mgtui.check(rec)
        clean = mgtui.check(lambda: sigmoid(Value(0.5) * 2).backward())
    finally:
        sys.settrace(old)
    assert calls  # the tracer did run meanwhile
    assert [f.kind for f in found] == ["overwrite"]
    assert not clean


# -- check ---------------------------------------------------------------------------------


def neuron_with_bad_sigmoid():
    x = Value(0.4, label="x")
    w = Value(-1.5, label="w")
    z = x * w  # no label: named by the function's variable
    y = bad_sigmoid(z)
    y.label = "y"
    y.backward()


def test_check_a_function_finds_the_wrong_derivative_at_its_line():
    found = mgtui.check(neuron_with_bad_sigmoid)
    assert [f.kind for f in found] == ["wrong-derivative"]
    f = found[0]
    assert f.file == __file__
    assert f.text.startswith("x.grad += s * out.grad")
    # the numerical grad of its input z = x * w = -0.6 is sigmoid's derivative s(1 - s)
    s = 1 / (1 + math.exp(0.6))
    assert f.numerical == pytest.approx(s * (1 - s), rel=1e-4)
    assert f.recorded == pytest.approx(s)  # what the bug gave
    assert f.message.startswith("z.grad: numerical")
    assert "wrong-derivative at test_api.py:" in repr(found)
    assert "1 problem found." in str(found)


def test_check_a_recording_finds_an_overwrite_and_says_what_it_could_not_check():
    with mgtui.record() as rec:
        x = Value(0.3, label="x")
        y = assigning_tanh(x)
        y.backward()
    found = rec.check()
    assert [(f.kind, f.label) for f in found] == [("overwrite", "y")]
    assert any("numerically" in n for n in found.notes)


def test_check_a_scenario_file_and_a_bundled_name():
    assert not mgtui.check(SCENARIOS / "chain.py")
    found = mgtui.check("bugs/wrong_derivative")
    assert found and found[0].kind == "wrong-derivative"


def test_check_is_true_when_the_code_raised():
    def broken():
        a = Value(1.0)
        raise ValueError("no graph today")

    found = mgtui.check(broken)
    assert len(found) == 0 and found  # no finding, but not clean either
    assert "no graph today" in repr(found)


def test_help_reads_well():
    out = io.StringIO()
    import pydoc

    text = pydoc.render_doc(mgtui, renderer=pydoc.plaintext)
    for name in ("show(root", "record(*", "check(target", "Findings", "Recording"):
        assert name in text, name
    assert (ROOT / "mgtui" / "py.typed").exists()


def test_a_shown_graph_has_its_closures_source_at_backward_steps(capsys):
    from mgtui.session import Session

    o, _ = lecture_neuron()
    trace = load(mgtui.show(o))
    session = Session(trace)
    first_call = next(i for i in range(len(trace)) if trace.kind(i).value == "backward")
    source = session.goto(first_call + 1).source  # the step that applies that event
    assert source.title != "<mgtui.show>: no source in this trace"
    assert "o._backward (tanh)" in source.title and "value.py" in source.title
    assert any("1 - t**2" in line for line in source.lines)  # engine's tanh


def test_recordings_do_not_nest_and_say_so():
    from mgtui.recording.inprocess import RecordingError

    with mgtui.record() as outer:
        a = Value(1.0)
        with pytest.raises(RecordingError, match="one at a time"):
            with mgtui.record():
                pass
        with pytest.raises(RecordingError):
            mgtui.show(a)
        b = a * 3
    assert outer.trace.node_count == 3  # a, 3, b: the outer block went on
    with mgtui.record() as again:  # and the next one records
        Value(2.0)
    assert again.trace.node_count == 1


def test_show_a_recording_and_a_graph_with_plain_numbers_among_its_inputs(capsys):
    with mgtui.record() as rec:
        o, _ = lecture_neuron()
        o.backward()
    assert load(rec.show()).node_count == 10
    a = Value(2.0, label="a")
    odd = Value(5.0, (a, 3.0), "+")  # a number among the children: not a node, left out

    def _backward():
        a.grad += odd.grad
    odd._backward = _backward
    with pytest.raises(AttributeError):
        odd.backward()  # its own backward() walks into the number's _prev
    odd.grad = 0.0
    trace = load(mgtui.show(odd))  # no crash: the same error, kept as the trace's
    assert [trace.label(i) for i in range(trace.node_count)] == ["a", "odd"]
    assert trace.error.type == "AttributeError"


def test_check_a_file_with_script_arguments(write_scenario):
    path = write_scenario("args", '''
        import sys
        from engine import Value
        scale = float(sys.argv[1])
        a = Value(2.0, label="a")
        b = a * scale; b.label = "b"
        b.backward()
        assert a.grad == scale
    ''')
    assert not mgtui.check(path, argv=("4",))
    found = mgtui.check(path)  # no argument: the script raises IndexError
    assert len(found) == 0 and found.error.type == "IndexError"
