"""The app on a big scenario while it records, side by side with a small one (issue 8).

1. Time to first step: from launch until the first step can be taken, `moons.py`
   against `chain.py`, each in a fresh headless process launched the way `mgtui FILE`
   does (the scenario's child starts before the app is imported), alternating.
   Target: at most 1.5x.
2. Memory: the app's resident set once the whole trace is loaded, moons against chain
   (the scenario's own objects live in the child process, which has ended by then).
   Target: at most 2x.
3. Responsiveness: the latency of `n`/`p` in the moons app while it still records,
   against the same keys once it has finished. Target: at most 1.5x.

    python bench/recording_app.py [--starts 5] [--presses 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"

PROGRAM = textwrap.dedent("""
    import asyncio, json, os, statistics, sys, time
    from pathlib import Path
    from mgtui.runner import Run, RunSpec
    path, presses = sys.argv[1], int(sys.argv[2])
    launched = float(sys.argv[3])
    run = Run(RunSpec(path)).start()
    from mgtui.app import MgtuiApp

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    async def press_times(app, pilot, n, while_loading=False):
        times = []
        for k in range(n):
            if while_loading and not app.loading:
                break
            start = time.perf_counter()
            await pilot.press("n" if k % 2 == 0 else "p")
            times.append(time.perf_counter() - start)
        return times

    async def main():
        app = MgtuiApp(Path(path), run=run)
        out = {}
        async with app.run_test(size=(120, 40)) as pilot:
            while app.debugger.trace is None:
                await pilot.pause(0.005)
            out["first_step"] = time.time() - launched
            if app.loading and presses:
                out["recording"] = await press_times(app, pilot, presses, while_loading=True)
            while app.loading:
                await pilot.pause(0.05)
            await app.workers.wait_for_complete()
            await pilot.pause(0.5)
            out["idle"] = await press_times(app, pilot, presses) if presses else []
            out["rss"] = rss()
            out["steps"] = len(app.debugger.trace)
        print(json.dumps(out))

    asyncio.run(main())
""")


def launch(path: Path, presses: int) -> dict:
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(path), str(presses),
                           repr(time.time())], cwd=ROOT, check=True, capture_output=True,
                          text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--presses", type=int, default=20)
    args = parser.parse_args()
    first: dict[str, list[float]] = {"chain": [], "moons": []}
    rss: dict[str, list[int]] = {"chain": [], "moons": []}
    recording, idle = [], []
    for k in range(args.starts):
        for name in ("chain", "moons"):
            presses = args.presses if name == "moons" and k == 0 else 0
            out = launch(SCENARIOS / f"{name}.py", presses)
            first[name].append(out["first_step"])
            rss[name].append(out["rss"])
            if presses:
                recording.extend(out.get("recording", []))
                idle.extend(out["idle"])
    c, m = statistics.median(first["chain"]), statistics.median(first["moons"])
    print(f"time to first step  chain {c * 1000:6.0f} ms   moons {m * 1000:6.0f} ms   "
          f"ratio {m / c:.2f} (target <= 1.5)")
    rc, rm = statistics.median(rss["chain"]), statistics.median(rss["moons"])
    print(f"RSS, fully loaded   chain {rc / 2**20:6.0f} MB   moons {rm / 2**20:6.0f} MB   "
          f"ratio {rm / rc:.2f} (target <= 2)")
    if recording and idle:
        r, i = statistics.median(recording), statistics.median(idle)
        print(f"step while recording {r * 1000:5.1f} ms   idle {i * 1000:5.1f} ms   "
              f"ratio {r / i:.2f} (target <= 1.5; {len(recording)} presses each)")
    else:
        print("step while recording: moons finished recording before the presses began")


if __name__ == "__main__":
    main()
