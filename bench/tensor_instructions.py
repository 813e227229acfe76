"""Recording the tensor lesson's step, counted in instructions, side by side (issue 32).

The CPU time of a step of `scenarios/tensor_mlp.py` moves by several percent from run
to run on the shared machine (`array_costs_side_by_side.py` gives the same tree 3.0x
and 3.1x an hour apart), which hides the changes of a few percent that are left to
make. valgrind's callgrind counts instructions the same within 0.1% from run to run: so,
as `torch_instructions.py` does, each tree's process runs under callgrind with the
instrumentation off, and a helper compiled here switches it on around each part
measured only (the imports and the warm-up runs go at nearly native speed).

For each tree given (this one first), one process: the lesson plain (`exec`), then
recorded as the runner's child records it (`record_overhead.recorded`'s recorder), its
run and the trace built after it counted apart; each with 3 and with 13 training steps
on 100 points; a step is (13 - 3) / 10. Instructions are not time: what a recording
writes to fresh memory, the collector's pauses and the caches' misses count for less
here than on the clock; the end-of-run collection is counted (it runs in the recorded
run, as on the clock).

    python bench/tensor_instructions.py [--tree /tmp/main]
    python bench/tensor_instructions.py --quick   # no valgrind, a step each: does it run?
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from torch_instructions import helper_library, parts_counted  # noqa: E402

WORKER = r"""
import ctypes, gc, sys, tempfile, time
from pathlib import Path
tree, helper, short_n, long_n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, tree + "/bench")
sys.path.insert(0, tree)
import record_overhead as ro
import mgtui
assert Path(mgtui.__file__).resolve().parent.parent == Path(tree).resolve(), mgtui.__file__
from mgtui.run.child import child_recorder
lib = ctypes.CDLL(helper) if helper else None
tmp = Path(tempfile.mkdtemp())
short, long = ro.tensor_variant(tmp, short_n, 100), ro.tensor_variant(tmp, long_n, 100)
for sc in (short, long):
    ro.plain(sc), ro.recorded(sc, True)
def part(fn, *args):
    if lib: lib.cg_start()
    out = fn(*args)
    if lib: lib.cg_stop()
    return out
for sc in (short, long):
    gc.collect()
    part(ro.plain, sc)
for sc in (short, long):
    recorder, _ = child_recorder(sc, reads_values=True, inline=True)
    gc.collect()
    error, output = part(recorder.execute)
    part(recorder.finish, error, output)
print("every part ran", flush=True)
"""
NAMES = ("plain", "run", "build")


def measure(tree: Path, tmp: Path, helper: Path | None, steps: tuple[int, int]
            ) -> dict[str, float]:
    """{'plain'|'run'|'build': instructions a step} of one tree, one process."""
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONHASHSEED": "0"}  # (a random seed moves the count by up to 1%)
    v = parts_counted([WORKER, str(tree), str(helper or ""), *map(str, steps)], tree,
                      tmp / tree.name, helper, env)
    if v is None:
        return {name: 0.0 for name in NAMES}
    # parts in order: plain short, plain long, then (run, build) short, (run, build) long
    per = steps[1] - steps[0]
    return {"plain": (v[1] - v[0]) / per, "run": (v[4] - v[2]) / per,
            "build": (v[5] - v[3]) / per}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], help="another mgtui tree")
    ap.add_argument("--quick", action="store_true", help="no valgrind: does it run?")
    args = ap.parse_args()
    trees = [ROOT] + [Path(t).resolve() for t in args.tree]
    steps = (1, 2) if args.quick else (3, 13)
    with tempfile.TemporaryDirectory() as tmp:
        helper = None if args.quick else helper_library(Path(tmp))
        if helper is None and not args.quick:
            sys.exit("needs valgrind (and its headers, valgrind/callgrind.h) and a C compiler")
        with ThreadPoolExecutor(2) as pool:  # (two processes at a time: two cores)
            found = list(pool.map(lambda tree: measure(tree, Path(tmp), helper, steps), trees))
    print(f"instructions of one step of tensor_mlp.py ({steps[1]} steps against {steps[0]}),"
          " millions:")
    for tree, r in zip(trees, found):
        plain = r["plain"] or 1.0
        total = r["run"] + r["build"]
        print(f"  {tree.name:20s} plain {r['plain'] / 1e6:6.3f}   run {r['run'] / 1e6:6.3f} "
              f"({r['run'] / plain:4.2f}x)   build {r['build'] / 1e6:6.3f}   run and build "
              f"{total / 1e6:6.3f} ({total / plain:4.2f}x)")
    print("every run ran")


if __name__ == "__main__":
    main()
