"""The corpus of real shapes (issue 33, point 5): engines written in the styles of public
micrograd forks and numpy tensor engines (`tests/corpus/`, its README lists them), each
with a correct twin, planted bugs and, for a tensor engine, a torch twin.

First the corpus itself is checked, independently of mgtui: each engine's gradients are
finite differences of its own forward pass, each planted bug really changes them, and
each tensor engine trains to the same parameters as its torch twin. Then mgtui's doctor
(on the file, and in this process with `mgtui.check(train)`) and `mgtui diff` are run
on the cases whose right verdict mgtui gives today; the others
are rows of `tests/corpus/pending.py`, with what mgtui says today and what it should
say, to be moved here one by one as issue 33 is built.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

from mgtui.cli import main
from mgtui.doctor import diagnose

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def load(path: Path, name: str | None = None):
    """A corpus file imported as a module (its scenario runs only as a script)."""
    spec = importlib.util.spec_from_file_location(name or f"corpus_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (a dataclass looks its module up there)
    spec.loader.exec_module(module)
    return module


cases = load(CORPUS / "cases.py", "corpus_cases")
pending = load(CORPUS / "pending.py", "corpus_pending")
PENDING = {(row.tool, row.case) for row in pending.PENDING}
BY_ID = {case.id: case for case in cases.PLANTED}

# engine -> the field that holds a node's number, and the method that runs backward
FIELDS = {
    "scalar_value_field": ("value", "backward"),
    "scalar_inputs_backward_fn": ("val", "backprop"),
    "scalar_grad_rebind": ("data", "backward"),
    "tensor_unbroadcast": ("data", "backward"),
    "tensor_grad_elements": ("data", "backward"),
    "tensor_function_ctx": ("data", "backward"),
    "tensor_grad_none": ("data", "backward"),
}


def today(tool: str, ids) -> list[str]:
    return [i for i in ids if (tool, i) not in PENDING]


# -- the corpus itself ---------------------------------------------------------------------

def test_the_tables_agree():
    assert set(FIELDS) == set(cases.ENGINES)
    engines = {p.stem for p in CORPUS.glob("*.py") if p.stem.startswith(("scalar_", "tensor_"))}
    assert engines == {*cases.ENGINES, *filter(None, cases.ENGINES.values())}
    ids = {*(f"{e}:correct" for e in cases.ENGINES), *BY_ID}
    assert len(BY_ID) == len(cases.PLANTED)
    for row in pending.PENDING:
        assert row.tool in ("check", "check(fn)", "diff") and row.case in ids, row
        assert row.today and row.should, row
    assert len(PENDING) == len(pending.PENDING)


@pytest.mark.parametrize("case", cases.PLANTED, ids=lambda c: c.id)
def test_each_planted_bug_is_one_marked_change(case, tmp_path):
    path = case.write(tmp_path)
    clean = (CORPUS / f"{case.engine}.py").read_text().splitlines()
    planted = path.read_text().splitlines()
    assert len(clean) == len(planted)
    changed = [i for i, (a, b) in enumerate(zip(clean, planted)) if a != b]
    assert 1 <= len(changed) <= 2 and cases.BUG in planted[changed[0]]
    assert sum(cases.BUG in line for line in planted) == 1
    cases.line_of(path, case.at)  # the line the finding must name is there, once


def params_of(things) -> list:
    return list(things.parameters()) if hasattr(things, "parameters") else list(things)


def backprop(module, engine: str) -> list:
    """The gradients the engine's own backward gives its parameters, from zero."""
    field, method = FIELDS[engine]
    things, loss_of = module.setup()
    params = params_of(things)
    for p in params:
        p.grad = np.zeros_like(getattr(p, field)) if engine.startswith("tensor") else 0.0
    getattr(loss_of(), method)()
    return [np.array(p.grad, dtype=float) for p in params]


def finite_differences(module, engine: str, h: float = 1e-6) -> list:
    """The same gradients from the forward pass alone: central differences."""
    field, _ = FIELDS[engine]
    things, loss_of = module.setup()
    params = params_of(things)
    value = lambda: float(getattr(loss_of(), field))  # noqa: E731
    out = []
    for p in params:
        x = getattr(p, field)
        if isinstance(x, np.ndarray):
            g = np.zeros(x.shape)
            for i in np.ndindex(x.shape):
                keep = x[i]
                x[i] = keep + h
                up = value()
                x[i] = keep - h
                g[i] = (up - value()) / (2 * h)
                x[i] = keep
        else:
            setattr(p, field, x + h)
            up = value()
            setattr(p, field, x - h)
            g = np.array((up - value()) / (2 * h))
            setattr(p, field, x)
        out.append(g)
    return out


def gap(module, engine: str) -> float:
    return max(float(np.max(np.abs(a - b)))
               for a, b in zip(backprop(module, engine), finite_differences(module, engine)))


@pytest.mark.parametrize("engine", sorted(cases.ENGINES))
def test_each_engine_gives_the_gradients_of_finite_differences(engine):
    module = load(CORPUS / f"{engine}.py")
    assert gap(module, engine) < 1e-6


def test_the_value_field_neuron_gives_the_gradients_of_the_formula():
    """loss = Σ (tanh(w0 x0 + w1 x1 + b) - y)², so ∂loss/∂w_i = Σ 2 (t - y)(1 - t²) x_i
    (x_b = 1), worked out with math.tanh on the same weights and integer data."""
    import math

    module = load(CORPUS / "scalar_value_field.py")
    model, _ = module.setup()
    w0, w1, b = (p.value for p in model.parameters())
    want = [0.0, 0.0, 0.0]
    for (x0, x1), y in [((2, -1), 1), ((1, 3), -1), ((-2, 1), 1)]:
        t = math.tanh(w0 * x0 + w1 * x1 + b)
        for i, x in enumerate((x0, x1, 1)):
            want[i] += 2 * (t - y) * (1 - t * t) * x
    mine = backprop(module, "scalar_value_field")
    assert [float(g) for g in mine] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("case", [c for c in cases.PLANTED if c.kind != "missing-zero-grad"],
                         ids=lambda c: c.id)
def test_each_planted_bug_changes_the_gradients(case, tmp_path):
    module = load(case.write(tmp_path), f"corpus_bug_{case.engine}_{case.name}")
    assert gap(module, case.engine) > 1e-3


@pytest.mark.parametrize("engine", sorted(e for e, twin in cases.ENGINES.items() if twin))
def test_each_tensor_engine_trains_as_its_torch_twin(engine):
    pytest.importorskip("torch")
    mine, _ = load(CORPUS / f"{engine}.py").train(steps=3)
    twin = runpy.run_path(str(CORPUS / f"{cases.ENGINES[engine]}.py"))
    for p, q in zip(params_of(mine), twin["params"], strict=True):
        assert p.data == pytest.approx(q.detach().numpy(), rel=1e-9, abs=1e-12)


# -- mgtui on the corpus: the cases it gets right today ------------------------------------

@pytest.mark.parametrize("engine", today("check", [f"{e}:correct" for e in cases.ENGINES]))
def test_the_doctor_passes_a_correct_twin(engine):
    path = CORPUS / f"{engine.split(':')[0]}.py"
    report = diagnose(path)
    assert cases.judge_clean(report) == [], cases.summary(report)
    assert main([str(path), "--check"]) == 0


@pytest.mark.parametrize("case_id", today("check", BY_ID))
def test_the_doctor_finds_a_planted_bug(case_id, tmp_path):
    case = BY_ID[case_id]
    path = case.write(tmp_path)
    report = diagnose(path)
    assert cases.judge_planted(case, path, report) == [], cases.summary(report)
    assert main([str(path), "--check"]) == 1


@pytest.mark.parametrize("engine", today("check(fn)", [f"{e}:correct" for e in cases.ENGINES]))
def test_check_of_a_correct_twins_train_function_is_clean(engine):
    name = engine.split(":")[0]
    report = cases.check_in_process(CORPUS / f"{name}.py", f"corpus_fn_{name}")
    assert cases.judge_clean(report) == [], cases.summary(report)


@pytest.mark.parametrize("case_id", today("check(fn)", BY_ID))
def test_check_of_a_planted_bugs_train_function_finds_it(case_id, tmp_path):
    case = BY_ID[case_id]
    path = case.write(tmp_path)
    report = cases.check_in_process(path, f"corpus_fn_{case.engine}_{case.name}")
    assert cases.judge_planted(case, path, report, by_name=False) == [], cases.summary(report)


def diff_json(a: Path, b: Path) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["diff", str(a), str(b), "--json"])
    return code, json.loads(out.getvalue())


@pytest.mark.parametrize("engine", today("diff", [f"{e}:correct" for e, t in cases.ENGINES.items()
                                                  if t]))
def test_diff_of_a_correct_engine_and_its_torch_twin_agrees(engine):
    pytest.importorskip("torch")
    name = engine.split(":")[0]
    code, doc = diff_json(CORPUS / f"{name}.py", CORPUS / f"{cases.ENGINES[name]}.py")
    assert cases.judge_diff_clean(code, doc) == [], cases.diff_summary(doc)


@pytest.mark.parametrize("case_id", today("diff", [c.id for c in cases.DIFFED]))
def test_diff_names_a_planted_bug_against_the_torch_twin(case_id, tmp_path):
    pytest.importorskip("torch")
    case = BY_ID[case_id]
    path = case.write(tmp_path)
    code, doc = diff_json(path, CORPUS / f"{cases.ENGINES[case.engine]}.py")
    assert cases.judge_diff_planted(case, path, code, doc) == [], cases.diff_summary(doc)
