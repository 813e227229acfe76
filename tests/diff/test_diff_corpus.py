"""`mgtui diff` on pairs written as people write them (issue 33): a numpy Tensor engine
(`tests/corpus/diff_numpy_engine.py`: ops named `matmul`, `sigmoid`, `mean`,
`cross_entropy`, grads as `grad = grad + …`, an `unbroadcast`, data `X` and integer
labels `Y` as plain leaf Tensors) training a small classifier, against its plain
PyTorch twin (`X`, `Y` without `requires_grad`, `F.cross_entropy`).

The reference numbers are torch's own autograd; each planted bug is a copy of the engine
with one line changed, and must be named at that line (before issue 33, the alignment
failed and all of them were blamed on a `+` that wrote a leaf's grad last)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.diff.test_diff import ROOT, diff, diff_json, line_of

torch = pytest.importorskip("torch")
pytest.importorskip("numpy")

CORPUS = ROOT / "tests" / "corpus"
ENGINE, TRAIN, TWIN = "diff_numpy_engine.py", "diff_numpy_train.py", "diff_numpy_torch.py"


def planted(tmp_path: Path, right: str, wrong: str) -> Path:
    """A copy of the pair in `tmp_path`, the engine's one line holding `right` made
    `wrong`; the copy's folder."""
    for name in (TRAIN, TWIN):
        shutil.copy(CORPUS / name, tmp_path / name)
    source = (CORPUS / ENGINE).read_text()
    assert source.count(right) == 1, right
    (tmp_path / ENGINE).write_text(source.replace(right, wrong))
    return tmp_path


def test_the_correct_pair_agrees(capsys):
    code, doc, err = diff_json(capsys, CORPUS / TRAIN, CORPUS / TWIN)
    assert (code, doc["agree"], doc["difference"], err) == (0, True, None, "")
    assert doc["backward_passes_compared"] == 3 and doc["leaves_compared"] == 4
    # X and Y (and the engine's Tensor(0.01)) have no node in torch's graph: constants
    assert {n["label"] for n in doc["a"]["constants"]} >= {"X", "Y"}
    assert doc["a"]["unaligned_count"] == 0
    # the log-softmax inside F.cross_entropy is torch's alone
    assert [n["op"] for n in doc["b"]["unaligned"]] == ["LogSoftmax"]
    code, out, _ = diff(capsys, CORPUS / TRAIN, CORPUS / TWIN, "--print")
    assert code == 0 and "they agree: 3 backward passes" in out and "lesser part" not in out
    assert "constants of A only (no grad on the other side, so theirs is not compared; " \
        "their values are, through the ops made from them): X, Y" in out


def test_the_pair_aligns_with_torch_as_a_too(capsys):
    """Torch's NllLoss is over a LogSoftmax that has no partner: it is matched by value
    to the engine's cross_entropy through the logits under it, so the engine's labels Y
    are a constant there too, and only the LogSoftmax is left unaligned."""
    code, doc, _ = diff_json(capsys, CORPUS / TWIN, CORPUS / TRAIN)
    assert (code, doc["agree"], doc["difference"]) == (0, True, None)
    assert [n["op"] for n in doc["a"]["unaligned"]] == ["LogSoftmax"]
    assert doc["b"]["unaligned_count"] == 0
    assert {n["label"] for n in doc["b"]["constants"]} >= {"X", "Y"}


SIGMOID = "self.grad = self.grad + s * (1 - s) * out.grad"
MUL = "self.grad = self.grad + unbroadcast(other.data * out.grad, self.shape)"
MEAN = "self.data.size if dim is None else self.data.shape[dim]"
CROSS_ENTROPY = "self.grad = self.grad + (p - onehot) / len(rows) * out.grad"


@pytest.mark.parametrize("right, wrong, label, op, torch_node", [
    # d sigmoid = s (1 - s), not s
    (SIGMOID, SIGMOID.replace("s * (1 - s)", "s"), "#7", "sigmoid", "SigmoidBackward0"),
    # `=` where the grad must be added to: W1 * W1's share overwrites the matmul's
    (MUL, MUL.replace("self.grad + ", ""), "W1", "*", "MulBackward0"),
    # a public fork's bug: `not dim` is true for dim=0, so mean(dim=0) divides by 30, not 6
    (MEAN, MEAN.replace("dim is None", "not dim"), "h", "mean", "MeanBackward1"),
    # the fused cross-entropy's batch mean left out: torch's own is inside LogSoftmax's
    (CROSS_ENTROPY, CROSS_ENTROPY.replace(" / len(rows)", ""), "logits", "cross_entropy",
     "LogSoftmaxBackward0"),
])
def test_each_planted_bug_is_named_at_its_own_line(capsys, tmp_path, right, wrong, label,
                                                   op, torch_node):
    folder = planted(tmp_path, right, wrong)
    code, doc, _ = diff_json(capsys, folder / TRAIN, folder / TWIN)
    d = doc["difference"]
    assert code == 1 and d["kind"] == "grad" and d["backward_pass"] == 1
    a, b = d["a"], d["b"]
    assert a["place"].endswith(f"{ENGINE}:{line_of(folder / ENGINE, wrong)}")
    assert wrong in a["code"]
    assert (a["label"], a["writer_op"]) == (label, op)
    assert b["by"] == torch_node and b["place"] is None
    assert a["value"] != pytest.approx(b["value"], rel=1e-3)


UNPINNED_A = '''
import sys
sys.path.insert(0, {data!r})
from mine_value import Value


def mul(self, other):
    other = other if isinstance(other, Value) else Value(other)
    out = Value(self.data * other.data, (self, other), '*')

    def _backward():
        self.grad += other.data  # BUG: times out.grad
        other.grad += self.data
    out._backward = _backward
    return out


Value.__mul__ = mul
a, b, c = Value(2.0), Value(-1.5), Value(0.5)
u = a * 3.0
f = u * b + u * c
f.backward()
'''

UNPINNED_B = '''
import torch

a, b, c = (torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (2.0, -1.5, 0.5))
f = a * (3 * b + 3 * c)
f.backward()
'''


def test_a_difference_behind_unaligned_ops_is_said_not_pinned(capsys, tmp_path):
    """f = 3a·b + 3a·c by hand, against torch's a·(3b + 3c): `u = a * 3` has no partner
    (no node of torch's holds 6) and feeds two ops, so the wrong a.grad (3, where torch's
    is 3b + 3c = -3) cannot be laid at any `_backward`: the diff says so, and where the
    alignment stopped, rather than naming u's line as if it were known."""
    (tmp_path / "mine.py").write_text(UNPINNED_A.format(data=str(ROOT / "tests/data/diff")))
    (tmp_path / "theirs.py").write_text(UNPINNED_B)
    code, doc, _ = diff_json(capsys, tmp_path / "mine.py", tmp_path / "theirs.py")
    d = doc["difference"]
    assert code == 1 and d["kind"] == "unpinned"
    assert d["a"]["label"] == "a" and d["a"]["value"] == pytest.approx(3.0)
    assert d["b"]["value"] == pytest.approx(-3.0)
    assert d["a"]["place"] is None and d["a"]["writer"] is None
    assert "no node could be pinned" in d["message"]
    assert f"the alignment stopped at `u` (*, made at " in d["message"]
    # (the line the node was made at: here the scenario's own `*`, which made it)
    made = line_of(tmp_path / "mine.py", "out = Value(self.data * other.data")
    assert f"mine.py:{made}), which has no partner, the first of 3 ops" in d["message"]


@pytest.mark.parametrize("names, kind", [
    (("matmul", "@", "mm", "dot", "Mm", "MmBackward0", "__matmul__"), "matmul"),
    (("tanh", "TanhBackward0"), "tanh"),
    (("add", "+", "AddBackward0"), "+"), (("mul", "*", "Mul", "MulBackward0"), "*"),
    (("sub", "-", "SubBackward0"), "-"), (("div", "/", "DivBackward0"), "/"),
    (("neg", "NegBackward0"), "neg"), (("pow", "**2", "**-1", "PowBackward0"), "**"),
    (("mean", "Mean", "MeanBackward1"), "mean"), (("sum", "SumBackward1"), "sum"),
    (("log_softmax", "LogSoftmax", "LogSoftmaxBackward0"), "log_softmax"),
    (("softmax", "SoftmaxBackward0"), "softmax"), (("ReLU", "relu"), "relu"),
    (("sigmoid", "SigmoidBackward0"), "sigmoid"), (("exp", "ExpBackward0"), "exp"),
    (("log", "LogBackward0"), "log"), (("cross_entropy", "CrossEntropy"), "cross_entropy"),
    (("transpose", "T", "TBackward0", "permute", "PermuteBackward0"), "transpose"),
    (("reshape", "view", "ViewBackward0", "UnsafeViewBackward0"), "reshape"),
])
def test_op_names_meet_through_the_one_table(names, kind):
    from mgtui.diff.aliases import kind_of

    assert {kind_of(n) for n in names} == {kind}
    assert kind_of("tanh") != kind_of("sigmoid") and kind_of("matmul") != kind_of("*")


# -- a second style: grads that start as None, written through a helper -------------------

GN_ENGINE, GN_TRAIN, GN_TWIN = ("diff_gradnone_engine.py", "diff_gradnone_train.py",
                                "diff_gradnone_torch.py")
LOG_SOFTMAX = "self._accumulate(out.grad - np.exp(logp) * out.grad.sum(axis=-1, keepdims=True))"
RELU = "self._accumulate(out.grad * (self.data > 0))"
TRANSPOSE = "self._accumulate(out.grad.T)"
GRADNONE_BUGS = [
    # d log_softmax: g - softmax·Σg, not g - softmax
    (LOG_SOFTMAX, LOG_SOFTMAX.replace(" * out.grad.sum(axis=-1, keepdims=True)", ""),
     "log_softmax", "LogSoftmaxBackward0", "grad"),
    # the relu mask flipped
    (RELU, RELU.replace("> 0", "< 0"), "relu", "ReluBackward0", "grad"),
    # a transpose's gradient not transposed back: W1.grad of the wrong shape
    (TRANSPOSE, TRANSPOSE.replace(".T)", ")"), "T", "PermuteBackward0", "shape"),
]


def planted_gradnone(tmp_path: Path, right: str, wrong: str) -> Path:
    for name in (GN_TRAIN, GN_TWIN):
        shutil.copy(CORPUS / name, tmp_path / name)
    source = (CORPUS / GN_ENGINE).read_text()
    assert source.count(right) == 1, right
    (tmp_path / GN_ENGINE).write_text(source.replace(right, wrong))
    return tmp_path


def test_the_grad_none_pair_agrees(capsys):
    """`dot` is torch's Mm, a `.T` node its Permute (whose value the recording works out
    from the leaf), `log_softmax` and `nll` its LogSoftmax and NllLoss."""
    code, doc, _ = diff_json(capsys, CORPUS / GN_TRAIN, CORPUS / GN_TWIN)
    assert (code, doc["agree"], doc["difference"]) == (0, True, None)
    assert doc["backward_passes_compared"] == 3 and doc["leaves_compared"] == 3
    assert doc["a"]["unaligned_count"] == 0 and doc["b"]["unaligned_count"] == 0


@pytest.mark.parametrize("right, wrong, op, torch_node, what", GRADNONE_BUGS)
def test_each_grad_none_bug_is_found_at_its_op(capsys, tmp_path, right, wrong, op,
                                               torch_node, what):
    folder = planted_gradnone(tmp_path, right, wrong)
    code, doc, _ = diff_json(capsys, folder / GN_TRAIN, folder / GN_TWIN)
    d = doc["difference"]
    assert code == 1 and d["kind"] == "grad" and d["backward_pass"] == 1
    assert d["a"]["writer_op"] == op and d["b"]["by"] == torch_node
    if what == "shape":
        assert (d["a"]["label"], d["a"]["shape"], d["b"]["shape"]) == ("W1", [4, 6], [6, 4])
    else:
        assert d["a"]["value"] != pytest.approx(d["b"]["value"], rel=1e-3)


@pytest.mark.parametrize("right, wrong, op, torch_node, what", GRADNONE_BUGS[:1])
def test_a_grad_none_bug_is_named_at_its_own_line(capsys, tmp_path, right, wrong, op,
                                                  torch_node, what):
    """A write made through a helper (`_accumulate`) is recorded at the helper's line;
    the replay of the call names the `_backward`'s line that made the value (issue 33)."""
    folder = planted_gradnone(tmp_path, right, wrong)
    _, doc, _ = diff_json(capsys, folder / GN_TRAIN, folder / GN_TWIN)
    place = doc["difference"]["a"]["place"]
    assert place.endswith(f"{GN_ENGINE}:{line_of(folder / GN_ENGINE, wrong)}")


def test_a_value_torch_did_not_record_is_not_a_difference(capsys, tmp_path):
    """`hidden.T.T` in torch: two Permute nodes over an op's output, made inside the
    property, whose values the recording does not know (nan): not compared, rather than
    reported as `a (5, 6) array in yours and a () array in torch`."""
    for name, old, new in ((GN_TRAIN, "hidden.dot(W2)", "hidden.T.T.dot(W2)"),
                           (GN_TWIN, "hidden @ W2", "hidden.T.T @ W2")):
        source = (CORPUS / name).read_text()
        assert source.count(old) == 1
        (tmp_path / name).write_text(source.replace(old, new))
    shutil.copy(CORPUS / GN_ENGINE, tmp_path / GN_ENGINE)
    code, doc, _ = diff_json(capsys, tmp_path / GN_TRAIN, tmp_path / GN_TWIN)
    assert (code, doc["difference"]) == (0, None)
    assert doc["a"]["unaligned_count"] == 0 and doc["b"]["unaligned_count"] == 0
