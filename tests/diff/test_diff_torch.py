"""`mgtui diff` against PyTorch, and on arrays: the issue's headline (the lecture's neuron
by hand with a bug, against `scenarios/torch_neuron.py`), each bug against its torch
twin, a correct engine in agreement with torch; arrays compared element by element
(torch's nn.Linear MLP before and after a change) and by shape (a tensor engine's bias
gradient not summed over its broadcast axis).

Expected numbers are the lecture's: n.grad = 1 - o² = 0.5, x2.grad = w2 × n.grad = 0.5;
for the fan-out f = a*b + a, the `*` adds b = 3 to a.grad."""

from __future__ import annotations

import pytest

from tests.diff.test_diff import DATA, ROOT, diff, diff_json, line_of

torch = pytest.importorskip("torch")


def test_the_headline_your_backward_against_torch(capsys):
    code, out, err = diff(capsys, DATA / "wrong_tanh.py", "torch_neuron", "--print")
    bug = line_of(DATA / "wrong_tanh.py", "# BUG")
    assert code == 1 and err == ""
    assert (f"`o`'s tanh: your `_backward` at tests/data/diff/wrong_tanh.py:{bug} gives "
            "n.grad 0.2929, torch gives 0.5 (TanhBackward0)") in out


@pytest.mark.parametrize("mine, bug, node, writer, op, ours, torchs", [
    ("wrong_tanh.py", "# BUG", "n", "o", "tanh", 0.29289, 0.5),
    ("no_out_grad.py", "self.grad += other.data  # BUG", "x2", "x2*w2", "*", 1.0, 0.5),
])
def test_each_bug_is_named_against_the_torch_neuron(capsys, mine, bug, node, writer, op,
                                                    ours, torchs):
    code, doc, _ = diff_json(capsys, DATA / mine, "torch_neuron")
    a, b = doc["difference"]["a"], doc["difference"]["b"]
    assert code == 1 and (a["label"], a["writer_label"], a["writer_op"]) == (node, writer, op)
    assert a["place"].endswith(f"{mine}:{line_of(DATA / mine, bug)}")
    assert b["label"] == node and b["place"] is None and b["by"].endswith("Backward0")
    assert a["value"] == pytest.approx(ours, abs=1e-4)
    assert b["value"] == pytest.approx(torchs, rel=1e-6)


def test_an_overwrite_is_named_against_torch(capsys):
    code, doc, _ = diff_json(capsys, DATA / "overwrite_fanout.py", DATA / "fanout_torch.py")
    d = doc["difference"]
    assert code == 1 and (d["a"]["label"], d["a"]["writer_label"]) == ("a", "c")
    assert d["b"]["by"] == "MulBackward0" and d["b"]["value"] == pytest.approx(3.0)
    assert "`=` where `+=` belongs" in d["hint"]


@pytest.mark.parametrize("mine, twin", [
    ("neuron", "torch_neuron"),
    (DATA / "mine_neuron.py", "torch_neuron"),
    (DATA / "mine_fanout.py", DATA / "fanout_torch.py"),
])
def test_a_correct_engine_agrees_with_torch(capsys, mine, twin):
    code, doc, _ = diff_json(capsys, mine, twin)
    assert (code, doc["difference"]) == (0, None) and doc["leaves_compared"] >= 2


def test_arrays_are_compared_element_by_element(capsys, tmp_path):
    source = (ROOT / "scenarios" / "torch_mlp.py").read_text()
    old = "            p -= 0.05 * p.grad\n"
    assert source.count(old) == 1
    after = tmp_path / "torch_mlp_after.py"
    after.write_text(source.replace(old, old.replace("0.05", "0.06")))
    code, doc, _ = diff_json(capsys, "torch_mlp", "torch_mlp")
    assert code == 0 and doc["backward_passes_compared"] == 10
    code, doc, _ = diff_json(capsys, "torch_mlp", after)
    d = doc["difference"]
    assert code == 1 and d["kind"] == "value" and d["backward_pass"] == 2
    assert d["a"]["label"] == "lin1.weight" and d["a"]["element"] == [0, 0]
    assert d["a"]["shape"] == [4, 3] and d["a"]["value"] != pytest.approx(d["b"]["value"])
    assert "-= 0.06 * p.grad" in d["b"]["code"]


def test_two_torch_scripts_updating_through_data_differ_at_the_update(capsys, tmp_path):
    """makemore's update, `p.data += -lr * p.grad`, with two learning rates: the first
    difference is a parameter's value at that line, and B is called by its file's name
    (both are torch: "in torch" would not say which)."""
    source = (
        "import torch\n"
        "g = torch.Generator().manual_seed(1)\n"
        "W = torch.randn((3, 4), generator=g, requires_grad=True)\n"
        "x = torch.randn((5, 3), generator=g)\n"
        "for k in range(3):\n"
        "    loss = torch.tanh(x @ W).pow(2).mean()\n"
        "    W.grad = None\n"
        "    loss.backward()\n"
        "    W.data += -0.1 * W.grad\n")
    a, b = tmp_path / "mine.py", tmp_path / "theirs.py"
    a.write_text(source)
    b.write_text(source.replace("-0.1 * W.grad", "-0.2 * W.grad"))
    code, out, _ = diff(capsys, a, b, "--print")
    assert code == 1 and "backward pass 2: `W[" in out
    assert "in theirs.py" in out and "in torch" not in out
    assert "mine.py:9" in out and "theirs.py:9" in out  # (the update's line, on each side)


def test_a_tensor_grad_of_the_wrong_shape_is_named_by_its_shapes(capsys):
    code, doc, _ = diff_json(capsys, "bugs/no_broadcast_sum", DATA / "bias_right.py")
    d = doc["difference"]
    assert code == 1 and d["kind"] == "grad" and d["a"]["label"] == "b"
    assert (d["a"]["shape"], d["b"]["shape"]) == ([5, 3], [1, 3])
    assert "a (5, 3) array" in d["message"] and "a (1, 3) array" in d["message"]


def test_a_wrong_custom_function_against_its_correct_twin(capsys):
    bug, right = ROOT / "scenarios" / "bugs" / "torch_function.py", ROOT / "scenarios" / "torch_function.py"
    code, out, _ = diff(capsys, "bugs/torch_function", "torch_function", "--print")
    assert code == 1
    assert (f"your `backward` at scenarios/bugs/torch_function.py:"
            f"{line_of(bug, 'return (1 - o) * grad_o')} gives n.grad 0.2929, torch_function "
            f"gives 0.5 "
            f"at scenarios/torch_function.py:{line_of(right, 'return (1 - o**2) * grad_o')}") in out


def test_the_mlp_agrees_with_its_scalar_torch_twin(capsys):
    # one float64 tensor a parameter, drawn from `random` in the engine's order; torch
    # multiplies by the inputs as numbers, so the engine's constants have no partner
    code, doc, _ = diff_json(capsys, "mlp", DATA / "mlp_torch.py")
    assert (code, doc["difference"]) == (0, None)
    assert doc["backward_passes_compared"] == 20 and doc["leaves_compared"] == 41


def test_one_number_compares_as_a_number_whatever_its_shape():
    """The lecture's bias b = 6.8814 is a float in micrograd, a () array in a numpy
    engine, a (1,) tensor in torch: the same number (before, a shape difference was
    reported, printed as `a () array` on both sides)."""
    from mgtui.diff.values import Tolerance
    from mgtui.trace.arrays import ArrayValue

    tol = Tolerance()
    b = 6.8813735870195432
    zero_d, one = ArrayValue.of([b], ()), ArrayValue.of([b], (1,))
    assert tol.agree(b, zero_d) and tol.agree(zero_d, one) and tol.agree(one, b)
    assert tol.apart(b, ArrayValue.of([b + 1], (1, 1))) == 0  # a different number
    assert tol.apart(one, ArrayValue.of([b, b], (2,))) == -1  # two numbers: shapes differ


def test_a_scalar_engine_against_a_tensor_one_is_not_called_in_agreement(capsys):
    """neuron.py (8 scalar nodes before o) against tensor_neuron.py (x, w, x@w): only b
    and o hold one number on both sides; most of both graphs is never compared, so the
    diff says so and does not exit 0."""
    code, doc, _ = diff_json(capsys, "neuron", "tensor_neuron")
    assert doc["difference"] is None and doc["partial"] is True
    assert (code, doc["agree"]) == (1, False)
    # aligned: b, o, and n (0.8814 on both sides, made from b: an array by its value)
    assert doc["aligned"] == 3
    assert doc["a"]["unaligned_count"] == 7 and doc["b"]["unaligned_count"] == 3
    code, out, _ = diff(capsys, "neuron", "tensor_neuron", "--print")
    assert code == 1 and "A's values are numbers and B's arrays" in out
    assert "they agree where they could be aligned, which is the lesser part" in out
