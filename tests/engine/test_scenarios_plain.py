"""The bundled scenarios run as plain Python scripts and reproduce the lecture's figures.

Each scenario runs with runpy, no mgtui involved; the checks read its globals.
"""

import gc
import re
import runpy
from pathlib import Path

import pytest

SCENARIOS = Path(__file__).resolve().parent.parent.parent / "scenarios"


def run_scenario(name):
    return runpy.run_path(str(SCENARIOS / f"{name}.py"), run_name="__main__")


def test_chain(capsys):
    g = run_scenario("chain")
    assert "-8.0" in capsys.readouterr().out
    assert g["L"].data == -8.0
    grads = {name: g[name].grad for name in ["L", "f", "d", "e", "c", "a", "b"]}
    assert grads == {"L": 1, "f": 4.0, "d": -2.0, "e": -2.0, "c": -2.0, "a": 6.0, "b": -4.0}
    assert g["e"].label == "e" and g["L"].label == "L"


NEURON_GRADS = {"n": 0.5, "b": 0.5, "x1": -1.5, "w1": 1.0, "x2": 0.5, "w2": 0.0}


def test_neuron(capsys):
    g = run_scenario("neuron")
    assert "0.7071" in capsys.readouterr().out
    assert g["o"].data == pytest.approx(0.7071, abs=1e-4)
    assert g["o"]._op == "tanh"
    for name, grad in NEURON_GRADS.items():
        assert g[name].grad == pytest.approx(grad, abs=1e-9), name
        assert g[name].label == name


def test_neuron_exp_matches_neuron(capsys):
    tanh_op = run_scenario("neuron")
    from_exp = run_scenario("neuron_exp")
    assert "0.7071" in capsys.readouterr().out
    assert "tanh" not in {v._op for v in (from_exp["o"], from_exp["e"], from_exp["n"])}
    assert from_exp["e"]._op == "exp"
    assert from_exp["o"].data == pytest.approx(tanh_op["o"].data, abs=1e-12)
    for name in ["x1", "w1", "x2", "w2", "b"]:
        assert from_exp[name].grad == pytest.approx(tanh_op[name].grad, abs=1e-12), name
    for name, grad in NEURON_GRADS.items():
        assert from_exp[name].grad == pytest.approx(grad, abs=1e-9), name


def test_mlp_loss_falls_at_every_step(capsys):
    g = run_scenario("mlp")
    out = capsys.readouterr().out
    model, losses = g["n"], g["losses"]
    assert len(model.parameters()) == 41
    assert len(losses) == 20
    assert all(later < earlier for earlier, later in zip(losses, losses[1:])), losses
    # the 20th update must help too
    final = sum((model(x) - y) ** 2 for x, y in zip(g["xs"], g["ys"]))
    assert final.data < losses[-1]
    assert str(losses[-1]) in out


def graph_size(root):
    seen, stack = set(), [root]
    while stack:
        v = stack.pop()
        if v not in seen:
            seen.add(v)
            stack.extend(v._prev)
    return len(seen)


def test_moons(capsys):
    # The only moons test. Three passes of about 65,000 nodes each make CPython's cyclic
    # garbage collector take most of the run time; switched off here, it runs in well
    # under a second instead of several.
    gc.disable()
    try:
        g = run_scenario("moons")
    finally:
        gc.enable()
    out = capsys.readouterr().out
    assert len(g["model"].parameters()) == 337
    assert len(g["X"]) == 100 and sorted(set(g["y"])) == [-1, 1] and g["y"].count(1) == 50
    assert 50_000 <= graph_size(g["total_loss"]) <= 80_000
    losses = [float(x) for x in re.findall(r"loss ([-\d.e]+),", out)]
    assert len(losses) == 3
    assert losses[2] < losses[0]
