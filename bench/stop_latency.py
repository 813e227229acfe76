"""How long `mgtui FILE --print` takes to end when the scenario fights it (issue 22).

Three cases, each `mgtui scenario.py --print` in a process of its own, as a user runs it:
- ctrl+c (SIGINT to mgtui) while the scenario records, the scenario heeding SIGINT;
- the same, the scenario ignoring SIGINT (target: under 2 s; it was 2.8 s);
- no ctrl+c: the scenario forks a process that leaves the session (`setsid()`) and
  sleeps, and ends; the time from launch to mgtui's exit (it used to be never: the run
  is given up on after --give-up seconds, and counted as that).
Timed from the signal (or the launch) to mgtui's exit; medians of --rounds.

    python bench/stop_latency.py [--rounds 5] [--root DIR]

`--root` runs another checkout's mgtui (e.g. main's, exported with `git archive`) on the
same scenarios, for figures side by side.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RECORDS = """
import os, signal, time
from engine import Value
{ignore}
a = Value(1.0, label="a")
open({ready!r}, "w").write("ready")
while True:
    a = a * 1.0
    time.sleep(0.001)
"""

ESCAPES = """
import os, time
from engine import Value
a = Value(2.0, label="a")
if os.fork() == 0:
    os.setsid()
    open({ready!r}, "w").write(str(os.getpid()))
    time.sleep(1000)
    os._exit(0)
while not os.path.exists({ready!r}):
    time.sleep(0.01)
b = a * 3.0
b.backward()
"""


def launch(root: Path, scenario: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.Popen([sys.executable, "-m", "mgtui.cli", str(scenario), "--print"],
                            cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def wait_ready(ready: Path, proc: subprocess.Popen) -> None:
    while not (ready.exists() and ready.read_text()):
        if proc.poll() is not None:
            raise SystemExit(f"mgtui ended before the scenario ran: {proc.stderr.read()}")
        time.sleep(0.01)


def after_ctrl_c(root: Path, folder: Path, ignore: bool, give_up: float) -> float:
    ready = folder / "ready"
    ready.unlink(missing_ok=True)
    scenario = folder / "records.py"
    scenario.write_text(textwrap.dedent(RECORDS).format(
        ignore="signal.signal(signal.SIGINT, signal.SIG_IGN)" if ignore else "",
        ready=str(ready)))
    proc = launch(root, scenario)
    wait_ready(ready, proc)
    time.sleep(0.3)  # recording for a moment
    start = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(give_up)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return give_up
    return time.perf_counter() - start


def escaping(root: Path, folder: Path, give_up: float) -> float:
    ready = folder / "escaped"
    ready.unlink(missing_ok=True)
    scenario = folder / "escapes.py"
    scenario.write_text(textwrap.dedent(ESCAPES).format(ready=str(ready)))
    start = time.perf_counter()
    proc = launch(root, scenario)
    try:
        proc.wait(give_up)
        elapsed = time.perf_counter() - start
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        elapsed = give_up
    if ready.exists() and ready.read_text():  # (what mgtui left, if it left it)
        try:
            os.kill(int(ready.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the checkout whose mgtui runs (default: this one)")
    parser.add_argument("--give-up", type=float, default=30.0, metavar="SECONDS",
                        help="a run still going after this is ended and counted as this")
    parser.add_argument("--quick", action="store_true",
                        help="one round, for the test suite: measures nothing")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 1
    root = args.root.resolve()
    with tempfile.TemporaryDirectory(prefix="mgtui-stop-") as tmp:
        folder = Path(tmp)
        cases = {
            "ctrl+c, scenario heeds SIGINT": lambda: after_ctrl_c(root, folder, False,
                                                                  args.give_up),
            "ctrl+c, scenario ignores SIGINT": lambda: after_ctrl_c(root, folder, True,
                                                                    args.give_up),
            "a process left the session": lambda: escaping(root, folder, args.give_up),
        }
        print(f"mgtui from {root}: {args.rounds} rounds, medians (give up at "
              f"{args.give_up:g} s)")
        for name, case in cases.items():
            times = [case() for _ in range(args.rounds)]
            print(f"{name:34s} {statistics.median(times):6.2f} s  "
                  f"(max {max(times):.2f} s)")


if __name__ == "__main__":
    main()
