"""The in-code API's cost on `moons` (about 65,800 nodes a pass), side by side in one run.

- `mgtui.show(loss)`'s reconstruction (copy the graph, replay `loss.backward()` on the
  copy under the recorder, build the trace; no app) against a plain `loss.backward()`
  of the same graph.
- A training step (forward, zero_grad, backward) recorded in a `mgtui.record()` block,
  with and without the `=`-for-`+=` probe, against the same step plain.

Medians of a few rounds, alternating. A recording raises the collector's generation-0
threshold, as a scenario run does (`mgtui.defaults.GC_GEN0_THRESHOLD`), and most of a
plain moons step is the collector: so the plain step is also timed with that setting,
and the ratio against it is the cost of the hooks alone.

    python bench/inprocess_cost.py [--rounds 3]
    python bench/inprocess_cost.py --quick   # seconds: does it still run? (the tests)
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # time this tree's mgtui, not whichever is installed

import mgtui  # noqa: E402
from mgtui.recording.inprocess import record_graph  # noqa: E402
from mgtui.defaults import GC_GEN0_THRESHOLD  # noqa: E402

MOONS = ROOT / "scenarios" / "moons.py"


def moons_namespace(samples: int = 100) -> dict:
    """moons.py with no training steps run: its model, data and `loss()` (on fewer than
    its 100 points, for a quick run)."""
    source = MOONS.read_text()
    steps, points = "for k in range(3):", "make_moons(n_samples=100,"
    assert steps in source and points in source, "moons.py changed: update this benchmark"
    source = source.replace(steps, "for k in range(0):")
    source = source.replace(points, f"make_moons(n_samples={samples},")
    namespace = {"__name__": "moons", "print": lambda *a, **k: None}
    exec(compile(source, str(MOONS), "exec"), namespace)
    return namespace


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="one round on a few points: checks that it runs, measures nothing")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    ns = moons_namespace(6 if args.quick else 100)
    model, loss = ns["model"], ns["loss"]

    def plain_step() -> None:
        total, _ = loss()
        model.zero_grad()
        total.backward()

    def plain_step_same_gc() -> None:
        old = gc.get_threshold()
        gc.set_threshold(max(old[0], GC_GEN0_THRESHOLD), *old[1:])
        try:
            plain_step()
        finally:
            gc.set_threshold(*old)

    def recorded_step(probe: bool):
        def run() -> None:
            with mgtui.record(probe=probe):
                plain_step()
        return run

    times: dict[str, list[float]] = {k: [] for k in ("backward", "show", "step", "step_gc",
                                                     "record", "record+probe")}
    total, _ = loss()
    nodes = None
    for _ in range(rounds):
        model.zero_grad()
        times["backward"].append(timed(total.backward))
        start = time.perf_counter()
        trace = record_graph(total, {"total": total}, "bench", "")
        times["show"].append(time.perf_counter() - start)
        nodes = trace.node_count
        times["step"].append(timed(plain_step))
        times["step_gc"].append(timed(plain_step_same_gc))
        times["record"].append(timed(recorded_step(False)))
        times["record+probe"].append(timed(recorded_step(True)))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"moons: {nodes:,} nodes in the graph; medians of {rounds} rounds")
    print(f"plain loss.backward()             {med['backward'] * 1e3:8.1f} ms")
    print(f"show's reconstruction             {med['show'] * 1e3:8.1f} ms   "
          f"{med['show'] / med['backward']:.2f}x the backward")
    print(f"plain training step               {med['step'] * 1e3:8.1f} ms")
    print(f"plain, the recording's gc setting {med['step_gc'] * 1e3:8.1f} ms")
    for key, name in (("record", "in mgtui.record(probe=False)   "),
                      ("record+probe", "in mgtui.record() (with probe) ")):
        print(f"{name}   {med[key] * 1e3:8.1f} ms   {med[key] / med['step']:.2f}x plain, "
              f"{med[key] / med['step_gc']:.2f}x the same gc setting")


if __name__ == "__main__":
    main()
