"""The Graph pane's layout, measured: mgtui.graph.layout (grandalf's Sugiyama ranking and
ordering, our grid placement and routing) against netext (a Rust core with its own
Sugiyama layout, and a rich renderable) on the same graphs, side by side in one run.

1. Whole graphs: the lesson scenarios, the first 207 nodes of mlp's graph, and the whole
   of mlp's last forward pass. Each layout is timed from the graph to the finished picture
   (for netext: rendered to text, as it lays out when rendered). netext runs in a child
   process with a time limit, since it can take minutes.
2. Neighbourhoods: the picture the pane draws on a big graph, around each of the first
   60 nodes of mlp's and moons' backward walks. Target: at most 50 ms each.

    python bench/graph_layout.py [--limit SECONDS] [--no-moons]

netext is optional (`pip install netext`); without it only ours is measured.
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
sys.path.insert(0, str(ROOT))

from mgtui.graph.layout import GraphModel  # noqa: E402
from mgtui.run.runner import run  # noqa: E402
from mgtui.session import Session  # noqa: E402

NETEXT = textwrap.dedent("""
    import io, json, sys, time
    from rich.console import Console
    from netext import ConsoleGraph
    from netext._core import SugiyamaLayout, LayoutDirection
    graph = json.load(sys.stdin)
    nodes = {n: {"$content": text} for n, text in graph["nodes"].items()}
    edges = [(a, b) for a, b in graph["edges"]]
    start = time.perf_counter()
    console = Console(file=io.StringIO(), width=100000, color_system=None)
    console.print(ConsoleGraph(nodes, edges, console=console,
                               layout_engine=SugiyamaLayout(LayoutDirection.LEFT_RIGHT)))
    print(time.perf_counter() - start)
""")


def last_graph(trace) -> list[int]:
    session = Session(trace)
    view = session.goto(session.total).view
    return [*view.used, *view.made]


def ours(trace, nodes: list[int]) -> tuple[float, tuple[int, int]]:
    start = time.perf_counter()
    model = GraphModel(trace, nodes, whole_limit=len(nodes))
    picture = model.picture(None, "LR")
    return time.perf_counter() - start, (picture.width, picture.height)


def theirs(trace, nodes: list[int], limit: float) -> str:
    """netext's time for the same graph (value boxes and op nodes, as draw_dot draws
    them), or why there is none."""
    members = set(nodes)
    graph = {"nodes": {}, "edges": []}
    for n in nodes:
        graph["nodes"][str(n)] = (f"{trace.label(n)} | data {trace.replay.final_data[n]:.4f} | "
                                  f"grad {trace.replay.final_grad[n]:.4f}")
        if trace.op(n):
            graph["nodes"][f"{n}op"] = trace.op(n)
            graph["edges"].append((f"{n}op", str(n)))
            graph["edges"] += [(str(c), f"{n}op") for c in trace.children(n) if c in members]
    try:
        done = subprocess.run([sys.executable, "-c", NETEXT], input=json.dumps(graph),
                              capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return f"> {limit:.0f} s (stopped)"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return "not installed" if "No module named 'netext'" in last else f"failed: {last[:60]}"
    return f"{float(done.stdout.split()[-1]) * 1000:9.1f} ms"


def neighbourhoods(trace, count: int = 60) -> list[float]:
    """Layout times of the neighbourhoods of the first `count` nodes of the backward walk."""
    trace.index.build_indexes()  # as the app does while it loads, off the UI thread
    session = Session(trace)
    backward = next(p for p in trace.passes if p.kind == "backward")
    state = session.goto(backward.start + 1)
    model = GraphModel(trace, [*state.view.used, *state.view.made])
    assert not model.whole
    times = []
    for index in trace.backward_calls(backward)[:count]:
        nid = trace.event_node(index)
        start = time.perf_counter()
        model.picture(nid, "LR")
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=60.0,
                        help="seconds netext may take on one graph (default 60)")
    parser.add_argument("--no-moons", action="store_true", help="skip recording moons.py")
    parser.add_argument("--quick", action="store_true",
                        help="small and fast, for the test suite: measures nothing")
    args = parser.parse_args()
    if args.quick:
        args.limit, args.no_moons = 0.5, True

    traces = {name: run(ROOT / "scenarios" / f"{name}.py").trace
              for name in ("chain", "neuron", "neuron_exp", "mlp")}
    mlp = last_graph(traces["mlp"])
    cases = [(name, traces[name], last_graph(traces[name]))
             for name in ("chain", "neuron", "neuron_exp")]
    cases += [("mlp, first 207 nodes", traces["mlp"], sorted(mlp)[:207]),
              ("mlp, whole pass", traces["mlp"], mlp)]
    print(f"{'graph':24} {'nodes':>6}  {'mgtui (grandalf)':>17}  {'picture':>11}  {'netext':>18}")
    for name, trace, nodes in cases:
        seconds, (w, h) = ours(trace, nodes)
        print(f"{name:24} {len(nodes):6}  {seconds * 1000:14.1f} ms  {w:5}x{h:<5}  "
              f"{theirs(trace, nodes, args.limit):>18}", flush=True)

    print("\nneighbourhoods (the pane on a big graph), 60 centres along the backward walk:")
    big = [("mlp", traces["mlp"])]
    if not args.no_moons:
        big.append(("moons", run(ROOT / "scenarios" / "moons.py").trace))
    for name, trace in big:
        times = neighbourhoods(trace)
        print(f"  {name:8} median {statistics.median(times) * 1000:6.1f} ms   "
              f"max {max(times) * 1000:6.1f} ms   (target ≤ 50 ms)")


if __name__ == "__main__":
    main()
