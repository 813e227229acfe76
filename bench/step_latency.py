"""Step latency and start-up of the debugger app, measured side by side in one run.

1. Step latency: one `n` (or `p`) key press in the headless app at 120×40, from the key
   to the repainted screen, in the middle of the first backward pass of `moons.py`
   (about 65k nodes per graph) and of `chain.py`. Both apps run at once and the presses
   alternate between them, so machine noise hits both. The wall time includes Textual's
   frame pacing, so the CPU time of the process per press is printed too.
   Target: moons / chain at most 1.2. With --graph, both apps show the Graph pane (m):
   chain's graph drawn whole, moons' as the neighbourhood of the selected node.
2. Start-up to first paint: `mgtui scenarios/chain.py` against a minimal Textual app,
   each a fresh process run headless (80×24), alternating. For mgtui it is the first
   paint that shows the trace. Target: at most 1.3.

    python bench/step_latency.py [--presses 60] [--starts 7] [--graph]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


async def step_latency(presses: int, graph: bool = False) -> tuple[float, float]:
    from mgtui.tui.app import MgtuiApp

    async def middle_of_backward(app: MgtuiApp) -> int:
        trace = app.debugger.trace
        backward = next(p for p in trace.passes if p.kind == "backward")
        return backward.start + len(backward) // 2

    chain, moons = MgtuiApp(SCENARIOS / "chain.py"), MgtuiApp(SCENARIOS / "moons.py")
    times: dict[str, list[float]] = {"chain": [], "moons": []}
    cpu: dict[str, list[float]] = {"chain": [], "moons": []}
    async def ready(app: MgtuiApp, pilot) -> None:
        while app.loading or app.debugger.trace is None:
            await pilot.pause(0.05)
        await app.workers.wait_for_complete()
        app.debugger.goto(await middle_of_backward(app))
        await pilot.pause()
        if graph:
            await pilot.press("m")
            await pilot.pause()

    async with chain.run_test(size=(120, 40)) as chain_pilot:
        # one recording at a time: the recorder swaps sys.stdout while it runs, and so
        # does an app while it starts
        await ready(chain, chain_pilot)
        async with moons.run_test(size=(120, 40)) as moons_pilot:
            await ready(moons, moons_pilot)
            for k in range(presses):
                key = "n" if k % 2 == 0 else "p"  # stay in the middle of the backward pass
                for name, pilot in (("chain", chain_pilot), ("moons", moons_pilot)):
                    start, start_cpu = time.perf_counter(), time.process_time()
                    await pilot.press(key)
                    times[name].append(time.perf_counter() - start)
                    cpu[name].append(time.process_time() - start_cpu)
    return (statistics.median(times["chain"]), statistics.median(times["moons"]),
            statistics.median(cpu["chain"]), statistics.median(cpu["moons"]))


# Each program prints the wall-clock time of its first paint, and the CPU time its process
# has used by then; the parent subtracts the time it launched the process. So the figure
# covers the interpreter, the imports, the app's start and (for mgtui) recording chain.py
# (in its wall time: the recording's own CPU is its child process's), but not the exit.
MINIMAL = textwrap.dedent("""
    import time
    from textual.app import App
    from textual.widgets import Footer, Header, Static

    class Minimal(App):
        def compose(self):
            yield Header()
            yield Static("hello")
            yield Footer()

        def on_mount(self):
            self.call_after_refresh(self.painted)

        def painted(self):
            print(time.time(), time.process_time())
            self.exit()

    Minimal().run(headless=True)
""")

MGTUI = textwrap.dedent("""
    import time
    from pathlib import Path
    # as `mgtui FILE` does: the scenario's child process starts (at the app's lower
    # priority, `RunOptions.for_app`) before the app is imported
    from mgtui.run.runner import RunOptions, start_run
    run = start_run({path!r}, RunOptions.for_app())
    from mgtui.tui.app import MgtuiApp

    class FirstPaint(MgtuiApp):
        # The first paint that shows the trace: after the first refresh if the trace is
        # on screen by then, else after the refresh that follows TraceLoaded. (Textual
        # calls MgtuiApp's own handlers after these: no super() calls here.)
        def on_mount(self):
            self.call_after_refresh(self.painted)

        def on_trace_loaded(self, message):
            self.call_after_refresh(self.painted)

        def painted(self):
            if self.debugger.trace is not None and not getattr(self, "done", False):
                self.done = True
                print(time.time(), time.process_time())
                self.exit()

    FirstPaint(Path({path!r}), run=run).run(headless=True)
""")


def start_up(starts: int) -> tuple[float, float, float, float]:
    """The first paint's median wall time and CPU time: (minimal, mgtui, their CPU)."""
    programs = {"minimal": MINIMAL, "mgtui": MGTUI.format(path=str(SCENARIOS / "chain.py"))}
    times: dict[str, list[float]] = {name: [] for name in programs}
    cpu: dict[str, list[float]] = {name: [] for name in programs}
    # As installed: with bytecode written and reused (textual's was compiled when pip
    # installed it; mgtui's, in an editable install, on its first import).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "mgtui"),
                    str(ROOT / "engine")], check=True, env=env)
    for _ in range(starts):
        for name, program in programs.items():
            start = time.time()
            done = subprocess.run([sys.executable, "-c", program], check=True, cwd=ROOT,
                                  capture_output=True, text=True, env=env)
            painted, used = done.stdout.split()[-2:]
            times[name].append(float(painted) - start)
            cpu[name].append(float(used))
    return (statistics.median(times["minimal"]), statistics.median(times["mgtui"]),
            statistics.median(cpu["minimal"]), statistics.median(cpu["mgtui"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=60)
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--start-only", action="store_true", help="measure only the start-up")
    parser.add_argument("--graph", action="store_true",
                        help="step with the Graph pane open, and skip the start-up")
    parser.add_argument("--quick", action="store_true",
                        help="small and fast, for the test suite: measures nothing")
    args = parser.parse_args()
    if args.quick:
        args.presses, args.starts = 2, 1

    if not args.start_only:
        print_step_latency(args.presses, args.graph)
    if args.graph:
        return
    minimal, mgtui, minimal_cpu, mgtui_cpu = start_up(args.starts)
    print(f"first paint   minimal  {minimal * 1000:7.0f} ms   chain.py {mgtui * 1000:7.0f} ms   "
          f"ratio {mgtui / minimal:.2f}  (target ≤ 1.3)")
    print(f"  its CPU     minimal  {minimal_cpu * 1000:7.0f} ms   chain.py "
          f"{mgtui_cpu * 1000:7.0f} ms   ratio {mgtui_cpu / minimal_cpu:.2f}")


def print_step_latency(presses: int, graph: bool = False) -> None:
    chain, moons, chain_cpu, moons_cpu = asyncio.run(step_latency(presses, graph))
    if graph:
        print("with the Graph pane open:")
    print(f"step latency  chain.py {chain * 1000:7.1f} ms   moons.py {moons * 1000:7.1f} ms   "
          f"ratio {moons / chain:.2f}  (target ≤ 1.2)")
    print(f"  CPU a step  chain.py {chain_cpu * 1000:7.1f} ms   moons.py {moons_cpu * 1000:7.1f} ms   "
          f"ratio {moons_cpu / chain_cpu:.2f}")


if __name__ == "__main__":
    main()
