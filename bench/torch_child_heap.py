"""The torch MLP recorded as the runner's child records it, in a fresh process each time,
side by side for two trees (issue 21 target: what recording a torch scenario costs).

`bench/torch_overhead.py` times recordings in one long-lived process, where torch's
import is long over and the collector's counts are wherever the runs before left them.
The runner's child is a fresh process: the scenario imports torch (some 170,000 objects
the collector tracks), then records, and ends with `os._exit`. Here each run is such a
process: torch imported, `scenarios/torch_mlp.py` with `--steps` training steps recorded
by `child_recorder` with `freeze_at_end` set as `mgtui.run.child.serve` sets it, and the
CPU time of the recording and of the collector's passes during it (`gc.callbacks`)
printed; the trees alternate, medians over `--rounds`.

    python bench/torch_child_heap.py --tree /tmp/main [--steps 100,400] [--rounds 5]
    python bench/torch_child_heap.py --quick   # seconds: does it still run?
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKER = r"""
import gc, json, sys, time
tree, n = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, tree + "/bench")
sys.path.insert(0, tree)
import torch_overhead as to  # (imports torch, as the scenario's first line does)
from mgtui.run.child import child_recorder
collecting = [0.0, 0.0]
def timed(phase, info):
    if phase == "start":
        collecting[1] = time.process_time()
    else:
        collecting[0] += time.process_time() - collecting[1]
scenario = to.load_scenario(to.MLP)
scenario = to.steps(scenario, n) if n != 10 else scenario
gc.callbacks.append(timed)
start = time.process_time()
recorder, _ = child_recorder(scenario, capture_output=True)
recorder.freeze_at_end = True  # (as `mgtui.run.child.serve` sets it)
error, _ = recorder.execute()
assert error is None, error
print(json.dumps({"recorded": time.process_time() - start, "collector": collecting[0]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], help="another mgtui tree")
    ap.add_argument("--steps", default="100,400")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="one run of 10 steps: does it run?")
    args = ap.parse_args()
    if args.quick:
        args.steps, args.rounds = "10", 1
    trees = [str(ROOT), *args.tree]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    got: dict = {}
    for _ in range(args.rounds):
        for n in map(int, args.steps.split(",")):
            for tree in trees:
                done = subprocess.run([sys.executable, "-c", WORKER, tree, str(n)], env=env,
                                      capture_output=True, text=True, check=True)
                got.setdefault((tree, n), []).append(json.loads(done.stdout.splitlines()[-1]))
    print(f"torch_mlp.py recorded as the runner's child does, a fresh process a run, "
          f"medians of {args.rounds} (CPU):")
    for (tree, n), runs in got.items():
        rec = statistics.median(r["recorded"] for r in runs) * 1000
        gcs = statistics.median(r["collector"] for r in runs) * 1000
        print(f"  {Path(tree).name:20s} {n:4d} steps: recorded {rec:7.1f} ms, of which the "
              f"collector {gcs:6.1f} ms")


if __name__ == "__main__":
    main()
