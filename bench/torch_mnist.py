"""Recording torch at a realistic size, under two mgtui trees side by side in one run
(issue 32: an MNIST-size MLP's training step at most 3.0x plain, `scenarios/torch_mlp.py`'s
at most 2.5x).

- `mnist`: an MLP 784-256-128-10 (`nn.Sequential` of `nn.Linear` and `nn.ReLU`), a
  batch of 64 (random images and labels, 8 batches taken in turn), `F.cross_entropy`,
  `torch.optim.SGD` (`opt.zero_grad()`, `loss.backward()`, `opt.step()`);
- `mlp`: `scenarios/torch_mlp.py` (the lecture's 41-parameter MLP).

For each tree given (this one first, then each `--tree`, such as a `git archive` of the
base commit), in alternating rounds, a child process imports that tree's mgtui and its
own `bench/torch_overhead.py`, and times plain `exec` against the recording as the
runner's child makes it, its records cut into chunks after (`torch_overhead.recorded`),
alternating, CPU of the process, medians; a step is (long run - short run) / the steps
between. torch runs one thread in every child (`torch.set_num_threads(1)`, and OpenBLAS's
and OpenMP's threads held to 1), in both trees alike: on a shared machine the CPU time of
helper threads waiting their turn moves a plain step more than the recording does. Also
says whether the recorded run's final gradients are bit for bit the plain run's.

    python bench/torch_mnist.py --tree /tmp/base [--rounds 3] [--inner 5]
    python bench/torch_mnist.py --quick   # seconds: does it still run?
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
MNIST = """import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                      nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
images = torch.rand(8, 64, 784)
labels = torch.randint(0, 10, (8, 64))
for k in range(STEPS):
    logits = model(images[k % 8])
    loss = F.cross_entropy(logits, labels[k % 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
TARGETS = {"mnist": 3.0, "mlp": 2.5}
WORKER = r"""
import contextlib, io, json, statistics, sys, tempfile
from dataclasses import replace
from pathlib import Path
tree, kind, inner, short_n, long_n = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
                                      int(sys.argv[4]), int(sys.argv[5]))
sys.path.insert(0, tree + "/bench")
sys.path.insert(0, tree)
import torch
torch.set_num_threads(1)
import mgtui
assert Path(mgtui.__file__).resolve().parent.parent == Path(tree).resolve(), mgtui.__file__
import torch_overhead as to

def mnist(n):
    path = Path(tempfile.mkdtemp()) / "mnist_mlp.py"
    path.write_text(MNIST.replace("STEPS", str(n)))
    return to.load_scenario(path)

if kind == "mnist":
    short, long = mnist(short_n), mnist(long_n)
else:
    base = to.load_scenario(to.MLP)
    short = to.steps(base, short_n) if short_n != 10 else base
    long = to.steps(base, long_n)
for sc in (short, long):
    to.plain(sc), to.recorded(sc)
t = {k: [] for k in ("ps", "rs", "pl", "rl")}
for _ in range(inner):
    for tag, sc in (("s", short), ("l", long)):
        t["p" + tag].append(to.plain(sc)[0])
        run, cut, _, _ = to.recorded(sc)
        t["r" + tag].append(run + cut)
m = {k: statistics.median(v) for k, v in t.items()}
steps = long_n - short_n
out = {"plain": (m["pl"] - m["ps"]) / steps, "rec": (m["rl"] - m["rs"]) / steps}
torch.manual_seed(0)
with contextlib.redirect_stdout(io.StringIO()):
    _, scope = to.plain(short)
    want = {k: p.grad.clone() for k, p in scope["model"].named_parameters()}
    got = to.recorded(short)[2].globals["model"]
out["same"] = float(all(torch.equal(p.grad, want[k]) for k, p in got.named_parameters()))
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], help="another mgtui tree")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--inner", type=int, default=5)
    ap.add_argument("--kinds", default="mnist,mlp")
    ap.add_argument("--quick", action="store_true", help="one round of one: does it run?")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.inner = 1, 1
    steps = {"mnist": (2, 3) if args.quick else (5, 25),
             "mlp": (10, 11) if args.quick else (10, 40)}
    trees = [str(ROOT), *args.tree]
    kinds = args.kinds.split(",")
    env = dict(os.environ)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = "1"
    results: dict = {(t, k): [] for t in trees for k in kinds}
    for _ in range(args.rounds):
        for tree in trees:
            for kind in kinds:
                short_n, long_n = steps[kind]
                done = subprocess.run(
                    [sys.executable, "-c", f"MNIST = {MNIST!r}\n" + WORKER, tree, kind,
                     str(args.inner), str(short_n), str(long_n)],
                    capture_output=True, text=True, check=True, env=env)
                results[tree, kind].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"{args.rounds} rounds alternating trees, {args.inner} alternations of plain and "
          f"recorded in each; a training step, CPU, medians")
    for kind in kinds:
        cells = []
        for tree in trees:
            rs = results[tree, kind]
            plain = statistics.median(r["plain"] for r in rs)
            rec = statistics.median(r["rec"] for r in rs)
            ratio = statistics.median(r["rec"] / r["plain"] for r in rs)
            same = all(r["same"] == 1.0 for r in rs)
            cells.append(f"{Path(tree).name}: {plain * 1000:.3f} -> {rec * 1000:.3f} ms "
                         f"= {ratio:.2f}x (grads bit for bit: {same})")
        print(f"{kind:6s} " + "   ".join(cells) + f"   (target <= {TARGETS[kind]:g}x)")


if __name__ == "__main__":
    main()
