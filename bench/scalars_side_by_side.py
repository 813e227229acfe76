"""Scalar traces under two mgtui trees, side by side in one run: does the array support
(issue 20) cost a trace of floats anything?

For each tree given (this one, and another checkout, such as a worktree of main), in
alternating rounds, a child process imports that tree's mgtui and measures, on one
`moons.py` training step (about 65,000 nodes): the CPU time of the step plain and
recorded (the runner child's recorder, the trace built after it; median of `--inner`
alternations in that process) and their ratio; the size of the saved binary and JSON
traces; and the CPU time of loading each. Prints each tree's medians over the rounds and
the ratios of the other trees to the first.

    python bench/scalars_side_by_side.py --tree /tmp/main-worktree [--rounds 5]
    python bench/scalars_side_by_side.py --quick     # seconds: does it still run?
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKER = r"""
import atexit, gc, json, shutil, statistics, sys, tempfile, time
from pathlib import Path
tree, samples, inner = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, tree)
import mgtui
assert Path(mgtui.__file__).resolve().parent.parent == Path(tree).resolve(), mgtui.__file__
from mgtui.recording.recorder import load_scenario
from mgtui.run.child import child_recorder
from mgtui.trace import binary
from mgtui.trace.export import dumps, load

source = (Path(tree) / "scenarios" / "moons.py").read_text()
source = source.replace("for k in range(3):", "for k in range(1):")
source = source.replace("make_moons(n_samples=100,", f"make_moons(n_samples={samples},")
tmp = Path(tempfile.mkdtemp())
atexit.register(shutil.rmtree, tmp, ignore_errors=True)
path = tmp / "moons_step.py"
path.write_text(source)
scenario = load_scenario(path)

def plain():
    exec(scenario.code, {"__name__": "__main__", "__file__": str(path), "print": lambda *a, **k: None})

def recorded():
    recorder, _ = child_recorder(scenario)
    error, output = recorder.execute()
    return recorder.finish(error, output)

def cpu(fn):
    gc.collect()
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out

trace = recorded()  # (warm)
times = {"plain": [], "recorded": [], "load binary": [], "load json": []}
as_binary, as_json = tmp / "t.mgtrace", tmp / "t.json"
as_binary.write_bytes(binary.dumpb(trace))
as_json.write_text(dumps(trace), encoding="utf-8")
for _ in range(inner):
    times["plain"].append(cpu(plain)[0])
    times["recorded"].append(cpu(recorded)[0])
    times["load binary"].append(cpu(lambda: load(as_binary))[0])
    times["load json"].append(cpu(lambda: load(as_json))[0])
result = {k: statistics.median(v) for k, v in times.items()}
result.update(nodes=trace.node_count, events=len(trace), writes=trace.write_count,
              binary=as_binary.stat().st_size, json=as_json.stat().st_size)
print(json.dumps(result))
"""


def measure(tree: Path, samples: int, inner: int) -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, str(tree), str(samples), str(inner)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[],
                        help="another mgtui checkout to compare with this one")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--inner", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small: checks that it runs")
    args = parser.parse_args()
    samples = 100
    if args.quick:
        args.rounds, args.inner, samples = 1, 1, 6
    trees = [ROOT] + [Path(t).resolve() for t in args.tree]
    runs: dict[Path, list[dict]] = {t: [] for t in trees}
    for _ in range(args.rounds):
        for tree in trees:  # alternating, round by round
            runs[tree].append(measure(tree, samples, args.inner))
    med = {t: {k: statistics.median(r[k] for r in runs[t]) for k in runs[t][0]} for t in trees}
    print(f"python {sys.version.split()[0]}, one moons step ({samples} points), {args.rounds} "
          f"alternating rounds of a child process per tree, {args.inner} inner, median CPU")
    first = med[trees[0]]
    for tree in trees:
        m = med[tree]
        print(f"{str(tree):32s} {int(m['nodes']):,} nodes {int(m['events']):,} events "
              f"{int(m['writes']):,} writes")
        print(f"{'':4s}record {m['recorded']*1000:7.1f} ms / plain {m['plain']*1000:7.1f} ms "
              f"= {m['recorded']/m['plain']:.3f}x; files: binary {m['binary']:,} B, json "
              f"{m['json']:,} B; load binary {m['load binary']*1000:.1f} ms, json "
              f"{m['load json']*1000:.1f} ms")
    for tree in trees[1:]:
        m = med[tree]
        print(f"this tree / {tree}: recording ratio "
              f"{(first['recorded']/first['plain']) / (m['recorded']/m['plain']):.3f}, "
              f"recorded time {first['recorded']/m['recorded']:.3f}, binary size "
              f"{first['binary']/m['binary']:.4f}, json size {first['json']/m['json']:.4f}, "
              f"binary load {first['load binary']/m['load binary']:.3f}, json load "
              f"{first['load json']/m['load json']:.3f}")


if __name__ == "__main__":
    main()
