"""The doctor checks every backward pass: a bug that shows only in a late pass is found
with its pass, node and line; `passes` picks the passes checked numerically.

The expected numbers come from plain Python working out the same training by hand
(the formulas of `fma` and of the squared error), never from the doctor's own output.
"""

import json
from pathlib import Path

import pytest

from mgtui.cli import main
from mgtui.doctor import diagnose
from mgtui.doctor.faulty_op import solve

ROOT = Path(__file__).resolve().parent.parent.parent
LATE = ROOT / "scenarios" / "bugs" / "late_pass.py"


def line_of(path: Path, text: str) -> int:
    (line,) = [i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s]
    return line


def by_hand():
    """out.grad of each of the three training steps, trained with the right gradients
    (the bug halves nothing while |out.grad| <= 0.5, so steps 1 and 2 are right)."""
    x, y, w, b, lr = 2.0, 1.0, 0.5, 0.15, 0.25
    grads = []
    for _ in range(3):
        out = w * x + b
        g = 2 * (out - y)
        grads.append(g)
        w, b = w - lr * x * g, b - lr * g
    return grads


def test_the_late_bug_is_right_in_passes_1_and_2_and_wrong_in_pass_3():
    g1, g2, g3 = by_hand()
    assert abs(g1) <= 0.5 and abs(g2) <= 0.5 < abs(g3)  # the scenario plants what it says


def test_late_bug_found_with_its_pass_node_and_line():
    report = diagnose(LATE)
    (f,) = report.findings
    t = report.trace
    assert f.kind == "wrong-derivative" and f.label == "out" and f.op == "fma"
    assert f.line == line_of(LATE, "w.grad += x.data * out.grad * scale")
    p = t.pass_at(f.step)
    assert p.kind == "backward" and report.backward_number(p) == 3 == report.backward_count
    g3 = by_hand()[2]
    assert t.label(f.input) == "w"
    assert f.local == pytest.approx(2.0, rel=1e-6)  # d(w*x + b)/dw = x
    assert f"should have added {2.0 * g3:.6g}" in f.message  # x * out.grad = 1.35
    assert f.recorded == pytest.approx(2.0 * g3 * 0.5)  # what the bug handed on
    assert [report.backward_number(q) for q in report.checked_passes] == [1, 2, 3]


def test_passes_pick_the_ones_checked():
    early = diagnose(LATE, passes=[1, 2])
    assert early.findings == [] and early.clean
    assert [early.backward_number(q) for q in early.checked_passes] == [1, 2]
    only = diagnose(LATE, passes=[3])
    assert [f.kind for f in only.findings] == ["wrong-derivative"]
    assert [only.backward_number(q) for q in only.checked_passes] == [3]
    wrong = diagnose(LATE, passes=[7])
    assert wrong.checked_passes == [] and any("7" in n for n in wrong.notes)


def test_default_sampling_always_has_the_first_and_the_last_pass():
    # a budget of nothing still checks the first and the last pass of 20 (mlp.py)
    report = diagnose(ROOT / "scenarios" / "mlp.py", budget=1e-9)
    numbers = [report.backward_number(q) for q in report.checked_passes]
    assert numbers == [1, report.backward_count] and report.backward_count == 20
    assert any("time budget" in n for n in report.notes)


def test_solve_gives_the_local_derivatives_of_inputs_that_move_together():
    # N = 3*a + 5*b; run 1 moves a by 1 and b by 2, run 2 moves a by 1 and b by -1
    assert solve([[1.0, 2.0], [1.0, -1.0]], [13.0, -2.0]) == pytest.approx([3.0, 5.0])
    assert solve([[1.0, 2.0], [2.0, 4.0]], [1.0, 2.0]) is None


def test_cli_text_and_json_name_the_pass(capsys):
    assert main([str(LATE), "--check"]) == 1
    out = capsys.readouterr().out
    assert "backward pass 3/3" in out
    assert "numerically, backward passes 1, 2, 3 of 3" in out
    assert main([str(LATE), "--check", "--json", "--passes", "3"]) == 1
    (f,) = json.loads(capsys.readouterr().out)
    assert f["backward_pass"] == 3
    assert main([str(LATE), "--check", "--passes", "1-2"]) == 0
    assert "no problems found" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["0", "x", "3-1", ""])
def test_cli_rejects_a_bad_pass_list(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(LATE), "--check", "--passes", bad])
    assert exc.value.code == 2
    assert "not a list of passes" in capsys.readouterr().err


async def test_the_checks_pane_says_which_passes_were_checked():
    from textual.widgets import OptionList

    from mgtui.tui.app import MgtuiApp
    from mgtui.tui.widgets.checks import ChecksPane

    app = MgtuiApp(LATE)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        for _ in range(400):
            if screen.trace is not None:
                break
            await pilot.pause(0.05)
        await pilot.press("d")
        pane = screen.query_one(ChecksPane)
        for _ in range(1800):  # (up to 90 s: the doctor's runs, on a stalled disk too)
            if pane.findings:
                break
            await pilot.pause(0.05)
        (f,) = pane.findings
        assert "numerically, backward passes 1, 2, 3 of 3" in pane.status
        assert f.label == "out"
        prompt = pane.query_one(OptionList).get_option_at_index(0).prompt
        assert f"step {f.step + 1} · backward pass 3/3" in str(prompt)
