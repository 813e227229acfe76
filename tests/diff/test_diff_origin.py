"""`mgtui diff` names the statement that computed a wrong gradient, not only the line
that wrote it (issue 33): your `_backward` call whose addition differs is replayed in a
re-run of your scenario under a line tracer, told what torch added
(`mgtui.doctor.call_origin`, joined to the comparison in `mgtui.cli.place_difference`).

The bugs are planted in the corpus's tensor engines (`tests/corpus/cases.py`), each
marked `# BUG`; the right numbers are torch's own autograd in the engine's twin."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.diff.test_diff import diff_json

pytest.importorskip("torch")
pytest.importorskip("numpy")

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def _cases():
    spec = importlib.util.spec_from_file_location("corpus_cases_origin", CORPUS / "cases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (a dataclass looks its module up there)
    spec.loader.exec_module(module)
    return module


cases = _cases()
BY_ID = {case.id: case for case in cases.PLANTED}


def planted_diff(capsys, tmp_path, case_id: str):
    case = BY_ID[case_id]
    path = case.write(tmp_path)
    code, doc, err = diff_json(capsys, path, CORPUS / f"{cases.ENGINES[case.engine]}.py")
    assert code == 1 and err == "", err
    return path, doc["difference"]


def test_a_value_made_in_a_helper_is_named_where_made_not_where_written(capsys, tmp_path):
    """`b.grad += unbroadcast(out.grad, …)` writes it; `grad = grad.mean(…)` inside
    `unbroadcast` (a `sum` belongs there) made it."""
    path, d = planted_diff(capsys, tmp_path, "tensor_unbroadcast:unbroadcast_mean")
    a = d["a"]
    assert d["kind"] == "grad" and a["writer_op"] == "+" and a["label"] == "b"
    bug = cases.line_of(path, cases.BUG)
    write = cases.line_of(path, "other.grad += unbroadcast(out.grad, other.data.shape)")
    assert a["place"].endswith(f"{path.name}:{bug}")
    assert a["code"].startswith("grad = grad.mean(axis=axis, keepdims=True)")
    assert f"the wrong value is made at {a['place']}" in d["message"]
    assert f"(written at {a['place'][:-len(str(bug))]}{write})" in d["message"]
    assert "replay" in d["message"]


def test_a_count_computed_before_the_statement_is_named(capsys, tmp_path):
    """`return grad / n` makes the value, from `n = … if not dim else shape[dim]`
    (`not 0` is true: the mean over dim 0 divides by the whole size): told torch's
    numbers, the replay finds the one value `n` that makes it right."""
    path, d = planted_diff(capsys, tmp_path, "tensor_function_ctx:mean_not_dim")
    a = d["a"]
    assert a["writer_op"] == "Mean"
    assert a["place"].endswith(f"{path.name}:{cases.line_of(path, cases.BUG)}")
    assert "from n, computed at line" in d["message"]


def test_one_of_several_writes_is_named_by_the_elements_it_changed(capsys, tmp_path):
    """cross_entropy's `_backward` writes its input's grad twice (`+= probs * …`, then
    `[rows, labels] -= …`): the second, unscaled, is the one that changed the wrong
    element and none of the right ones."""
    path, d = planted_diff(capsys, tmp_path, "tensor_grad_elements:cross_entropy_unscaled")
    a = d["a"]
    assert a["writer_op"] == "cross_entropy"
    assert a["place"].endswith(f"{path.name}:{cases.line_of(path, cases.BUG)}")
    assert "the one that wrote this element and none of those found right" in d["message"]


def test_where_the_replay_names_nothing_the_written_line_stands_and_says_so(capsys, tmp_path):
    """`self.grad += (1 - s) * out.grad`: the value is made inside numpy's `+=`, held by
    no local; the line that wrote it is named, and the message says that is all it is."""
    path, d = planted_diff(capsys, tmp_path, "tensor_unbroadcast:sigmoid_derivative")
    a = d["a"]
    assert a["writer_op"] == "sigmoid"
    assert a["place"].endswith(f"{path.name}:{cases.line_of(path, cases.BUG)}")
    assert ("(the line named is the one that wrote the grad: a replay of the call could "
            "not tell which statement made the value)") in d["message"]
    assert "the wrong value is made at" not in d["message"]
