"""What recording a tensor or a torch scenario costs, under two mgtui trees side by side
in one run (issue 32's targets a step: the tensor lesson at most 3x plain, with arrays
100x as big 2x, float32 200k-element arrays 1.5x, `torch_mlp.py` 2.5x).

For each tree given (this one, and another checkout, such as a `git archive` of main), in
alternating rounds, a child process imports that tree's mgtui and its own
`bench/record_overhead.py` or `bench/torch_overhead.py` and times, CPU of the process,
median of `--inner` alternations of plain and recorded:

- `tensor`: `scenarios/tensor_mlp.py` recorded (the runner child's recorder, the trace
  built after it) against plain `exec`: as bundled (3 steps), a step (33 steps against
  3, over 30), and a step's run alone, the trace built after it left out;
  `tensor100x`: a step with arrays 100 times as big (10,000 points), in a process of
  its own (after those, the small runs' CPU times in the same process took stalls of
  35-50 ms, in one arbitrary call, in either tree);
- `f32`: a float32 engine of its own, 200k-element arrays (`F32`), a step (33 steps
  against 3, over 30), recorded with the trace built after it, against plain; and the
  minor page faults a step of each (memory touched for the first time);
- `torch`: `scenarios/torch_mlp.py` recorded as the runner's child records it, its
  records cut into chunks after, against plain: as bundled (10 steps), and a step
  (40 steps against 10, over 30), without and with the chunks cut.

Prints each tree's medians over the rounds, and the ratio of each tree's figure to the
first tree's. The children run with OpenBLAS (and OpenMP, MKL) held to `--blas-threads`
threads, 1 by default, in both trees alike: on a busy shared machine a threaded matrix
product's helper threads spin for their turn, and their CPU time, counted in the
process's, moved a plain step of the 10,000-point lesson between 20 and 90 ms. (A child process a kind: torch's thousand modules loaded would be in the
tensor recording's scan of the loaded modules.)

    python bench/array_costs_side_by_side.py --tree /tmp/main [--rounds 5] [--inner 5]
        [--kinds tensor,tensor100x,torch,f32] [--blas-threads 1]
    python bench/array_costs_side_by_side.py --quick     # seconds: does it still run?
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

# A float32 tensor engine of its own (`engine.tensor` is float64), each array 200,000
# elements: a step is a forward of 5 nodes, a backward, an update in place.
F32 = """
import numpy as np

class T:
    def __init__(self, data, _children=(), _op=''):
        self.data = data
        self.grad = np.zeros_like(data)
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op
    def __add__(self, other):
        out = T(self.data + other.data, (self, other), '+')
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out
    def __mul__(self, other):
        out = T(self.data * other.data, (self, other), '*')
        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out
    def tanh(self):
        t = np.tanh(self.data)
        out = T(t, (self,), 'tanh')
        def _backward():
            self.grad += (1 - t * t) * out.grad
        out._backward = _backward
        return out
    def backward(self):
        topo, seen = [], set()
        def build(v):
            if v not in seen:
                seen.add(v)
                for c in v._prev:
                    build(c)
                topo.append(v)
        build(self)
        self.grad = np.ones_like(self.data)
        for v in reversed(topo):
            v._backward()

rng = np.random.default_rng(0)
x = T(rng.normal(size=200_000).astype(np.float32))
w = T(rng.normal(size=200_000).astype(np.float32))
b = T(np.zeros(200_000, np.float32))
for k in range(STEPS):
    y = (x * w + b).tanh()
    w.grad[:] = 0
    b.grad[:] = 0
    y.backward()
    w.data -= np.float32(0.01) * w.grad
    b.data -= np.float32(0.01) * b.grad
"""

WORKER = r"""
import contextlib, io, json, statistics, sys, tempfile
from pathlib import Path
tree, kind, inner = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, tree + "/bench")
sys.path.insert(0, tree)
import mgtui
assert Path(mgtui.__file__).resolve().parent.parent == Path(tree).resolve(), mgtui.__file__
out = {}
if kind in ("tensor", "tensor100x"):
    import record_overhead as ro
    tmp = Path(tempfile.mkdtemp())
    points = 100 if kind == "tensor" else 10_000
    cases = [(3, points), (33, points)]
    scenarios = {sp: ro.tensor_variant(tmp, *sp) for sp in cases}
    for sc in scenarios.values():
        ro.recorded(sc, True)
    t = {sp: {"plain": [], "rec": [], "run": []} for sp in cases}
    for _ in range(inner):
        for sp, sc in scenarios.items():
            t[sp]["plain"].append(ro.timed(ro.plain, sc))
            run, built = ro.recorded(sc, True)
            t[sp]["rec"].append(run + built)
            t[sp]["run"].append(run)
    m = {sp: {k: statistics.median(v) for k, v in d.items()} for sp, d in t.items()}
    def step(a, b, k):
        return (m[b][k] - m[a][k]) / 30
    if kind == "tensor":
        out = {"tensor bundled plain": m[(3, 100)]["plain"], "tensor bundled rec": m[(3, 100)]["rec"],
               "tensor step plain": step((3, 100), (33, 100), "plain"),
               "tensor step rec": step((3, 100), (33, 100), "rec"),
               "tensor step run": step((3, 100), (33, 100), "run")}
    else:
        out = {"tensor 100x step plain": step((3, 10_000), (33, 10_000), "plain"),
               "tensor 100x step rec": step((3, 10_000), (33, 10_000), "rec")}
elif kind == "f32":
    import record_overhead as ro
    tmp = Path(tempfile.mkdtemp())
    scenarios = {}
    for steps in (3, 33):
        path = tmp / f"f32_{steps}.py"
        path.write_text(F32.replace("STEPS", str(steps)))
        scenarios[steps] = ro.load_scenario(path)
        ro.recorded(scenarios[steps], True)
    import resource
    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = {sp: {"plain": [], "rec": [], "plain faults": [], "rec faults": []} for sp in scenarios}
    for _ in range(inner):
        for sp, sc in scenarios.items():
            f = faults()
            t[sp]["plain"].append(ro.timed(ro.plain, sc))
            t[sp]["plain faults"].append(faults() - f)
            f = faults()
            run, built = ro.recorded(sc, True)
            t[sp]["rec faults"].append(faults() - f)
            t[sp]["rec"].append(run + built)
    m = {sp: {k: statistics.median(v) for k, v in d.items()} for sp, d in t.items()}
    out = {f"f32 step {k}": (m[33][k] - m[3][k]) / 30 for k in t[3]}
else:
    import torch_overhead as to
    short = to.load_scenario(to.MLP)
    long = to.steps(short, 40)
    for sc in (short, long):
        to.plain(sc), to.recorded(sc)
    t = {k: [] for k in ("p10", "r10", "c10", "p40", "r40", "c40")}
    for _ in range(inner):
        for tag, sc in (("10", short), ("40", long)):
            t["p" + tag].append(to.plain(sc)[0])
            run, cut, _, _ = to.recorded(sc)
            t["r" + tag].append(run)
            t["c" + tag].append(cut)
    m = {k: statistics.median(v) for k, v in t.items()}
    out = {"torch bundled plain": m["p10"], "torch bundled rec": m["r10"] + m["c10"],
           "torch step plain": (m["p40"] - m["p10"]) / 30,
           "torch step rec": (m["r40"] - m["r10"]) / 30,
           "torch step rec+cut": (m["r40"] + m["c40"] - m["r10"] - m["c10"]) / 30}
    with contextlib.redirect_stdout(io.StringIO()):
        out["torch grads bit for bit"] = float(to.final_grads_match(short))
print(json.dumps(out))
"""

# (row, recorded, plain, issue 32's target a step: None where it sets none)
RATIOS = [("tensor as bundled", "tensor bundled rec", "tensor bundled plain", None),
          ("tensor, a step", "tensor step rec", "tensor step plain", 3.0),
          ("  the run alone (no trace built)", "tensor step run", "tensor step plain", None),
          ("tensor, a step, 100x elements", "tensor 100x step rec", "tensor 100x step plain", 2.0),
          ("float32 200k elements, a step", "f32 step rec", "f32 step plain", 1.5),
          ("torch as bundled (chunks cut)", "torch bundled rec", "torch bundled plain", None),
          ("torch, a step", "torch step rec", "torch step plain", None),
          ("torch, a step, chunks cut", "torch step rec+cut", "torch step plain", 2.5)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], help="another mgtui tree")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--inner", type=int, default=5)
    ap.add_argument("--kinds", default="tensor,tensor100x,torch")
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="threads for OpenBLAS/OpenMP/MKL in the children (0: as they come)")
    ap.add_argument("--quick", action="store_true", help="one round of one: does it run?")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.inner = 1, 1
    trees = [str(ROOT), *args.tree]
    kinds = args.kinds.split(",")
    env = dict(os.environ)
    if args.blas_threads:
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[name] = str(args.blas_threads)
    results: dict[str, list[dict]] = {t: [] for t in trees}
    for _ in range(args.rounds):
        for tree in trees:
            merged: dict = {}
            for kind in kinds:
                done = subprocess.run([sys.executable, "-c", f"F32 = {F32!r}\n" + WORKER, tree,
                                       kind, str(args.inner)],
                                      capture_output=True, text=True, check=True, env=env)
                merged.update(json.loads(done.stdout.strip().splitlines()[-1]))
            results[tree].append(merged)
    medians = {t: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
               for t, rs in results.items()}
    print(f"{args.rounds} rounds alternating trees, {args.inner} alternations of plain and "
          f"recorded in each; medians, CPU (load average now: {os.getloadavg()[0]:.1f})")
    for name, rec, plain, target in RATIOS:
        if rec not in medians[trees[0]]:
            continue
        cells = []
        for t in trees:
            m = medians[t]
            cells.append(f"{Path(t).name}: {m[plain] * 1000:.3f} -> {m[rec] * 1000:.3f} ms "
                         f"= {m[rec] / m[plain]:.2f}x")
        goal = f"target <= {target:g}x" if target is not None else "no target of its own"
        print(f"{name:32s} " + "   ".join(cells) + f"   ({goal})")
    if "f32 step plain faults" in medians[trees[0]]:
        print("float32, page faults a step (minor): " + "   ".join(
            f"{Path(t).name}: plain {medians[t]['f32 step plain faults']:.0f}, recorded "
            f"{medians[t]['f32 step rec faults']:.0f}" for t in trees))
    for t in trees:
        if "torch grads bit for bit" in medians[t]:
            print(f"torch final grads bit for bit the plain run's ({Path(t).name}): "
                  f"{medians[t]['torch grads bit for bit'] == 1.0}")


if __name__ == "__main__":
    main()
