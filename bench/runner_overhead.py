"""Recording in the runner's child process, trace transfer included, against plain Python.

`python scenarios/moons.py` in a fresh process, against `mgtui.run.runner.run` on the same
file: a fresh child that records every node, write and `_backward` call and streams the
trace to this process, which builds and checks it. Both are timed from launch to the
end (the plain run's interpreter start-up counts as the child's does), alternating,
and the medians are compared. Target (issue 8): at most 1.3x for the engine.

    python bench/runner_overhead.py [--rounds 3] [--scenario scenarios/moons.py]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from mgtui.run.runner import run

ROOT = Path(__file__).resolve().parent.parent


def plain(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, str(path)], cwd=path.parent, check=True,
                   stdout=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return time.perf_counter() - start


def recorded(path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    result = run(path)
    elapsed = time.perf_counter() - start
    assert result.finished, result.message
    return elapsed, len(result.trace)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "moons.py"))
    parser.add_argument("--quick", action="store_true",
                        help="small and fast, for the test suite: measures nothing")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.scenario = 1, str(ROOT / "scenarios" / "chain.py")
    path = Path(args.scenario).resolve()
    times: dict[str, list[float]] = {"plain": [], "recorded": []}
    steps = 0
    for _ in range(args.rounds):
        times["plain"].append(plain(path))
        elapsed, steps = recorded(path)
        times["recorded"].append(elapsed)
    p, r = statistics.median(times["plain"]), statistics.median(times["recorded"])
    print(f"{path.name}: {steps:,} steps recorded, {args.rounds} rounds, medians")
    print(f"plain python      {p:.2f} s")
    print(f"runner, recorded  {r:.2f} s   ratio {r / p:.2f}x (target <= 1.3)")


if __name__ == "__main__":
    main()
