"""The gradient doctor: each planted bug is found with the right kind, node and line, and
correct scenarios (bundled, unusual custom ops, PyPI micrograd) raise no false alarm.

Expected lines come from the bug each scenario plants (found by its text), and expected
numbers from the formulas and finite differences worked out here, never from the
doctor's own output. `moons.py` is left to `bench/doctor_time.py`.
"""

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mgtui.cli import main
from mgtui.doctor import Finding, OverwriteCheck, diagnose
from mgtui.recording.recorder import ScenarioLoadError, record

ROOT = Path(__file__).resolve().parent.parent.parent
SCENARIOS = ROOT / "scenarios"
BUGS = SCENARIOS / "bugs"

# scenario -> (kind, node label, a piece of the text of the line it must point at)
EXPECTED = {
    "wrong_derivative": ("wrong-derivative", "o", "x.grad += s * out.grad"),
    "overwrite": ("overwrite", "o", "x.grad = (1 - t**2) * out.grad  # BUG"),
    "no_zero_grad": ("missing-zero-grad", "w", "loss.backward()  # BUG"),
    "no_seed": ("missing-seed", "o", "o._backward()"),
    "topo_order": ("topo-order", "e", "topo.append(v)  # BUG"),
    "foreign_write": ("foreign-write", "t0", "x.grad += w.data * out.grad"),
    "no_backward": ("no-backward", "e", "out = Value(math.exp(x.data), (x,), 'exp')"),
    "non_finite": ("non-finite", "loss", "loss = err * err"),
    "late_pass": ("wrong-derivative", "out", "w.grad += x.data * out.grad * scale"),
    "torch_function": ("wrong-gradient", "o", "return (1 - o) * grad_o", None),
    # the tensor engine's bugs (`engine/tensor.py`), with the element named: (kind,
    # node, line, element of the input the finding names)
    "unbroadcast_mean": ("wrong-derivative", "h", "grad = grad.mean(axis=axis, keepdims=True)",
                         (0, 0)),
    "matmul_transposed": ("wrong-derivative", "y", "W.grad += out.grad.T @ X.data", (0, 1)),
    "no_broadcast_sum": ("grad-shape", "z", "b.grad = b.grad + out.grad  # BUG", None),
    "tensor_overwrite": ("overwrite", "x*c", "a.grad = b.data * out.grad", (0, 0)),
}
CLEAN = ["chain", "neuron", "neuron_exp", "mlp", "tensor_neuron", "tensor_mlp"]


def line_of(path: Path, text: str) -> int:
    lines = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, (path, text, lines)
    return lines[0]


def write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_every_bug_scenario_has_an_expectation():
    on_disk = {p.stem for p in BUGS.glob("*.py") if p.stem != "__init__"}
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bug_is_found_with_kind_node_and_line(name):
    kind, label, text, *element = EXPECTED[name]
    path = BUGS / f"{name}.py"
    report = diagnose(path)
    assert [(f.kind, f.label) for f in report.findings] == [(kind, label)]
    (f,) = report.findings
    assert Path(f.file).resolve() == path.resolve()
    assert f.line == line_of(path, text)
    assert text in f.text
    assert f.element == (element[0] if element else None)
    assert report.error is None
    # the step and node the app jumps to exist, and the node is the one named
    t = report.trace
    assert 0 <= f.step < len(t)
    assert t.label(f.node) == label and t.op(f.node) == f.op


@pytest.mark.parametrize("name", CLEAN)
def test_bundled_scenarios_are_clean(name):
    report = diagnose(SCENARIOS / f"{name}.py")
    assert report.findings == []
    assert report.clean
    assert report.checked_pass is not None  # the numerical check did run


def test_wrong_derivative_numbers_come_from_the_sigmoid():
    report = diagnose(BUGS / "wrong_derivative.py")
    (f,) = report.findings
    s = 1 / (1 + math.exp(-(2.0 * 0.25 + 0.5)))  # n = x*w + b = 1
    assert f.numerical == pytest.approx(s * (1 - s), rel=1e-6)  # 0.1966
    assert f.recorded == pytest.approx(s, rel=1e-9)  # what the bug applied: 0.7311
    assert "0.196612" in f.message and "0.731059" in f.message
    t = report.trace
    assert t.event(f.step).kind == "backward" and t.event_node(f.step) == f.node


def test_overwrite_is_found_although_every_grad_is_right():
    report = diagnose(BUGS / "overwrite.py")
    t = report.trace
    # no fan-out: the grads match the lecture's neuron, so only the replay can tell
    grads = {t.label(n): t.replay.final_grad[n] for n in range(t.node_count)}
    expected = {"n": 0.5, "b": 0.5, "x1": -1.5, "w1": 1.0, "x2": 0.5, "w2": 0.0}
    for name, grad in expected.items():
        assert grads[name] == pytest.approx(grad, abs=1e-9)
    (f,) = report.findings
    assert f.kind == "overwrite" and t.event_node(f.step) == f.node


def test_missing_zero_grad_points_at_the_call_that_adds_onto_a_stale_grad():
    report = diagnose(BUGS / "no_zero_grad.py")
    (f,) = report.findings
    t = report.trace
    event = t.event(f.step)
    first_write = next(w for w in event.writes if w.node == f.node)
    # w.grad after the first backward pass: d/dw sum (w*x + b - y)^2 at w=0.5, b=0
    xs, ys = [1.0, 2.0, 3.0], [3.0, 5.0, 7.0]
    first_pass_grad = sum(2 * (0.5 * x - y) * x for x, y in zip(xs, ys))
    assert first_write.before == pytest.approx(first_pass_grad)
    assert f.recorded == pytest.approx(first_pass_grad)


def test_non_finite_points_at_the_first_inf():
    report = diagnose(BUGS / "non_finite.py")
    (f,) = report.findings
    t = report.trace
    assert t.event(f.step).kind == "create" and t.event_node(f.step) == f.node
    assert math.isinf(t.node_data[f.node])
    earlier = [t.node_data[n] for n in range(f.node)]
    assert all(math.isfinite(x) for x in earlier)


def test_non_finite_written_by_a_backward_or_by_hand(tmp_path):
    path = write(tmp_path, "inf_grad.py", """
        '''A _backward that overflows a grad, then a grad set to nan by hand'''
        import math
        from engine import Value
        def log(x):
            out = Value(math.log(x.data), (x,), 'log')
            def _backward():
                x.grad += out.grad * 1e308 * 1e308  # BUG
            out._backward = _backward
            return out
        a = Value(2.0, label='a')
        L = log(a); L.label = 'L'
        L.backward()
        a.grad = float('nan')
    """)
    (f,) = diagnose(path).findings
    assert (f.kind, f.label, f.line) == ("non-finite", "L", line_of(path, "# BUG"))
    assert f.recorded == math.inf and "a (#0).grad = inf" in f.message
    by_hand = write(tmp_path, "nan_by_hand.py", """
        from engine import Value
        a = Value(2.0, label='a')
        L = a * a; L.label = 'L'
        L.backward()
        a.grad = float('nan')
    """)
    report = diagnose(by_hand)
    (f,) = report.findings
    assert (f.kind, f.label, f.line) == ("non-finite", "a", line_of(by_hand, "float('nan')"))
    t = report.trace
    assert t.kind(f.step) == "grad" and math.isnan(t.change(f.step)[1])


def test_findings_are_frozen_and_json_ready(capsys):
    assert main([str(BUGS / "non_finite.py"), "--check", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [(x["kind"], x["node"]["label"]) for x in out] == [("non-finite", "loss")]
    assert out[0]["recorded"] == "inf"
    assert {"id", "label", "op"} <= set(out[0]["node"])
    assert {"step", "file", "line", "text", "message"} <= set(out[0])
    f = diagnose(BUGS / "no_backward.py").findings[0]
    with pytest.raises(AttributeError):
        f.kind = "other"  # type: ignore[misc]
    assert isinstance(f, Finding)


# -- correct but unusual: no false alarms ----------------------------------------------

UNUSUAL_OPS = """
    '''Ops with three and four inputs, one used twice, one reading out.data, a step'''
    import math
    from engine import Value

    def fma(a, b, c):
        out = Value(a.data * b.data + c.data, (a, b, c), 'fma')
        def _backward():
            a.grad += b.data * out.grad
            b.grad += a.data * out.grad
            c.grad += out.grad
        out._backward = _backward
        return out

    def mean4(a, b, c, d):
        out = Value((a.data + b.data + c.data + d.data) / 4, (a, b, c, d), 'mean')
        def _backward():
            for v in (a, b, c, d):
                v.grad += 0.25 * out.grad
        out._backward = _backward
        return out

    def exp(x):
        out = Value(math.exp(x.data), (x,), 'exp')
        def _backward():
            x.grad += out.data * out.grad  # d(exp)/dx = exp(x) = out.data
        out._backward = _backward
        return out

    def step(x):
        # no `_backward` at all is right here: a step function's derivative is 0
        return Value(1.0 if x.data > 0 else 0.0, (x,), 'step')

    a = Value(1.5); b = Value(-2.0); c = Value(0.25); d = Value(3.0)
    f = fma(a, b, c)
    g = fma(f, f, a)
    m = mean4(f, g, c, d)
    e = exp(m * 0.1)
    L = e * g + f * step(g)
    L.backward()
"""


def test_unusual_correct_ops_are_not_flagged(tmp_path):
    report = diagnose(write(tmp_path, "unusual.py", UNUSUAL_OPS))
    assert report.findings == []
    assert report.checked_nodes >= 10


def test_micrograd_relu_at_exactly_zero_is_not_flagged(tmp_path):
    path = write(tmp_path, "relu0.py", """
        '''PyPI micrograd's relu at exactly 0: its subgradient there is 0'''
        from micrograd.engine import Value
        a = Value(0.0)
        b = Value(2.0)
        r = (a * b).relu()
        s = a.relu()
        q = (b - 2).relu()
        L = r * 3 + s + q * b + a * b
        L.backward()
    """)
    report = diagnose(path)
    assert report.findings == []
    # micrograd's own answer: a.grad = 0 (relus at 0) + b = 2; b.grad = 0 + 0 + a = 0
    t = report.trace
    a = next(n for n in range(t.node_count) if t.label(n) == "a")
    assert t.replay.final_grad[a] == 2.0


def test_micrograd_training_is_clean(tmp_path):
    path = write(tmp_path, "mg_train.py", """
        '''PyPI micrograd: a small max-margin classifier, 2 steps'''
        import random
        from micrograd.nn import MLP
        from micrograd.engine import Value
        random.seed(3)
        model = MLP(2, [8, 1])
        xs = [[random.uniform(-1, 1), random.uniform(-1, 1)] for _ in range(6)]
        ys = [1 if x[0] * x[1] > 0 else -1 for x in xs]
        for k in range(2):
            scores = [model(list(map(Value, x))) for x in xs]
            loss = sum((1 + -y*s).relu() for y, s in zip(ys, scores)) * (1.0 / len(xs))
            model.zero_grad()
            loss.backward()
            for p in model.parameters():
                p.data -= 0.1 * p.grad
    """)
    assert diagnose(path).findings == []


def test_manual_backprop_and_gradient_accumulation_are_not_flagged(tmp_path):
    path = write(tmp_path, "manual.py", """
        '''The lecture's manual pass, and two losses accumulated before one update'''
        from engine import Value
        x = Value(2.0, label='x'); w = Value(-3.0, label='w')
        n = x*w; n.label = 'n'
        o = n.tanh(); o.label = 'o'
        o.grad = 1.0
        o._backward()
        n._backward()
        w.grad = 0.0; x.grad = 0.0
        l1 = (w * 2.0)**2
        l2 = (w - 1.0)**2
        l1.backward()
        l2.backward()  # accumulating on purpose: no update since l1.backward()
        w.data -= 0.01 * w.grad
        w.grad = 0.0
        l3 = w * w
        l3.backward()
    """)
    assert diagnose(path).findings == []


# -- bugs inside bigger graphs ---------------------------------------------------------

def test_slightly_wrong_op_in_an_mlp_is_found_by_the_fast_mode(tmp_path, monkeypatch):
    from engine import Value

    # the scenario patches the engine's class, in this process: put it back afterwards
    monkeypatch.setattr(Value, "tanh", Value.tanh)
    source = (SCENARIOS / "mlp.py").read_text().replace("range(20)", "range(2)").replace(
        "from engine.nn import MLP", textwrap.dedent("""\
            import math
            from engine import Value
            from engine.nn import MLP

            def tanh(self):
                t = math.tanh(self.data)
                out = Value(t, (self,), 'tanh')
                def _backward():
                    self.grad += (1 - t**2) * out.grad * 1.01  # 1% too much
                out._backward = _backward
                return out
            Value.tanh = tanh"""))
    path = write(tmp_path, "mlp_bug.py", source)
    report = diagnose(path)
    assert [f.kind for f in report.findings] == ["wrong-derivative"]
    (f,) = report.findings
    assert f.op == "tanh" and f.line == line_of(path, "* 1.01")
    # the tanh's input has no other use: its grad is 1.01 times the numerical one
    assert f.recorded / f.numerical == pytest.approx(1.01, rel=1e-4)


def test_relu_passing_grad_for_negative_inputs_is_found(tmp_path):
    path = write(tmp_path, "relu_ge.py", """
        '''A relu with >= where > belongs, fed a negative number'''
        from engine import Value
        def relu(x):
            out = Value(max(0.0, x.data), (x,), 'ReLU')
            def _backward():
                x.grad += (out.data >= 0) * out.grad  # BUG
            out._backward = _backward
            return out
        a = Value(-1.5, label='a')
        r = relu(a * 2.0); r.label = 'r'
        L = r + a; L.label = 'L'
        L.backward()
    """)
    (f,) = diagnose(path).findings
    assert (f.kind, f.label, f.line) == ("wrong-derivative", "r", line_of(path, "# BUG"))
    assert f.numerical == 0.0 and f.recorded == 1.0  # d relu/dx for x < 0 is 0


def test_two_faulty_ops_give_two_findings_at_their_own_lines(tmp_path):
    path = write(tmp_path, "two_bugs.py", """
        '''A sigmoid missing its factor and a three-input product missing one'''
        import math
        from engine import Value
        def sigmoid(x):
            s = 1 / (1 + math.exp(-x.data))
            out = Value(s, (x,), 'sigmoid')
            def _backward():
                x.grad += s * out.grad  # BUG1
            out._backward = _backward
            return out
        def mul3(a, b, c):
            out = Value(a.data * b.data * c.data, (a, b, c), 'mul3')
            def _backward():
                a.grad += b.data * c.data * out.grad
                b.grad += a.data * out.grad  # BUG2
                c.grad += a.data * b.data * out.grad
            out._backward = _backward
            return out
        a = Value(0.5, label='a'); b = Value(-1.5, label='b'); c = Value(2.0, label='c')
        m = mul3(a, b, c); m.label = 'm'
        o = sigmoid(m + a); o.label = 'o'
        q = sigmoid(o * 3); q.label = 'q'
        q.backward()
    """)
    report = diagnose(path)
    found = {(f.kind, f.label, f.line) for f in report.findings}
    assert found == {("wrong-derivative", "q", line_of(path, "# BUG1")),
                     ("wrong-derivative", "m", line_of(path, "# BUG2"))}
    (f,) = [f for f in report.findings if f.label == "m"]
    t = report.trace
    b = t.find("b")[0]
    event = t.event(f.step)
    m_grad = t.replay.final_grad[f.node]
    added = sum(w.delta for w in event.writes if w.node == b)
    assert added == pytest.approx(0.5 * m_grad)  # a * m.grad: the planted bug
    # d(abc)/db = a*c = 1.0, so it should have added 1.0 * m.grad
    assert f"should have added {1.0 * m_grad:.6g}" in f.message


def test_overwrite_with_fan_out_is_one_finding_not_two(tmp_path):
    path = write(tmp_path, "fanout.py", """
        '''`=` where the input is used twice: the numbers are wrong too'''
        from engine import Value
        def square(x):
            out = Value(x.data**2, (x,), 'sq')
            def _backward():
                x.grad = 2 * x.data * out.grad  # BUG
            out._backward = _backward
            return out
        a = Value(3.0, label='a')
        s = square(a); s.label = 's'
        L = s + a * 4; L.label = 'L'
        L.backward()
    """)
    report = diagnose(path)
    assert [(f.kind, f.label, f.line) for f in report.findings] == [
        ("overwrite", "s", line_of(path, "# BUG"))]
    t = report.trace
    a = t.find("a")[0]
    assert t.replay.final_grad[a] != pytest.approx(2 * 3.0 + 4)  # the bug really lost 4


def test_probe_leaves_the_recording_unchanged():
    for name in ["foreign_write", "overwrite", "neuron_exp"]:
        path = BUGS / f"{name}.py" if name != "neuron_exp" else SCENARIOS / "neuron_exp.py"
        plain = record(path)
        probed = record(path, before_backward=OverwriteCheck())
        assert list(plain.replay.final_grad) == list(probed.replay.final_grad)
        assert list(plain.replay.final_data) == list(probed.replay.final_data)
        assert len(plain) == len(probed) and plain.output == probed.output


# -- errors and the command line -------------------------------------------------------

def test_scenario_that_raises_is_checked_up_to_the_error(tmp_path, capsys):
    path = write(tmp_path, "raises.py", """
        '''`=` in a tanh, then a crash'''
        import math
        from engine import Value
        def tanh(x):
            t = math.tanh(x.data)
            out = Value(t, (x,), 'tanh')
            def _backward():
                x.grad = (1 - t**2) * out.grad  # BUG
            out._backward = _backward
            return out
        a = Value(0.3, label='a')
        o = tanh(a * 2); o.label = 'o'
        o.backward()
        z = 1 / 0
    """)
    report = diagnose(path)
    assert report.error is not None and report.error.type == "ZeroDivisionError"
    assert [(f.kind, f.label, f.line) for f in report.findings] == [
        ("overwrite", "o", line_of(path, "# BUG"))]
    assert main([str(path), "--check"]) == 1
    assert "ZeroDivisionError" in capsys.readouterr().err


def test_clean_scenario_that_raises_exits_1(tmp_path, capsys):
    path = write(tmp_path, "crash.py", """
        from engine import Value
        a = Value(2.0); b = a * a; b.backward()
        raise RuntimeError("boom")
    """)
    report = diagnose(path)
    assert report.findings == [] and not report.clean
    assert main([str(path), "--check"]) == 1


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cli_exits_1_on_each_bug(name, capsys):
    assert main([str(BUGS / f"{name}.py"), "--check"]) == 1
    out = capsys.readouterr().out
    assert EXPECTED[name][0] in out and "1 problem found" in out


@pytest.mark.parametrize("name", CLEAN)
def test_cli_exits_0_on_clean_scenarios(name, capsys):
    assert main([str(SCENARIOS / f"{name}.py"), "--check"]) == 0
    assert "no problems found" in capsys.readouterr().out


def test_cli_cannot_run(tmp_path, capsys):
    assert main([str(tmp_path / "missing.py"), "--check"]) == 2
    bad = write(tmp_path, "bad.py", "x = (\n")
    assert main([str(bad), "--check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mgtui: ") and "Traceback" not in err
    with pytest.raises(ScenarioLoadError):
        diagnose(tmp_path / "missing.py")


def test_installed_command_and_sample():
    done = subprocess.run([str(Path(sys.executable).parent / "mgtui"),
                           str(BUGS / "topo_order.py"), "--check", "--sample", "1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "topo-order" in done.stdout
    assert "Traceback" not in done.stderr


def test_progress_is_reported():
    seen = []
    diagnose(SCENARIOS / "mlp.py", sample=10, on_progress=lambda d, t, p: seen.append(p))
    assert "recording" in seen and "numerical check" in seen


def test_doctor_does_not_import_textual():
    code = ("import sys; sys.modules['textual'] = None; import mgtui.doctor; "
            "print('textual' in sys.modules and sys.modules['textual'] is not None)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr


def test_doctor_leaves_presentation_to_the_edge():
    """No rich, and none of the command line, the app or the report, behind the doctor."""
    code = ("import sys; sys.modules['textual'] = sys.modules['rich'] = None; "
            "import mgtui.doctor; "
            "print(sorted(m for m in ('mgtui.cli', 'mgtui.tui.app', 'mgtui.tui.report') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
