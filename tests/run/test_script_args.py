"""Script arguments after `--`: `mgtui train.py -- --lr 0.5` gives the script the
`sys.argv` that `python train.py --lr 0.5` would, in every mode and on reload."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

TRAIN = '''
    """Train with a learning rate from the command line"""
    import argparse
    import sys
    from engine import Value

    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args()
    print("argv:", sys.argv[1:])
    w = Value(1.0, label="w")
    for _ in range(args.steps):
        loss = w * w; loss.label = "loss"
        w.grad = 0.0
        loss.backward()
        w.data -= args.lr * w.grad
'''


def mgtui(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mgtui.cli", *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60, cwd=ROOT)


def test_arguments_after_the_double_dash_reach_the_script(write_scenario):
    path = write_scenario("train", TRAIN)
    # what plain python does with the same arguments
    plain = subprocess.run([sys.executable, str(path), "--lr", "0.5", "--steps", "2"],
                           capture_output=True, text=True, cwd=ROOT, timeout=60,
                           env={"PYTHONPATH": str(ROOT)})
    assert plain.stdout.strip() == "argv: ['--lr', '0.5', '--steps', '2']"
    proc = mgtui(str(path), "--export", "json", "--", "--lr", "0.5", "--steps", "2")
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(proc.stdout)
    assert plain.stdout in trace["output"]
    w = next(n for n in trace["nodes"] if n["label"] == "w")
    # w = 1 - 0.5*2 = 0 after the first step; 0 - 0.5*0 = 0 after the second
    assert w["final_data"] == 0.0
    data_writes = [e for e in trace["events"] if e["kind"] == "data"]
    assert [(e["before"], e["after"]) for e in data_writes] == [(1.0, 0.0), (0.0, 0.0)]


def test_mgtui_options_before_the_double_dash_still_apply(write_scenario):
    path = write_scenario("train", TRAIN)
    proc = mgtui(str(path), "--print", "--all", "--", "--lr", "0.25")
    assert proc.returncode == 0, proc.stderr
    assert "argv: ['--lr', '0.25']" in proc.stdout
    # an mgtui option after -- is the script's: argparse in the script rejects it
    proc = mgtui(str(path), "--print", "--", "--all")
    assert proc.returncode == 1
    assert "unrecognized arguments: --all" in proc.stdout + proc.stderr


def test_script_arguments_without_the_double_dash_say_how(write_scenario):
    path = write_scenario("train", TRAIN)
    proc = mgtui(str(path), "--print", "--lr", "0.5")
    assert proc.returncode == 2
    assert "unrecognized arguments: --lr 0.5" in proc.stderr
    assert f"-- --lr 0.5" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_doctor_passes_them_to_every_run(write_scenario):
    path = write_scenario("needs_args", '''
        """Fails without its argument"""
        import sys
        from engine import Value
        if sys.argv[1:] != ["--scale", "3"]:
            raise SystemExit("usage: needs_args.py --scale 3")
        a = Value(2.0, label="a")
        b = a * float(sys.argv[2]); b.label = "b"
        b.backward()
    ''')
    assert mgtui(str(path), "--check").returncode == 1
    proc = mgtui(str(path), "--check", "--", "--scale", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.usefixtures("clean_env")
async def test_the_app_runs_and_reloads_with_them(write_scenario, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    from mgtui.tui.app import MgtuiApp

    from tests.tui.test_app import loaded

    path = write_scenario("train", TRAIN)
    app = MgtuiApp(path, argv=("--lr", "0.5"))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await loaded(pilot)
        assert "argv: ['--lr', '0.5']" in screen.trace.output
        assert screen.trace.replay.final_data[0] == 0.0  # 1 - 0.5 * 2
        path.write_text(path.read_text().replace("default=0.1", "default=0.2"))
        await pilot.press("r")
        await loaded(pilot)
        assert "argv: ['--lr', '0.5']" in screen.trace.output
        assert screen.trace.replay.final_data[0] == 0.0
