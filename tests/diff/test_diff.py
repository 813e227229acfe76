"""`mgtui diff A B`: two runs recorded (or read from saved traces), their graphs aligned,
and the first node whose value or gradient differs named, with the line on each side.

The buggy engines (tests/data/diff/) are the lecture's Value written out by hand
(`mine_value.py`), one op replaced by a buggy one in each; their twins are the project's engine and PyPI micrograd, an independent
implementation. The expected gradients are the lecture's (o = tanh(n) = 1/√2, so
n.grad = 1 - o² = 0.5; x2.grad = w2 × n.grad = 0.5) and, for the fan-out
f = a*b + a, df/da = b + 1 = 4."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mgtui.cli import main
from mgtui.diff import Tolerance, compare
from mgtui.diff.passes import op_kind

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "diff"
ENGINE = ROOT / "engine" / "value.py"


def line_of(path: Path, text: str) -> int:
    """The number of the one line of `path` that holds `text`."""
    found = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(found) == 1, (path, text, found)
    return found[0]


def diff(capsys, *args):
    code = main(["diff", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def diff_json(capsys, a, b, *more):
    code, out, err = diff(capsys, a, b, "--json", *more)
    return code, json.loads(out), err


def test_a_wrong_local_derivative_is_named_at_the_op_and_the_line_on_each_side(capsys):
    code, doc, err = diff_json(capsys, DATA / "wrong_tanh.py", "neuron")
    assert code == 1 and err == ""
    d = doc["difference"]
    assert d["kind"] == "grad" and d["backward_pass"] == 1
    a, b = d["a"], d["b"]
    # the first gradient that is wrong, in the order the backward pass computed them, is
    # n's: o's tanh wrote it (not x1's or w1's, which inherit the error later)
    assert (a["label"], a["writer_label"], a["writer_op"]) == ("n", "o", "tanh")
    assert (b["label"], b["writer_label"], b["writer_op"]) == ("n", "o", "tanh")
    o = 1 / math.sqrt(2)
    assert a["value"] == pytest.approx(1 - o)  # the bug's 1 - t
    assert b["value"] == pytest.approx(1 - o * o)  # the lecture's 0.5
    bug = line_of(DATA / "wrong_tanh.py", "# BUG")
    assert a["place"].endswith(f"wrong_tanh.py:{bug}")
    assert b["place"] == f"engine/value.py:{line_of(ENGINE, 'self.grad += (1 - t**2) * out.grad')}"
    assert "(1 - t) * out.grad" in a["code"] and "(1 - t**2) * out.grad" in b["code"]
    assert doc["agree"] is False and doc["tolerance"] == {"rtol": 1e-4, "atol": 1e-6}


def test_the_headline_in_print(capsys):
    code, out, _ = diff(capsys, DATA / "wrong_tanh.py", DATA / "mine_neuron.py", "--print")
    bug = line_of(DATA / "wrong_tanh.py", "# BUG")
    right = line_of(DATA / "mine_value.py", "(1 - t**2) * out.grad")
    assert code == 1
    assert (f"`o`'s tanh: your `_backward` at tests/data/diff/wrong_tanh.py:{bug} gives "
            f"n.grad 0.2929, mine_neuron.py gives 0.5 at tests/data/diff/mine_value.py:"
            f"{right}") in out
    assert "tolerance: |a − b| ≤ 1e-06 + 0.0001·max(|a|, |b|)" in out


def test_a_missing_out_grad_factor_is_named_where_out_grad_is_not_1(capsys):
    # o.grad is 1, so o's tanh is right even without the factor; the `*` nodes get 0.5
    code, doc, _ = diff_json(capsys, DATA / "no_out_grad.py", "neuron")
    assert code == 1
    a, b = doc["difference"]["a"], doc["difference"]["b"]
    path = DATA / "no_out_grad.py"
    # the backward pass walks x2*w2 before x1*w1 (as the engine's does): x2 is first wrong
    assert (a["label"], a["writer_label"], a["writer_op"]) == ("x2", "x2*w2", "*")
    assert a["value"] == pytest.approx(1.0)  # w2 alone
    assert b["value"] == pytest.approx(0.5)  # w2 × n.grad
    assert a["place"].endswith(f"no_out_grad.py:{line_of(path, 'self.grad += other.data  # BUG')}")
    assert b["place"] == f"engine/value.py:{line_of(ENGINE, 'self.grad += other.data * out.grad')}"


def test_an_overwrite_is_named_against_pypi_micrograd(capsys):
    import micrograd.engine

    code, doc, _ = diff_json(capsys, DATA / "overwrite_fanout.py", DATA / "fanout_micrograd.py")
    assert code == 1
    d = doc["difference"]
    a, b = d["a"], d["b"]
    assert (a["label"], a["writer_label"], a["writer_op"]) == ("a", "c", "*")
    assert (b["label"], b["writer_label"]) == ("a", "c")
    assert b["value"] == pytest.approx(3.0)  # c = a*b adds b = 3 to a.grad
    path = DATA / "overwrite_fanout.py"
    assert a["place"].endswith(f"overwrite_fanout.py:{line_of(path, 'self.grad = other')}")
    mg = Path(micrograd.engine.__file__)
    assert b["place"].endswith(f"engine.py:{line_of(mg, 'self.grad += other.data * out.grad')}")
    assert "`=` where `+=` belongs" in d["hint"] and "the 1 already there was lost" in d["hint"]


@pytest.mark.parametrize("a, b", [
    (DATA / "mine_fanout.py", DATA / "fanout_micrograd.py"),
    (DATA / "mine_neuron.py", "neuron"),
    ("neuron", DATA / "mine_neuron.py"),
])
def test_a_correct_engine_agrees_with_its_twin(capsys, a, b):
    code, doc, err = diff_json(capsys, a, b)
    assert (code, doc["agree"], doc["difference"], err) == (0, True, None, "")
    assert doc["backward_passes_compared"] == 1
    assert doc["a"]["unaligned"] == [] and doc["b"]["unaligned"] == []
    code, out, _ = diff(capsys, a, b, "--print")
    assert code == 0 and "they agree: 1 backward pass" in out


def test_graphs_of_other_shapes_align_what_they_can_and_say_what_they_could_not(capsys):
    # tanh built from exp: o = (e - 1)/(e + 1) has eight nodes the plain tanh has not
    code, doc, _ = diff_json(capsys, "neuron_exp", "neuron")
    assert code == 0 and doc["leaves_compared"] == 5
    extra = {(n["label"], n["op"]) for n in doc["a"]["unaligned"]}
    assert ("e", "exp") in extra and len(extra) == 8 and doc["b"]["unaligned"] == []
    code, out, _ = diff(capsys, "neuron", "neuron_exp", "--print")
    assert code == 0 and "not aligned in B (no partner in the other graph, not compared)" in out


def test_two_runs_of_one_engine_before_and_after_a_change(capsys, tmp_path):
    after = tmp_path / "mlp_after.py"
    source = (ROOT / "scenarios" / "mlp.py").read_text()
    old = "        p.data += -0.05 * p.grad\n"
    assert source.count(old) == 1
    after.write_text(source.replace(old, old.replace("0.05", "0.06")))
    code, doc, _ = diff_json(capsys, "mlp", after)
    d = doc["difference"]
    assert code == 1 and d["kind"] == "value"
    # the forward and backward of step 1 agree; the update differs, so pass 2's inputs do
    assert d["backward_pass"] == 2 and doc["backward_passes_compared"] == 2
    assert d["a"]["place"].endswith(f"mlp.py:{line_of(after, '        p.data +=')}")
    assert "-0.06 * p.grad" in d["b"]["code"] and d["a"]["label"].startswith("n.layers[0]")
    code, doc, _ = diff_json(capsys, "mlp", "mlp")
    assert code == 0 and doc["backward_passes_compared"] == 20


def test_two_saved_traces_and_one_of_each(capsys, tmp_path):
    mine, ref = tmp_path / "mine.mgtrace", tmp_path / "ref.json"
    assert main([str(DATA / "wrong_tanh.py"), "--print", "--save", str(mine)]) == 0
    capsys.readouterr()
    assert main(["neuron", "--export", "json"]) == 0
    ref.write_text(capsys.readouterr().out)
    bug = line_of(DATA / "wrong_tanh.py", "# BUG")
    for a, b in ((mine, ref), (mine, "neuron"), (DATA / "wrong_tanh.py", ref)):
        code, doc, _ = diff_json(capsys, a, b)
        d = doc["difference"]
        assert code == 1 and (d["a"]["label"], d["a"]["writer_label"]) == ("n", "o")
        assert d["a"]["place"].endswith(f"wrong_tanh.py:{bug}")
        assert d["b"]["value"] == pytest.approx(0.5)
    assert diff_json(capsys, ref, ref)[0] == 0


@pytest.mark.parametrize("args, message", [
    (["nope.py", "neuron"], "nope.py: no such file"),
    (["neuron", "scenarios"], "scenarios is a directory"),
    (["neuron", "broken.py"], "SyntaxError"),
    (["neuron", "bad.json"], "bad.json"),
    (["neuron", "nobackward.py"], "no backward pass was recorded"),
    (["neuron", "neuron", "--rtol", "-1"], "a tolerance is a number >= 0"),
    (["neuron"], "the following arguments are required: B"),
])
def test_bad_input_is_exit_2_with_a_message_and_no_traceback(capsys, tmp_path, monkeypatch,
                                                                args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "broken.py").write_text("x = (\n")
    (tmp_path / "bad.json").write_text('{"format": "mgtui-trace", "version": 1}')
    (tmp_path / "nobackward.py").write_text("from engine import Value\na = Value(2.0) * 3\n")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    try:
        code = main(["diff", *args, "--json"])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and message in err and "Traceback" not in err


def test_the_app_needs_a_terminal_and_says_how_to_do_without(capsys):
    code, out, err = diff(capsys, "neuron", "neuron")
    assert code == 2 and "--print or --json" in err


def test_the_comparison_as_a_function():
    c = compare(str(DATA / "wrong_tanh.py"), "neuron", tolerance=Tolerance(rtol=0.5, atol=0.2))
    assert c.agree  # 0.2929 and 0.5 are within 0.2 + 0.5 × 0.5
    assert "they agree" in __import__("mgtui.tui.diff_report", fromlist=["x"]).headline(c)


@pytest.mark.parametrize("op, kind", [("MulBackward0", "*"), ("*", "*"), ("AddBackward0", "+"),
                                      ("**2", "**"), ("PowBackward0", "**"),
                                      ("ReLU", "relu"), ("TanhBackward0", "tanh")])
def test_ops_are_matched_by_what_they_compute(op, kind):
    assert op_kind(op) == kind


@pytest.fixture
def wrong_tanh_app(monkeypatch, tmp_path, clean_env):
    """The app of `mgtui diff wrong_tanh.py neuron`, and the comparison it shows."""
    from mgtui.tui.app import diff_app

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    c = compare(str(DATA / "wrong_tanh.py"), "neuron")
    return diff_app(c), c


async def opened(app, pilot):
    for _ in range(200):
        await pilot.pause(0.02)
        if app.debugger.trace is not None and not app.loading:
            break
    return app.debugger


async def test_the_app_opens_at_the_difference_with_both_sides_shown(wrong_tanh_app):
    from textual.widgets import Static

    app, c = wrong_tanh_app
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await opened(app, pilot)
        state = screen.state
        trace = screen.trace
        # at o's `_backward` call, the step that wrote n.grad 0.2929, with n selected
        assert state.event == c.difference.a.step and trace.label(trace.event_node(state.event)) == "o"
        assert trace.label(screen.selected) == "n" and state.position.tab == "source"
        pane = str(screen.query_one("#comparison", Static).render())
        bug = line_of(DATA / "wrong_tanh.py", "# BUG")
        assert f"wrong_tanh.py:{bug}" in pane and "n.grad 0.2929" in pane
        assert "engine/value.py:" in pane and "n.grad 0.5" in pane
        assert "tolerance |a − b| ≤ 1e-06" in pane
        await pilot.press("n")  # and it steps on from there, as ever
        assert screen.state.event == c.difference.a.step + 1


SQUARED = "loss = sum((yout - ygt)**2 for ygt, yout in zip(ys, ypred))"
WRONG_TANH = '''
import math
from engine import Value

def tanh(self):
    t = math.tanh(self.data)
    out = Value(t, (self,), 'tanh')
    def _backward():
        self.grad += (1 - t) * out.grad  # BUG
    out._backward = _backward
    return out

Value.tanh = tanh
'''


def mlp_variant(tmp_path, name, old="", new="", after_imports=""):
    source = (ROOT / "scenarios" / "mlp.py").read_text()
    if old:
        assert source.count(old) == 1
        source = source.replace(old, new)
    imports = "from engine.nn import MLP\n"
    source = source.replace(imports, imports + after_imports)
    path = tmp_path / name
    path.write_text(source)
    return path


def test_the_mlp_agrees_with_a_twin_whose_graph_has_another_shape(capsys, tmp_path):
    # (y - t)*(y - t) makes y - t twice (each with a constant of its own) and a `*` where
    # the other has a `**2`: the copies are one quantity, their grads summed
    twin = mlp_variant(tmp_path, "twin.py", SQUARED,
                       SQUARED.replace("(yout - ygt)**2", "(yout - ygt)*(yout - ygt)"))
    code, doc, _ = diff_json(capsys, "mlp", twin)
    assert (code, doc["difference"]) == (0, None)
    assert doc["backward_passes_compared"] == 20 and doc["leaves_compared"] == 41


def test_a_wrong_tanh_in_the_mlp_is_named_at_the_first_tanh_the_backward_pass_ran(capsys,
                                                                                   tmp_path):
    buggy = mlp_variant(tmp_path, "buggy.py", after_imports=WRONG_TANH)
    code, doc, _ = diff_json(capsys, buggy, "mlp")
    d = doc["difference"]
    assert code == 1 and d["kind"] == "grad" and d["backward_pass"] == 1
    assert d["a"]["writer_op"] == d["b"]["writer_op"] == "tanh"
    assert d["a"]["writer"] == d["b"]["writer"]  # (the same graph: ids alike)
    assert d["a"]["place"].endswith(f"buggy.py:{line_of(buggy, '# BUG')}")
    assert d["b"]["place"] == f"engine/value.py:{line_of(ENGINE, '(1 - t**2) * out.grad')}"
    # the call is the first tanh `_backward` of the pass: every grad before it agreed
    from mgtui.diff.sides import open_sides

    a, _ = open_sides(str(buggy), "neuron")
    t = a.trace
    first = next(p for p in t.passes if p.kind == "backward")
    tanh_calls = [i for i in t.backward_calls(first) if t.op(t.event_node(i)) == "tanh"]
    assert d["a"]["step"] == tanh_calls[0]


def test_a_missing_zero_grad_is_traced_to_before_the_pass(capsys, tmp_path):
    forgets = mlp_variant(tmp_path, "forgets.py", "    n.zero_grad()\n", "")
    code, doc, _ = diff_json(capsys, forgets, "mlp")
    d = doc["difference"]
    # step 1 agrees (its grads started at 0 anyway); in step 2 a parameter's grad is off
    # though every `_backward` call added the same to it as in the reference
    assert code == 1 and d["kind"] == "grad" and d["backward_pass"] == 2
    assert d["a"]["label"].startswith("n.layers[") and "missing zero_grad" in d["message"]
    # the reference's zero_grad is where its grad was set outside any `_backward`
    assert d["b"]["code"] == "n.zero_grad()" and d["a"]["place"] is None


def test_a_run_that_raised_is_not_called_in_agreement(capsys, tmp_path):
    raises = tmp_path / "raises.py"
    raises.write_text((DATA / "mine_neuron.py").read_text() + "raise ValueError('late')\n")
    import shutil

    shutil.copy(DATA / "mine_value.py", tmp_path)
    code, doc, _ = diff_json(capsys, raises, "neuron")
    assert code == 1 and doc["difference"] is None and doc["agree"] is False
    assert "ValueError" in doc["a"]["problem"]
    code, out, _ = diff(capsys, raises, "neuron", "--print")
    assert code == 1 and "not both runs are whole" in out and "note: " in out


def test_the_session_goes_to_the_difference():
    from mgtui.session import Session

    c = compare(str(DATA / "wrong_tanh.py"), "neuron")
    d = c.difference
    session = Session(c.a.trace)
    state = session.goto_difference(d.a.step, d.a.node, d.message)
    assert state.event == d.a.step and state.position.node == d.a.node
    assert state.position.tab == "source" and state.notice.text == d.message


def test_scenario_text_reaches_the_terminal_inert(capsys, tmp_path):
    hostile = "\x1b[2J\x1b]0;pwned\x07[bold red]x[/]"
    a = tmp_path / "a.py"
    a.write_text("from engine import Value\n"
                 "x = Value(2.0, label='x')\n"
                 f"y = x * x; y.label = {hostile!r}; y.backward()\n")
    b = tmp_path / "b.py"
    b.write_text(a.read_text().replace("x * x", "x * x * 1.5"))
    code, out, err = diff(capsys, a, b, "--print")
    # the outputs differ (4 and 6), whatever else aligned
    assert "is 4 in yours" in out and "and 6 in b.py" in out
    assert code == 1 and "\x1b" not in out + err and "\x07" not in out + err
    assert "[bold red]x[/]" in out  # shown as it is, never read as markup


def test_runs_of_different_lengths_and_graphs_that_share_nothing(capsys, tmp_path):
    longer = mlp_variant(tmp_path, "longer.py", "for k in range(20):", "for k in range(21):")
    code, doc, _ = diff_json(capsys, longer, "mlp")
    d = doc["difference"]
    assert code == 1 and d["kind"] == "passes" and doc["backward_passes_compared"] == 20
    assert "ran 21 backward passes" in d["message"] and "the first 20 agree" in d["message"]
    other = tmp_path / "other.py"
    other.write_text("from engine import Value\np = Value(5.0, label='p')\n"
                     "q = p * p; q.label = 'q'; q.backward()\n")
    code, doc, _ = diff_json(capsys, "neuron", other)  # no input alike, by name or value
    assert code == 1 and doc["difference"]["kind"] == "shape"
    assert "could not be aligned" in doc["difference"]["message"]


async def test_the_palette_goes_back_to_the_difference(wrong_tanh_app):
    app, c = wrong_tanh_app
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await opened(app, pilot)
        await pilot.press("g")  # to the start
        assert screen.state.step == 0
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        for ch in "first difference":
            await pilot.press("space" if ch == " " else ch)
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert screen.state.event == c.difference.a.step
