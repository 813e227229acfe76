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

   Measured twice: through Textual's Pilot in a headless app (a press returns when the
   app is idle, so it also waits for the trace updates being handled), and as a person
   sees it: the app in a pseudo-terminal at 120x40 read by a `pyte` terminal emulator,
   from the key written to the step number in the header changing.

    python bench/recording_app.py [--starts 5] [--presses 20] [--pty-runs 3]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import select
import statistics
import struct
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"

PROGRAM = textwrap.dedent("""
    import asyncio, json, os, statistics, sys, time
    from pathlib import Path
    from mgtui.run.runner import RunOptions, start_run
    path, presses = sys.argv[1], int(sys.argv[2])
    launched = float(sys.argv[3])
    run = start_run(path, RunOptions.for_app())  # as `mgtui FILE` starts it
    from mgtui.tui.app import MgtuiApp

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


STEP = re.compile(r"step ([\d,]+)/")


class Terminal:
    """`mgtui FILE` in a pseudo-terminal of its own, its screen read by `pyte`."""

    def __init__(self, path: Path, cols: int = 120, rows: int = 40) -> None:
        import pyte

        master, slave = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", os.environ.get("BENCH_PRE", "") + "from mgtui.cli import entry; entry()", str(path)], stdin=slave, stdout=slave,
            stderr=slave, cwd=ROOT, env=env, start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.fd = master
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)

    def read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            try:
                self.stream.feed(os.read(self.fd, 1 << 16))
            except OSError:
                pass

    def header(self) -> str:
        return self.screen.display[0]

    def step(self) -> int | None:
        found = STEP.search(self.header())
        return int(found.group(1).replace(",", "")) if found else None

    def wait(self, check, limit: float = 10.0) -> float:
        """Read until `check()` holds; the seconds it took."""
        start = time.perf_counter()
        while not check():
            if time.perf_counter() - start > limit:
                raise TimeoutError(self.header())
            self.read(0.005)
        return time.perf_counter() - start

    def pause(self, seconds: float) -> None:
        """Go on reading the screen for `seconds` (a person between two keys)."""
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self.read(max(0.0, end - time.perf_counter()))

    def press(self, key: str, expect: int) -> float:
        """Send `key`; the seconds until the header shows step `expect`."""
        start = time.perf_counter()
        os.write(self.fd, key.encode())
        self.wait(lambda: self.step() == expect)
        return time.perf_counter() - start

    def close(self) -> None:
        os.write(self.fd, b"q")
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self.fd)


def pty_latency(path: Path, presses: int) -> tuple[list[float], list[float]]:
    """Step latency as the terminal shows it: while `path` records, then idle."""
    term = Terminal(path)
    try:
        term.wait(lambda: term.step() is not None)
        recording, idle = [], []
        k = 0
        while "recording" in term.header() and len(recording) < presses:
            step = term.step()
            key, expect = ("n", step + 1) if k % 2 == 0 else ("p", step - 1)
            recording.append(term.press(key, expect))
            k += 1
            term.pause(0.05)
        term.wait(lambda: "recording" not in term.header(), 120)
        term.pause(1.0)
        for k in range(presses):
            step = term.step()
            key, expect = ("n", step + 1) if k % 2 == 0 else ("p", step - 1)
            idle.append(term.press(key, expect))
            term.pause(0.05)
        return recording, idle
    finally:
        term.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument("--pty-runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="small and fast, for the test suite: measures nothing")
    args = parser.parse_args()
    if args.quick:
        args.starts, args.presses, args.pty_runs = 1, 2, 0
    if args.pty_runs:
        rec, idle = [], []
        for _ in range(args.pty_runs):
            r, i = pty_latency(SCENARIOS / "moons.py", args.presses)
            rec.extend(r)
            idle.extend(i)
        r, i = statistics.median(rec), statistics.median(idle)
        print(f"step while recording, as the terminal shows it {r * 1000:5.1f} ms   idle "
              f"{i * 1000:5.1f} ms   ratio {r / i:.2f} (target <= 1.5; {len(rec)} and "
              f"{len(idle)} presses, {args.pty_runs} runs; p90 {quantile(rec, 0.9) * 1000:.0f} "
              f"and {quantile(idle, 0.9) * 1000:.0f} ms)")
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
    if not args.starts:
        return
    c, m = statistics.median(first["chain"]), statistics.median(first["moons"])
    print(f"time to first step  chain {c * 1000:6.0f} ms   moons {m * 1000:6.0f} ms   "
          f"ratio {m / c:.2f} (target <= 1.5)")
    rc, rm = statistics.median(rss["chain"]), statistics.median(rss["moons"])
    print(f"RSS, fully loaded   chain {rc / 2**20:6.0f} MB   moons {rm / 2**20:6.0f} MB   "
          f"ratio {rm / rc:.2f} (target <= 2)")
    if recording and idle:
        r, i = statistics.median(recording), statistics.median(idle)
        print(f"step while recording, through Pilot {r * 1000:5.1f} ms   idle {i * 1000:5.1f} ms   "
              f"ratio {r / i:.2f} (target <= 1.5; {len(recording)} presses each)")
    else:
        print("step while recording: moons finished recording before the presses began")


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


if __name__ == "__main__":
    main()
