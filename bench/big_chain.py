"""Big runs (issue 24): chains of millions of nodes recorded, saved and opened.

The scenario: `--nodes` nodes made as chains of `x = x * 1.0001 + 0.0` (4 nodes an
iteration), 1,000 iterations a chain, each chain followed by its backward pass and let
go, as a training loop lets each step's graph go: what grows with the run is the
recording, not the scenario's own graph. For each size it prints a row of the issue's
table:

- record wall: `mgtui SCENARIO --save FILE` in a fresh process, to its end;
- peak RSS while recording: the larger of that process's and its runner child's peak
  (both shown), and that in bytes a node;
- file: the `.mgtrace` written; load call: `mgtui.trace.binary.load` of it, in a fresh
  process;
- the app (a headless one at 80×24, in a fresh process) opening the file: its first step
  on screen, the whole trace loaded, then `G` and `g` (each from the key to the repainted
  screen), then steps back from the end (`p`, CPU time of the press, median of 21, as
  `step_latency.py` times steps; the sampler below sleeps meanwhile, as its CPU would
  count); its peak RSS, and that a node, and the peaks of its resident set sampled
  every 3 ms while it loads and after (`G`, `g`).
- step 0 in a terminal: `mgtui FILE` run in a tmux window of 80×24, from the command
  to its screen showing "step 0/" (`tmux capture-pane` every 10 ms), median of 3: what a
  person sees, Python's start and the imports included. "app step 0" above waits for the
  app to be idle after the trace arrives, which includes the panes that come in after
  the first paint; this is the first paint. (Skipped without tmux, and with `--quick`.)

Run it side by side with another checkout through PYTHONPATH (`--label` names the row):

    python bench/big_chain.py --nodes 100000 1000000 3000000 10000000
    PYTHONPATH=/tmp/main python bench/big_chain.py --label main ...

`--quick` runs 20,000 nodes, for tests/bench/test_benches.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SCENARIO = '''"""Chains of 4,000 nodes, each with its backward pass, {chains:,} of them."""
from engine import Value

for _ in range({chains}):
    x = Value(1.0)
    for _ in range(1000):
        x = x * 1.0001 + 0.0
    x.backward()
'''

RECORD = textwrap.dedent("""
    import json, resource, sys, time
    from mgtui.cli import main
    t = time.perf_counter()
    code = main([{path!r}, "--save", {out!r}, "--max-nodes", "20000000",
                 "--max-memory", "16G"])
    wall = time.perf_counter() - t
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(json.dumps(dict(code=code, wall=wall, parent=me, child=kids)))
""")

LOAD = textwrap.dedent("""
    import json, resource, time
    from mgtui.trace.binary import load
    from mgtui.trace.load_limits import LoadLimits
    t = time.perf_counter()
    trace = load({path!r}, LoadLimits(20_000_000, 16 << 30))
    print(json.dumps(dict(seconds=time.perf_counter() - t, nodes=trace.node_count,
                          rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)))
""")

APP = textwrap.dedent("""
    import asyncio, json, os, resource, statistics, threading, time
    from pathlib import Path
    from mgtui.tui.app import MgtuiApp

    phase, peaks = ["loading"], {{}}

    def sample():  # the resident set every 3 ms, the peak of each phase
        page = os.sysconf("SC_PAGE_SIZE")
        with open("/proc/self/statm") as statm:
            while True:
                statm.seek(0)
                rss = int(statm.read().split()[1]) * page
                peaks[phase[0]] = max(peaks.get(phase[0], 0), rss)
                time.sleep(0.003)
                while phase[0] == "steps":  # (not while steps are timed: its CPU counts)
                    time.sleep(0.01)

    threading.Thread(target=sample, daemon=True).start()

    async def main():
        out = {{}}
        t = time.perf_counter()
        app = MgtuiApp(Path({path!r}), max_nodes=20_000_000, max_memory=16 << 30)
        async with app.run_test(size=(80, 24)) as pilot:
            while app.debugger.trace is None:
                await pilot.pause(0.005)
            await pilot.pause()
            out["first"] = time.perf_counter() - t
            while app.loading:
                await pilot.pause(0.02)
            await pilot.pause()
            out["loaded"] = time.perf_counter() - t
            phase[0] = "after"
            for key in ("G", "g", "G"):
                t = time.perf_counter()
                await pilot.press(key)
                await pilot.pause()
                out.setdefault(key, time.perf_counter() - t)
            steps, phase[0] = [], "steps"
            for _ in range(21):  # steps back from the end, as step_latency.py times them
                t = time.process_time()
                await pilot.press("p")
                steps.append(time.process_time() - t)
            out["p"] = statistics.median(steps)
            out["at"] = app.debugger.position
            out["nodes"] = app.debugger.trace.node_count
        out["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        out["peaks"] = peaks
        print(json.dumps(out))

    asyncio.run(main())
""")


def child(program: str) -> dict:
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          cwd=os.getcwd())
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.splitlines()[-1])


def measure(nodes: int, tmp: Path, quick: bool = False) -> dict:
    scenario = tmp / f"big_chain_{nodes}.py"
    scenario.write_text(SCENARIO.format(chains=max(1, nodes // 4000)))
    saved = tmp / f"big_chain_{nodes}.mgtrace"
    rec = child(RECORD.format(path=str(scenario), out=str(saved)))
    if rec["code"]:
        raise SystemExit(f"--save exited {rec['code']}")
    load = child(LOAD.format(path=str(saved)))
    row = dict(nodes=load["nodes"], record=rec["wall"], parent=rec["parent"],
               child=rec["child"], file=saved.stat().st_size, load=load["seconds"])
    row["app"] = child(APP.format(path=str(saved)))
    row["terminal"] = None if quick else on_terminal(saved)
    saved.unlink()
    return row


def on_terminal(saved: Path, runs: int = 3) -> float | None:
    """Seconds from `mgtui FILE` in a tmux window of 80×24 to "step 0/" on its screen,
    the median of `runs`; None without tmux. (The window gets this process's PYTHONPATH:
    tmux starts it in its server's environment.)"""
    if shutil.which("tmux") is None:
        return None
    mgtui = Path(sys.executable).with_name("mgtui")
    name, times = f"big-chain-{os.getpid()}", []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "80", "-y", "24",
                        "-e", f"PYTHONPATH={os.environ.get('PYTHONPATH', '')}",
                        f"{mgtui} {saved} --max-nodes 20000000 --max-memory 16G"], check=True)
        try:
            while time.perf_counter() - start < 60:
                screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", name],
                                        capture_output=True, text=True).stdout
                if "step 0/" in screen:
                    times.append(time.perf_counter() - start)
                    break
                time.sleep(0.01)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    return statistics.median(times) if times else None


HEAD = ("| nodes | | record wall | peak RSS recording (parent / child) | a node | file | "
        "load call | app step 0 | app loaded | G | g | step at end (CPU) | app peak RSS "
        "(loading / after) | a node | step 0 in a terminal |\n"
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def line(r: dict, label: str) -> str:
    mb, n, a = 1 << 20, r["nodes"], r["app"]
    peak = max(r["parent"], r["child"])
    return (f"| {n:,} | {label} | {r['record']:.1f} s | {peak / mb:,.0f} MB "
            f"({r['parent'] / mb:,.0f} / {r['child'] / mb:,.0f}) | {peak / n:,.0f} B | "
            f"{r['file'] / mb:.1f} MB | {r['load']:.2f} s | {a['first']:.2f} s | "
            f"{a['loaded']:.1f} s | {a['G']:.2f} s | {a['g']:.2f} s | {a['p'] * 1000:.0f} ms | "
            f"{a['rss'] / mb:,.0f} MB ({a['peaks'].get('loading', 0) / mb:,.0f} / "
            f"{a['peaks'].get('after', 0) / mb:,.0f}) | {a['rss'] / n:,.0f} B | "
            + ("–" if r["terminal"] is None else f"{r['terminal']:.2f} s") + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--label", default="this", help="the name of this checkout's rows")
    parser.add_argument("--quick", action="store_true", help="20,000 nodes (for the tests)")
    args = parser.parse_args()
    sizes = [20_000] if args.quick else args.nodes
    print(HEAD, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in sizes:
            print(line(measure(nodes, Path(tmp), args.quick), args.label), flush=True)


if __name__ == "__main__":
    main()
