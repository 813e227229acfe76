"""PyTorch scenarios (issue 21): the lecture's neuron recorded like a micrograd one, its
gradients the lecture's and bit-identical to torch run without mgtui, custom autograd
Functions checked by the doctor and by `mgtui.check`, and mgtui without torch."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

import mgtui  # noqa: E402
from mgtui.doctor import diagnose  # noqa: E402
from mgtui.run.runner import run  # noqa: E402
from mgtui.trace import EventKind  # noqa: E402

from tests.conftest import ROOT, SCENARIOS  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_env")
LECTURE = {"x1": -1.5, "w1": 1.0, "x2": 0.5, "w2": 0.0, "b": 0.5, "n": 0.5, "o": 1.0}


def plain_output(path) -> dict[str, float]:
    """The scenario run by Python alone (no mgtui): the `name value` lines it prints."""
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                         check=True, cwd=path.parent).stdout
    return {k: float(v) for k, v in (line.split() for line in out.splitlines()
                                     if len(line.split()) == 2)}


@pytest.fixture(scope="module")
def neuron():
    return run(SCENARIOS / "torch_neuron.py").trace


def by_label(trace) -> dict[str, int]:
    return {trace.label(n): n for n in range(trace.node_count)}


def test_the_torch_neuron_is_the_lectures_graph(neuron):
    t = neuron
    assert t.error is None
    assert t.node_count == 10  # 5 leaves, 5 ops: the micrograd neuron's count
    ids = by_label(t)
    assert [t.label(n) for n in range(5)] == ["x1", "x2", "w1", "w2", "b"]
    assert [t.line(ids[x]) for x in ("x1", "x2", "w1", "w2", "b")] == [21, 22, 23, 24, 25]
    assert t.op(ids["o"]) == "tanh" and t.children(ids["o"]) == (ids["n"],)
    assert t.op(ids["n"]) == "+" and ids["b"] in t.children(ids["n"])
    assert sorted(t.op(n) for n in range(t.node_count) if t.op(n)) == ["*", "*", "+", "+", "tanh"]
    assert t.line(ids["o"]) == 27 and t.node_data[ids["o"]] == pytest.approx(0.7071, abs=1e-4)


def test_the_final_gradients_are_the_lectures_and_torchs_own(neuron):
    t = neuron
    ids = by_label(t)
    for name, grad in LECTURE.items():
        assert t.replay.final_grad[ids[name]] == pytest.approx(grad, abs=1e-6), name
    plain = plain_output(SCENARIOS / "torch_neuron.py")  # torch without mgtui
    for name in ("x1", "w1", "x2", "w2"):
        assert t.replay.final_grad[ids[name]] == plain[name], name  # bit for bit


def test_each_autograd_node_is_a_step_in_the_engines_order(neuron):
    t = neuron
    backward = [p for p in t.passes if p.kind == "backward"][0]
    calls = t.backward_calls(backward)
    names = [t.closure_of(i).name for i in calls]
    # the order torch's engine runs them in, recorded independently by hooks below
    o = _plain_neuron()
    order: list[str] = []
    handles, todo, seen = [], [o.grad_fn], set()
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        handles.append(fn.register_prehook(lambda g, fn=fn: order.append(type(fn).__name__)))
        todo += [f for f, _ in fn.next_functions]
    o.backward()
    assert names == order
    assert names.count("AccumulateGrad") == 5
    # the seed is a grad event, and every write is a += whose sum is the final grad
    seed = backward.start
    assert t.change(seed) == (0.0, 1.0)
    totals: dict[int, float] = {}
    for i in calls:
        for w in t.writes(i):
            assert w.before == totals.get(w.node, 0.0)
            totals[w.node] = w.after
    ids = by_label(t)
    assert totals[ids["x1"]] == t.replay.final_grad[ids["x1"]]


def _plain_neuron():
    vals = [2.0, 0.0, -3.0, 1.0, 6.8813735870195432]
    x1, x2, w1, w2, b = (torch.Tensor([v]).double().requires_grad_() for v in vals)
    return torch.tanh(x1 * w1 + x2 * w2 + b)


def test_print_and_json_show_the_lectures_gradients():
    cmd = [sys.executable, "-m", "mgtui.cli", str(SCENARIOS / "torch_neuron.py")]
    printed = subprocess.run(cmd + ["--print"], capture_output=True, text=True, cwd=ROOT).stdout
    assert "backward: TanhBackward0 of o  (tanh)" in printed
    assert "n.grad: 0.0 → 0.5 (+0.5)" in printed
    assert "x1.grad: 0.0 → -1.5 (-1.5)" in printed and "w1.grad: 0.0 → 1.0 (+1.0)" in printed
    assert "x2.grad: 0.0 → 0.5 (+0.5)" in printed and "w2.grad: 0.0 → 0.0 (+0.0)" in printed
    assert "backward: AccumulateGrad of x1" in printed
    out = subprocess.run(cmd + ["--export", "json"], capture_output=True, text=True,
                         cwd=ROOT).stdout
    nodes = {n["label"]: n for n in json.loads(out)["nodes"]}
    for name in ("x1", "w1", "x2", "w2"):
        assert nodes[name]["final_grad"] == pytest.approx(LECTURE[name], abs=1e-6)


def test_parameters_are_named_by_their_module_path(write_scenario):
    path = write_scenario("lin", '''
        """A linear layer"""
        import torch
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(1, 1))
        x = torch.tensor([[0.5]])
        loss = model(x).sum()
        loss.backward()
        print("w", model[0].weight.grad.item())
        print("b", model[0].bias.grad.item())
    ''')
    t = run(path).trace
    ids = by_label(t)
    assert {"0.weight", "0.bias", "loss"} <= set(ids)
    plain = plain_output(path)
    assert t.replay.final_grad[ids["0.weight"]] == plain["w"] == 0.5
    assert t.replay.final_grad[ids["0.bias"]] == plain["b"] == 1.0


def test_torch_autograd_grad_is_said_not_to_be_recorded(write_scenario):
    """`torch.autograd.grad` runs a backward pass the recording does not follow: the trace
    says so (once for each call the script made), where a plain `backward()` is silent;
    and the script's own results are its own."""
    path = write_scenario("grads", '''
        import torch
        x = torch.tensor([2.0], requires_grad=True)
        y = torch.tanh(x * -3.0)
        for _ in range(2):
            (g,) = torch.autograd.grad(y.sum(), (x,), retain_graph=True)
        print("g", g.item())
    ''')
    t = run(path).trace
    note = t.arrays.unrecorded_note()
    assert note.startswith("torch.autograd.grad ran 2 times: the backward pass it runs is "
                           "not recorded"), note
    assert "values of type" not in note
    plain = plain_output(path)
    assert plain["g"] == pytest.approx(-3.0 * (1 - math.tanh(-6.0) ** 2), rel=1e-3)  # float32
    assert not t.events_of(EventKind.BACKWARD)  # (and no backward step made up)
    x = torch.tensor([2.0], requires_grad=True)
    with mgtui.record() as r:
        (g,) = torch.autograd.grad(torch.tanh(x * 2).sum(), (x,))
    assert r.trace.arrays.unrecorded_note().startswith("torch.autograd.grad ran once")
    with mgtui.record() as r:
        torch.tanh(x * 2).sum().backward()
    assert r.trace.arrays.unrecorded_note() == ""


# -- custom Functions, checked ------------------------------------------------------------


def test_the_doctor_finds_a_wrong_function_backward_at_its_line():
    report = diagnose(SCENARIOS / "bugs" / "torch_function.py")
    assert len(report.findings) == 1
    f = report.findings[0]
    assert f.op == "Tanh" and f.kind == "wrong-gradient"
    assert f.line == 25 and "return (1 - o) * grad_o" in f.text
    assert f.recorded == pytest.approx(1 - 0.70710678, abs=1e-6)  # what it returned
    assert f.numerical == pytest.approx(0.5, abs=1e-6)  # 1 - o², by finite differences
    assert "∂L/∂n[0]" in f.message and "backward pass 1" in f.message
    assert report.trace.closure_of(f.step).name == "backward"


def test_the_doctor_finds_nothing_in_the_correct_twin():
    report = diagnose(SCENARIOS / "torch_function.py")
    assert report.findings == []
    assert report.checked_calls == 1 and report.checked_passes
    assert any("custom Functions: Tanh" in n for n in report.notes)
    from mgtui.tui.report import format_report

    text = format_report(report)
    assert "checked: each custom autograd Function's backward (built-in torch ops are " \
        "trusted)" in text and "every step of every pass" not in text


SWISH_THREE_STEPS = '''
import torch


class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        return g * (s + x * s)  # BUG: x * s * (1 - s)


torch.manual_seed(0)
X = torch.randn(8, 3)
W = torch.randn(3, 4, requires_grad=True)
for step in range(3):
    loss = (Swish.apply(X @ W) ** 2).mean()
    W.grad = None
    loss.backward()
    with torch.no_grad():
        W -= 0.1 * W.grad
'''


@pytest.mark.parametrize("asked, numbers", [("all", [1, 2, 3]), ([2, 3], [2, 3])])
def test_passes_asked_are_each_checked_on_torch(tmp_path, asked, numbers):
    """`--passes all` on a torch scenario checks the custom Function in every backward
    pass, though it was found wrong in the first (before issue 33: pass 1 of 3 only,
    reported as sampled)."""
    from mgtui.tui.report import numerically

    path = tmp_path / "swish.py"
    path.write_text(SWISH_THREE_STEPS)
    report = diagnose(path, passes=asked)
    assert [report.backward_number(p) for p in report.checked_passes] == numbers
    assert report.checked_calls == len(numbers) and report.passes_asked == asked
    assert len(report.findings) == 1 and report.findings[0].op == "Swish"
    word = "all, as asked" if asked == "all" else "as asked"
    assert f"{', '.join(map(str, numbers))} of 3 ({word};" in numerically(report)


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return scale * x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        wrong = x.clone()
        wrong[2] = 0.0  # element 2 forgotten
        return ctx.scale * 2 * wrong * g, None


class GoodSquare(Square):
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return ctx.scale * 2 * x * g, None


@pytest.mark.parametrize("fn, wrong", [(Square, True), (GoodSquare, False)])
def test_mgtui_check_on_a_function_that_builds_a_torch_graph(fn, wrong):
    import mgtui

    grads = {}

    def build():
        x = torch.tensor([1.5, -2.0, 3.0, 0.25], requires_grad=True)
        y = (fn.apply(x, 0.5) * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum()
        y.backward()
        grads["x"] = x.grad.clone()

    found = mgtui.check(build)
    plain = torch.tensor([1.5, -2.0, 3.0, 0.25], requires_grad=True)
    (fn.apply(plain, 0.5) * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert torch.equal(grads["x"], plain.grad)  # the check changed no gradient
    if wrong:
        (f,) = found
        assert f.op == "Square" and "∂L/∂x[2]" in f.message
        assert f.numerical == pytest.approx(0.5 * 2 * 3.0 * 3.0, rel=1e-6)
        assert f.recorded == 0.0 and "wrong[2]" not in f.text and "return" in f.text
    else:
        assert not found and found.unchecked is None and found.report.checked_calls == 1


class SumAndProduct(torch.autograd.Function):
    """Two outputs, a + b and a * b; `backward` forgets a's share of the product."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a + b, a * b

    @staticmethod
    def backward(ctx, g_sum, g_product):
        a, b = ctx.saved_tensors
        return g_sum, g_sum + a * g_product  # a's is g_sum + b * g_product


class GoodSumAndProduct(SumAndProduct):
    @staticmethod
    def backward(ctx, g_sum, g_product):
        a, b = ctx.saved_tensors
        return g_sum + b * g_product, g_sum + a * g_product


@pytest.mark.parametrize("fn, wrong", [(SumAndProduct, True), (GoodSumAndProduct, False)])
def test_a_function_of_two_outputs_is_checked_on_both(fn, wrong):
    import mgtui

    def build():
        a = torch.tensor([2.0, -1.0], requires_grad=True)
        b = torch.tensor([0.5, 3.0], requires_grad=True)
        total, product = fn.apply(a, b)
        (total.sum() * 2.0 + (product * torch.tensor([1.0, -4.0])).sum()).backward()

    found = mgtui.check(build)
    if wrong:
        (f,) = found
        assert f.op == "SumAndProduct" and "∂L/∂a[0]" in f.message
        # ∂/∂a[0] of 2·(a+b)[0] + 1·(a·b)[0] = 2 + b[0]; the backward gives the sum's 2 only
        assert f.numerical == pytest.approx(2.0 + 0.5, rel=1e-6)
        assert f.recorded == pytest.approx(2.0)
    else:
        assert not found and found.report.checked_calls == 1


# -- without torch -------------------------------------------------------------------------


def test_a_micrograd_scenario_never_imports_torch():
    code = ("import sys; from mgtui.recording.recorder import record; "
            "record(sys.argv[1]); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(SCENARIOS / "neuron.py")],
                         capture_output=True, text=True, cwd=ROOT).stdout
    assert out.strip() == "False"


def test_a_torch_scenario_without_torch_says_how_to_install_it(tmp_path):
    # a `torch` that is not there, as `import torch` finds it without PyTorch installed
    (tmp_path / "torch.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n")
    (tmp_path / "s.py").write_text(textwrap.dedent('''
        """Needs torch"""
        import torch
    '''))
    done = subprocess.run([sys.executable, "-m", "mgtui.cli", str(tmp_path / "s.py"), "--print"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1
    assert "pip install 'mgtui[torch]'" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr


# -- the MLP, with nn.Linear (arrays) --------------------------------------------------------


@pytest.fixture(scope="module")
def mlp():
    return run(SCENARIOS / "torch_mlp.py").trace


def test_the_mlp_is_recorded_with_its_parameters_by_path_and_their_shapes(mlp):
    t = mlp
    ids = by_label(t)
    params = {"lin1.weight": (4, 3), "lin1.bias": (4,), "lin2.weight": (4, 4),
              "lin2.bias": (4,), "lin3.weight": (1, 4)}
    for name, shape in params.items():
        assert t.values.created_value(ids[name]).shape == shape, name
    assert t.node_data[ids["lin3.bias"]] == pytest.approx(0.0263, abs=1e-4)  # one element
    kinds = [p.kind for p in t.passes]
    assert kinds[:4] == ["forward", "backward", "update", "forward"] or \
        kinds[:5] == ["forward", "zero_grad", "backward", "update", "forward"]
    ops = {t.op(n) for n in range(t.node_count)}
    assert {"Addmm", "T", "tanh", "sum", "**2"} <= ops


def test_the_mlps_final_gradients_are_torchs_own_bit_for_bit(mlp, tmp_path):
    dump = tmp_path / "grads.json"
    code = (f"import runpy, json, torch; g = runpy.run_path({str(SCENARIOS / 'torch_mlp.py')!r}, "
            "run_name='__main__'); json.dump({k: p.grad.double().flatten().tolist() "
            f"for k, p in g['model'].named_parameters()}}, open({str(dump)!r}, 'w'))")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    plain = json.loads(dump.read_text())
    ids = by_label(mlp)
    assert len(plain) == 6
    for name, values in plain.items():
        got = mlp.values.final_value(ids[name], True)
        flat = [got] if isinstance(got, float) else list(got.values)
        assert flat == values, name  # float32 grads, read exactly as doubles


def test_each_write_of_a_backward_step_adds_what_the_engine_passed_on(mlp):
    t = mlp
    backward = next(p for p in t.passes if p.kind == "backward")
    steps = t.backward_calls(backward)
    names = [t.closure_of(i).name for i in steps]
    assert names[:3] == ["SumBackward0", "PowBackward0", "SubBackward0"]
    assert names.count("AccumulateGrad") == 6 and names.count("AddmmBackward0") == 3
    ids = by_label(t)
    addmm = next(i for i in steps if t.closure_of(i).name == "AddmmBackward0")
    written = {w.node for w in t.writes(addmm)}
    assert ids["lin3.bias"] in written  # the bias's gradient, passed on by addmm


def test_a_variable_names_what_it_binds_at_every_training_step(mlp):
    t = mlp
    losses = [n for n in range(t.node_count) if t.label(n) == "loss"]
    assert len(losses) == 10  # one per step, as micrograd's namer names them
    assert all(t.op(n) == "sum" for n in losses)
    assert t.node_data[losses[0]] > t.node_data[losses[-1]]  # it learns


def test_a_variable_names_what_a_library_function_made_for_it(write_scenario):
    """`loss = F.cross_entropy(...)`: the tensor `loss` holds is made inside torch's own
    function (its `nll_loss`), under the log-softmax it made first; `logits = model(x)`
    with an `nn.Sequential`: inside torch's modules. Each is named at every step."""
    path = write_scenario("library", '''
        """Made inside torch's functions"""
        import torch
        import torch.nn.functional as F
        from torch import nn
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 3))
        x = torch.randn(5, 3)
        y = torch.tensor([0, 2, 1, 1, 0])
        for k in range(3):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            model.zero_grad()
            loss.backward()
    ''')
    t = run(path).trace
    named = {name: [n for n in range(t.node_count) if t.label(n) == name]
             for name in ("logits", "loss")}
    assert [t.op(n) for n in named["loss"]] == ["NllLoss"] * 3
    assert [t.op(n) for n in named["logits"]] == ["Addmm"] * 3
    softmax = [n for n in range(t.node_count) if t.op(n) == "LogSoftmax"]
    assert len(softmax) == 3 and not any(t.label(n) == "loss" for n in softmax)


def test_an_in_place_op_under_autograd_is_a_node_and_an_update_a_data_write(write_scenario):
    path = write_scenario("inplace", '''
        """In place"""
        import torch
        a = torch.tensor([2.0], requires_grad=True)
        h = a * 3
        h.add_(1)
        h.backward()
        with torch.no_grad():
            a -= 0.5 * a.grad
        print("a", a.item())
    ''')
    t = run(path).trace
    ids = by_label(t)
    assert t.op(ids["h"]) == "Add" and t.node_data[ids["h"]] == 7.0  # h.add_(1), a node
    assert t.replay.final_grad[ids["a"]] == 3.0
    data = [i for i in range(len(t)) if t.kind(i).value == "data"]
    assert len(data) == 1 and t.change(data[0]) == (2.0, 0.5)  # a -= 0.5 * a.grad
    assert t.replay.final_data[ids["a"]] == plain_output(path)["a"] == 0.5


def test_a_recorded_torch_block_is_not_misread_by_the_micrograd_checks():
    import mgtui

    with mgtui.record() as r:
        x = torch.tensor([1.5, -2.0], requires_grad=True)
        (x * x).sum().backward()
    found = mgtui.check(r)
    assert not found  # (the micrograd checks took the array x for a nan before)
    assert found.unchecked is not None and any("recorded block" in n for n in found.notes)
    assert r.trace.node_count == 3
