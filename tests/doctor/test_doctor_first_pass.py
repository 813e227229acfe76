"""The numerical check goes through the backward passes in order: a finding is made at
the first wrong pass it checked, and names the other checked passes it is wrong in.

`tests/data/passes/sigmoid_branch.py` trains a neuron whose sigmoid is wrong only for
`z < 0`, which happens in backward passes 2, 3 and 5. The expected numbers come from
the same training worked out here in plain Python, never from the doctor's output.
"""

import json
import math
from pathlib import Path

import pytest

import mgtui
from mgtui.cli import main
from mgtui.doctor import diagnose

SIGMOID = Path(__file__).resolve().parent.parent / "data" / "passes" / "sigmoid_branch.py"
SAMPLES = [(1.0, 1.0), (-2.0, 0.0), (-1.0, 1.0), (2.0, 1.0), (-0.5, 0.0)]


def by_hand() -> list[float]:
    """z of each training step, trained as the scenario trains (its bug included: for
    z < 0 the sigmoid's derivative is taken as s instead of s (1 - s))."""
    w, b, zs = 0.5, 0.0, []
    for x, y in SAMPLES:
        z = w * x + b
        s = 1 / (1 + math.exp(-z))
        dz = (s * (1 - s) if z >= 0 else s) * 2 * (s - y)
        w, b = w - 0.1 * dz * x, b - 0.1 * dz
        zs.append(z)
    return zs


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


def test_the_scenario_is_wrong_in_passes_2_3_and_5():
    assert [n for n, z in enumerate(by_hand(), 1) if z < 0] == [2, 3, 5]


def test_the_finding_is_at_pass_2_and_names_passes_3_and_5():
    report = diagnose(SIGMOID)
    (f,) = report.findings
    t = report.trace
    assert (f.kind, f.label, f.op) == ("wrong-derivative", "p", "sigmoid")
    assert report.backward_number(t.pass_at(f.step)) == 2
    assert f.also_in_passes == (3, 5)
    assert f.message.endswith("Also wrong in backward passes 3, 5.")
    assert [report.backward_number(p) for p in report.checked_passes] == [1, 2, 3, 4, 5]
    # the numbers are pass 2's: dp/dz = s (1 - s) at its z; the bug applied s
    s = sigmoid(by_hand()[1])
    assert f.local == pytest.approx(s * (1 - s), rel=1e-5)
    assert f.recorded == pytest.approx(s * 2 * (s - 0.0), rel=1e-9)  # s × p.grad
    assert f.numerical == pytest.approx(s * (1 - s) * 2 * (s - 0.0), rel=1e-5)


def test_later_wrong_passes_cost_no_runs_of_their_own():
    """The numbers come from pass 2 alone: the recording, the runs nudged up and down,
    and one pair nudging z's input of pass 2 (one input: the sigmoid's)."""
    report = diagnose(SIGMOID)
    assert report.runs == 1 + 2 + 2


def test_the_passes_asked_for_are_named_the_same_way():
    only = diagnose(SIGMOID, passes=[3, 4, 5])
    (f,) = only.findings
    assert only.backward_number(only.trace.pass_at(f.step)) == 3
    assert f.also_in_passes == (5,) and f.message.endswith("Also wrong in backward pass 5.")
    right = diagnose(SIGMOID, passes=[1, 4])
    assert right.findings == [] and right.clean


def test_cli_and_check_name_the_first_pass(capsys):
    assert main([str(SIGMOID), "--check"]) == 1
    out = capsys.readouterr().out
    assert "backward pass 2/5" in out and "Also wrong in backward passes 3, 5." in out
    assert main([str(SIGMOID), "--check", "--json"]) == 1
    (f,) = json.loads(capsys.readouterr().out)
    assert f["backward_pass"] == 2 and f["also_in_passes"] == [3, 5]
    found = mgtui.check(SIGMOID)
    assert [(f.kind, f.also_in_passes) for f in found] == [("wrong-derivative", (3, 5))]
    assert "Also wrong in backward passes 3, 5." in repr(found)
