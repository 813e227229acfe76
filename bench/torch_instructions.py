"""Recording a torch training step, counted in instructions, side by side (issue 21).

CPU time on the shared machine moves by 2x between runs of the same tree, and the
machine's performance counters are not there to read (`perf stat -e instructions`
says "not supported"). valgrind's callgrind counts instructions the same within 0.1%
from run to run; but torch's import under it takes minutes. So each process runs under
callgrind with the instrumentation off, and a helper of three lines, compiled here
(valgrind's client requests, `valgrind/callgrind.h`), switches it on around each part
measured only: torch's import and the warm-up runs go at (nearly) native speed.

For each tree given (this one first), one process: `scenarios/torch_mlp.py` plain, under
a `TorchFunctionMode` that only passes calls on, recorded as the runner's child
records it with its records cut into chunks after (`torch_overhead.recorded`), and
recorded with every chunk then encoded as the child streams it (`binary.encode_chunk`:
what the child's flusher does too, which `recorded` leaves out), each with 10 and with
60 training steps; a step is (60 - 10) / 50. With `--parts`, also a process
a tree for each row of `torch_overhead.py --parts` (parts of the recording taken out).
Instructions are not time: what a recording writes to fresh memory, the collector's
pauses and the caches' misses count for less here than on the clock. Each part starts
after a full collection, outside the count: otherwise a collection of the whole heap
(~10M instructions, with torch loaded) lands in one tree's long run and not in another's
as the heap happens to stand (the encoded step of the same code measured 3.73M in one
checkout and 3.94M in another; with the collection first, 3.73M in each).

    python bench/torch_instructions.py [--tree /tmp/main] [--parts]
    python bench/torch_instructions.py --quick   # no valgrind, a step each: does it run?
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HELPER = r"""
#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void cg_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS; CALLGRIND_STOP_INSTRUMENTATION; }
"""
PARTS = ["as recorded", "no array snapshots", "no values either", "no backward steps either"]
WORKER = r"""
import ctypes, math, sys
tree, helper, part, short_n, long_n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
sys.path.insert(0, tree + "/bench")
sys.path.insert(0, tree)
import torch_overhead as to
lib = ctypes.CDLL(helper) if helper else None
from mgtui.recording import torch_backward as tb
try:
    from mgtui.recording import torch_recorder as tp
except ImportError:  # (a tree from before the adapter's module was named so)
    from mgtui.recording import torch_probe as tp
from mgtui.recording.array_values import ArraySnapshots
NAN = math.nan
if part >= 1:
    ArraySnapshots.made = lambda self, nid, data, grad=None: NAN
    ArraySnapshots.write = lambda self, nid, f, b, v: (NAN, NAN)
if part >= 2:
    tp.value_of = tb.value_of = lambda t, copy=False: NAN
if part >= 3:
    tp.BackwardRun.after = tp.BackwardRun.accumulated = lambda *a: None
    if hasattr(tp.BackwardRun, "settle"):  # (the steps made in a batch: `settle`)
        tp.BackwardRun.settle = lambda self: self.steps.clear()
def encoded(scenario):  # (recorded, then every chunk encoded as the child streams it)
    from mgtui.recording.store import Mark
    from mgtui.run.child import STREAM_LEVEL
    from mgtui.trace import binary
    recorder = to.recorded(scenario)[2]
    records = recorder.records
    for chunk in records.chunks(Mark(), records.mark()):
        binary.encode_chunk(chunk, STREAM_LEVEL)
base = to.load_scenario(to.MLP)
short = to.steps(base, short_n) if short_n != 10 else base
long = to.steps(base, long_n)
for sc in (short, long):
    to.plain(sc), to.recorded(sc), to.plain_in_mode(sc), encoded(sc)
runs = [("plain", to.plain), ("mode", to.plain_in_mode), ("recorded", to.recorded),
        ("encoded", encoded)]
if part:
    runs = runs[2:3]
import gc
for name, fn in runs:
    for tag, sc in (("short", short), ("long", long)):
        gc.collect()  # (each part from an empty young generation: see the docstring)
        if lib: lib.cg_start()
        fn(sc)
        if lib: lib.cg_stop()
        print("ran", name, tag, flush=True)
"""


def helper_library(tmp: Path) -> Path | None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not Path("/usr/include/valgrind/callgrind.h").exists():
        return None
    (tmp / "cg.c").write_text(HELPER)
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", str(tmp / "libcg.so"),
                    str(tmp / "cg.c")], check=True)
    return tmp / "libcg.so"


def parts_counted(args: list[str], tree: Path, out: Path, helper: Path | None,
                  env: dict[str, str]) -> list[int] | None:
    """Run `python -c ARGS...` in `tree`, under callgrind if `helper` is given (the
    worker switches it on around each part it measures, `cg_start`/`cg_stop`): the
    instructions of each part, in the order measured; None without valgrind."""
    out.mkdir()
    command = [sys.executable, "-c", *args]
    if helper is not None:
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                   "--collect-atstart=no", f"--callgrind-out-file={out}/cg.%p"] + command
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    if helper is None:
        return None
    counts: dict[int, int] = {}
    for f in out.glob("cg.*"):
        text = f.read_text(errors="replace")
        number = re.search(r"^part:\s+(\d+)", text, re.M)
        total = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
        if number and total:
            counts[int(number.group(1))] = int(total.group(1))
    return [counts[k] for k in sorted(counts)]


def measure(tree: Path, part: int, tmp: Path, helper: Path | None, steps: tuple[int, int]
            ) -> dict[str, float]:
    """{'plain'|'mode'|'recorded': instructions a step} of one tree, one process."""
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    v = parts_counted([WORKER, str(tree), str(helper or ""), str(part), *map(str, steps)],
                      tree, tmp / f"{tree.name}-{part}", helper, env)
    names = ["recorded"] if part else ["plain", "mode", "recorded", "encoded"]
    if v is None:
        return {name: 0.0 for name in names}
    return {name: (v[2 * k + 1] - v[2 * k]) / (steps[1] - steps[0])
            for k, name in enumerate(names)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], help="another mgtui tree")
    ap.add_argument("--parts", action="store_true")
    ap.add_argument("--quick", action="store_true", help="no valgrind: does it run?")
    args = ap.parse_args()
    trees = [ROOT] + [Path(t).resolve() for t in args.tree]
    steps = (10, 11) if args.quick else (10, 60)
    with tempfile.TemporaryDirectory() as tmp:
        helper = None if args.quick else helper_library(Path(tmp))
        if helper is None and not args.quick:
            sys.exit("needs valgrind (and its headers, valgrind/callgrind.h) and a C compiler")
        jobs = [(tree, part) for tree in trees
                for part in (range(len(PARTS)) if args.parts else (0,))]
        with ThreadPoolExecutor(2) as pool:  # (two processes at a time: two cores)
            found = list(pool.map(lambda job: measure(*job, Path(tmp), helper, steps), jobs))
    results = dict(zip(jobs, found))
    print(f"instructions of one training step of torch_mlp.py ({steps[1]} steps against "
          f"{steps[0]}), millions:")
    for tree in trees:
        r = results[(tree, 0)]
        plain = r["plain"] or 1.0
        print(f"  {tree.name:20s} plain {r['plain'] / 1e6:6.3f}   mode alone "
              f"{r['mode'] / 1e6:6.3f} ({r['mode'] / plain:4.2f}x)   recorded "
              f"{r['recorded'] / 1e6:6.3f} ({r['recorded'] / plain:4.2f}x)   and encoded "
              f"{r['encoded'] / 1e6:6.3f} ({r['encoded'] / plain:4.2f}x)")
        if args.parts:
            for part in range(1, len(PARTS)):
                got = results[(tree, part)]["recorded"]
                print(f"    {PARTS[part]:28s} {got / 1e6:6.3f} ({got / plain:4.2f}x)")
    print("every run ran")


if __name__ == "__main__":
    main()
