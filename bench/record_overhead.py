"""Recording overhead: one `moons.py` training step recorded against the same step plain.

The step (forward, zero_grad, backward, update) runs as a scenario file, once under the
recorder and once with plain `exec`, alternating in one process, for `engine.Value` and
for PyPI micrograd. Prints the median time of each and their ratio, then the bytes per
recorded event of the finished trace and at the peak of recording (tracemalloc).

The recorder raises the collector's generation-0 threshold while a scenario runs (most
of a plain moons step is spent in the cyclic garbage collector). So that this cannot
hide the cost of the hooks, the plain step is also timed under that same setting: the
target ratio is against plain Python as it comes, and the "hooks alone" ratio is against
plain Python with the same collector setting.

    python bench/record_overhead.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # time this tree's recorder, not whichever mgtui is installed

from mgtui.recorder import GC_GEN0_THRESHOLD, load_scenario, record  # noqa: E402

MOONS = ROOT / "scenarios" / "moons.py"


def one_step_source(flavour: str) -> str:
    """moons.py cut down to one training step, on the engine or on PyPI micrograd."""
    source = MOONS.read_text()
    steps = "for k in range(3):"
    assert steps in source, "moons.py changed: update this benchmark"
    source = source.replace(steps, "for k in range(1):")
    if flavour == "micrograd":
        source = source.replace("from engine import Value", "from micrograd.engine import Value")
        source = source.replace("from engine.nn import MLP", "from micrograd.nn import MLP")
        assert "from engine" not in source
    return source


def plain(scenario) -> None:
    exec(scenario.code, {"__name__": "__main__", "__file__": str(scenario.path), "print": _quiet})


def _quiet(*args, **kwargs) -> None:
    pass


def plain_same_gc(scenario) -> None:
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], GC_GEN0_THRESHOLD), *old[1:])
    try:
        plain(scenario)
    finally:
        gc.set_threshold(*old)


def timed(fn, *args) -> float:
    gc.collect()
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mgtui-bench-"))
    print(f"python {sys.version.split()[0]}, {args.rounds} alternating rounds, median times")
    for flavour, target in (("engine", 1.3), ("micrograd", 1.5)):
        path = tmp / f"moons_step_{flavour}.py"
        path.write_text(one_step_source(flavour))
        scenario = load_scenario(path)
        record(scenario)  # warm up imports and caches
        plain_times, same_gc_times, recorded_times = [], [], []
        for _ in range(args.rounds):
            plain_times.append(timed(plain, scenario))
            recorded_times.append(timed(record, scenario))
            same_gc_times.append(timed(plain_same_gc, scenario))
        p, r = statistics.median(plain_times), statistics.median(recorded_times)
        q = statistics.median(same_gc_times)
        verdict = "ok" if r / p <= target else "OVER TARGET"
        print(f"{flavour:10s} plain {p*1000:7.1f} ms  recorded {r*1000:7.1f} ms  "
              f"ratio {r/p:.2f}x  (target <= {target}x: {verdict})")
        print(f"{'':10s} plain, same collector setting {q*1000:7.1f} ms  "
              f"hooks alone {r/q:.2f}x")

    scenario = load_scenario(tmp / "moons_step_engine.py")
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    trace = record(scenario)
    gc.collect()
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    events = len(trace) + trace.write_count
    print(f"memory     {len(trace):,} events + {trace.write_count:,} writes in backward calls "
          f"= {events:,} recorded events")
    print(f"           trace kept: {(kept - base) / events:6.1f} bytes/event  "
          f"(target <= 200)")
    print(f"           peak while recording: {(peak - base) / events:6.1f} bytes/event")


if __name__ == "__main__":
    main()
