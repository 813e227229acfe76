"""What naming nodes costs a recording: one `moons.py` training step, and a long chain
`y = y + 1e-6` (every node made under an assignment at the scenario's top level, the
case that costs the namer most), recorded with the names of `mgtui.recording.naming` and without
them, alternating in one process; medians of this process's CPU time.

"Without" gives the namer no assignments to watch (so no node is a candidate) and skips
the walk for parameter paths at the end, so the ratio is the whole cost of the names.

    python bench/naming_overhead.py [--rounds 7] [--chain-nodes 300000]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # time this tree's recorder, not whichever mgtui is installed
sys.path.insert(0, str(ROOT / "bench"))

from record_overhead import CHAIN, one_step_source, scratch_dir  # noqa: E402

from mgtui.recording import naming
from mgtui.recording.recorder import GC_GEN0_THRESHOLD, Recorder, load_scenario  # noqa: E402


def without_names():
    """Patch the namer to name nothing; returns a function that puts it back."""
    init, finish = naming.Namer.__init__, naming.Namer.finish

    def no_spots(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        self.spots.clear()  # no assignment to watch: the recorder never calls it

    naming.Namer.__init__ = no_spots
    naming.Namer.finish = lambda self, scope, is_leaf: None

    def restore() -> None:
        naming.Namer.__init__, naming.Namer.finish = init, finish

    return restore


def timed(scenario, named: bool) -> tuple[float, int]:
    """CPU time of recording `scenario` (running it, then its names resolved) under the
    recorder's collector setting, and how many nodes got a name."""
    restore = None if named else without_names()
    old = gc.get_threshold()
    try:
        recorder = Recorder(scenario)
        gc.collect()
        gc.set_threshold(max(old[0], GC_GEN0_THRESHOLD), *old[1:])
        start = time.process_time()
        recorder.execute()
        names = recorder.resolve_names()
        elapsed = time.process_time() - start
    finally:
        gc.set_threshold(*old)
        if restore is not None:
            restore()
    return elapsed, len(names)


def compare(label: str, scenario, rounds: int) -> None:
    timed(scenario, True)  # warm up: imports, caches
    with_names, without = [], []
    counts = set()
    for _ in range(rounds):
        t, n = timed(scenario, True)
        with_names.append(t)
        counts.add(n)
        without.append(timed(scenario, False)[0])
    a, b = statistics.median(with_names), statistics.median(without)
    print(f"{label}: without names {b * 1000:.1f} ms, with names {a * 1000:.1f} ms, "
          f"ratio {a / b:.3f}x; nodes named: {sorted(counts)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--chain-nodes", type=int, default=300_000, help="0: skip the chain")
    parser.add_argument("--quick", action="store_true",
                        help="small and fast, for the test suite: measures nothing")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.chain_nodes = 1, 1_000
    tmp = scratch_dir()
    print(f"python {sys.version.split()[0]}, {args.rounds} alternating rounds, "
          "median CPU times")
    path = tmp / "moons_step_engine.py"
    path.write_text(one_step_source("engine"))
    compare("moons, one step", load_scenario(path), args.rounds)
    if args.chain_nodes:
        path = tmp / "chain.py"
        path.write_text(CHAIN.replace("NODES", str(args.chain_nodes)))
        compare(f"chain of {args.chain_nodes:,} nodes", load_scenario(path), args.rounds)


if __name__ == "__main__":
    main()
