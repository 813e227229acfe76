"""What naming nodes costs a recording: one `moons.py` training step recorded with the
names of `mgtui.naming` and without them, alternating in one process (medians).

"Without" swaps the recorder's per-node naming call for one that does nothing and skips
the walk for parameter paths at the end, so the ratio is the whole cost of the names.

    python bench/naming_overhead.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # time this tree's recorder, not whichever mgtui is installed
sys.path.insert(0, str(ROOT / "bench"))

from record_overhead import one_step_source  # noqa: E402

from mgtui import naming  # noqa: E402
from mgtui.recorder import load_scenario, record  # noqa: E402


def without_names():
    """Patch the namer to do nothing; returns a function that puts it back."""
    made_hook, finish = naming.Namer._made_hook, naming.Namer.finish
    naming.Namer._made_hook = lambda self: (lambda nid, frame: None)
    naming.Namer.finish = lambda self, scope, is_leaf: None

    def restore() -> None:
        naming.Namer._made_hook, naming.Namer.finish = made_hook, finish

    return restore


def timed(scenario, named: bool) -> tuple[float, int]:
    restore = None if named else without_names()
    try:
        start = time.perf_counter()
        trace = record(scenario)
        elapsed = time.perf_counter() - start
    finally:
        if restore is not None:
            restore()
    names = sum(1 for n in range(trace.node_count) if trace.derived_name(n))
    return elapsed, names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mgtui-bench-"))
    path = tmp / "moons_step_engine.py"
    path.write_text(one_step_source("engine"))
    scenario = load_scenario(path)
    timed(scenario, True)  # warm up: imports, caches
    with_names, without = [], []
    counts = set()
    for _ in range(args.rounds):
        t, n = timed(scenario, True)
        with_names.append(t)
        counts.add(n)
        without.append(timed(scenario, False)[0])
    a, b = statistics.median(with_names), statistics.median(without)
    print(f"python {sys.version.split()[0]}, {args.rounds} alternating rounds, median times")
    print(f"moons, one step: without names {b * 1000:.1f} ms, with names {a * 1000:.1f} ms, "
          f"ratio {a / b:.3f}x; nodes named: {sorted(counts)}")


if __name__ == "__main__":
    main()
