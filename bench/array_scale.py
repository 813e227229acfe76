"""Array traces at scale (issue 32, point 2): a chain of 4-element numpy arrays against
a scalar chain of the same node count, under two mgtui trees side by side in one run.

For each tree (this one, and `--tree`, another checkout such as /work/main) and each
engine (scalar `engine.value.Value`, array `engine.tensor.Tensor` of 4 elements), in a
fresh process each:

- record: `mgtui SCENARIO --save FILE`, CPU time of it and its runner child;
- open: `mgtui.trace.binary.load` of the file, CPU time, and the peak resident set
  over the same process with the imports done (bytes a node);
- G: the app (headless, 80×24) opening the file, then `G` and `g`, each from the key
  to the repainted screen (wall: the app's own threads).

Prints a table and the ratios the issue sets: open array / scalar (<= 3x), peak memory
array / scalar a node (<= 2x), G on the array trace (<= 1 s).

    python bench/array_scale.py --tree /work/main [--nodes 100000]
    python bench/array_scale.py --quick        # 10,000 nodes, this tree only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCENARIOS = {
    "scalar": '''
from engine.value import Value
for _ in range({chains}):
    x = Value(1.0)
    for _ in range(500):
        x = x * 1.0001 + 0.5
    x.backward()
''',
    "array": '''
import numpy as np
from engine.tensor import Tensor
for _ in range({chains}):
    x = Tensor(np.ones(4))
    for _ in range(500):
        x = x * 1.0001 + 0.5
    x.backward()
''',
}  # (4 nodes an iteration: the op, and the constant made a node, twice)

RECORD = textwrap.dedent("""
    import json, resource, sys
    from mgtui.cli import main
    code = main([{path!r}, "--save", {out!r}, "--max-nodes", "20000000", "--max-memory", "16G"])
    cpu = sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF,
              resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))
    print(json.dumps(dict(code=code, cpu=cpu)))
""")

LOAD = textwrap.dedent("""
    import json, resource, time, gc
    import numpy
    from mgtui.trace.binary import load
    from mgtui.trace.load_limits import LoadLimits
    import mgtui.trace.export, mgtui.trace.arrays
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t = time.process_time()
    trace = load({path!r}, LoadLimits(20_000_000, 16 << 30))
    cpu = time.process_time() - t
    print(json.dumps(dict(cpu=cpu, nodes=trace.node_count,
                          peak=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base)))
""")

APP = textwrap.dedent("""
    import asyncio, json, time
    from pathlib import Path
    from mgtui.tui.app import MgtuiApp

    async def main():
        out = {{}}
        app = MgtuiApp(Path({path!r}), max_nodes=20_000_000, max_memory=16 << 30)
        async with app.run_test(size=(80, 24)) as pilot:
            while app.debugger.trace is None or app.loading:
                await pilot.pause(0.02)
            await pilot.pause()
            for key in ("G", "g", "G"):
                t = time.perf_counter()
                await pilot.press(key)
                await pilot.pause()
                out.setdefault(key, time.perf_counter() - t)
        print(json.dumps(out))

    asyncio.run(main())
""")


def child(program: str, tree: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          cwd=str(tree), env=env)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.splitlines()[-1])


def measure(tree: Path, kind: str, nodes: int, tmp: Path, app: bool) -> dict:
    scenario = tmp / f"{kind}.py"
    scenario.write_text(SCENARIOS[kind].format(chains=max(1, nodes // 2000)))
    saved = tmp / f"{kind}-{tree.name}.mgtrace"
    rec = child(RECORD.format(path=str(scenario), out=str(saved)), tree)
    if rec["code"] or not saved.exists():
        return dict(failed=f"--save exited {rec['code']}")
    row = dict(record=rec["cpu"], file=saved.stat().st_size,
               **child(LOAD.format(path=str(saved)), tree))
    if app:
        row.update(child(APP.format(path=str(saved)), tree))
    saved.unlink()
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, help="another checkout to measure beside this one")
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-app", action="store_true")
    args = parser.parse_args()
    nodes = 10_000 if args.quick else args.nodes
    trees = [ROOT] + ([args.tree.resolve()] if args.tree and not args.quick else [])
    print(f"{nodes:,} nodes | record CPU | file | open CPU | open peak (a node) | G | g")
    with tempfile.TemporaryDirectory() as tmp:
        for tree in trees:
            rows = {kind: measure(tree, kind, nodes, Path(tmp), not args.no_app)
                    for kind in ("scalar", "array")}
            failed = [kind for kind, r in rows.items() if "failed" in r]
            for kind in failed:
                print(f"{tree} {kind}: {rows.pop(kind)['failed']}")
            if failed:
                continue
            for kind, r in rows.items():
                print(f"{tree} {kind}: {r['record']:.2f} s | {r['file'] / 1e6:.1f} MB | "
                      f"{r['cpu']:.3f} s | {r['peak'] / 1e6:.0f} MB "
                      f"({r['peak'] / r['nodes']:.0f} B) | {r.get('G', float('nan')):.2f} s | "
                      f"{r.get('g', float('nan')):.2f} s")
            a, s = rows["array"], rows["scalar"]
            print(f"{tree} array/scalar: record {a['record'] / s['record']:.1f}x, open "
                  f"{a['cpu'] / s['cpu']:.1f}x (<= 3x), peak a node "
                  f"{a['peak'] / max(s['peak'], 1):.1f}x (<= 2x), G {a.get('G', 0):.2f} s "
                  "(<= 1 s)")


if __name__ == "__main__":
    main()
