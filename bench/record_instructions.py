"""Recording overhead counted in instructions: one `moons.py` step under valgrind.

CPU time on a shared machine moves by ±10% from run to run, more than most single
changes to the recorder are worth, and part of what it measures is memory traffic that
other processes' caches disturb. The number of instructions a run executes does not
depend on the load: it is the same within about 0.2% from run to run. So this script
runs one training step (`record_overhead.one_step_source`) in a fresh process under
`valgrind --tool=callgrind`, each of:

- `setup`: everything but the step (imports, the recorder made, the code rewritten, a
  warm-up run cut off after a few nodes), to subtract from the others;
- `plain`: the step, plain, under the recorder's collector setting;
- `inline`: the step recorded as the runner's child records it (custom ops' values read);
- `hooks`: the same with the old hooks (`inline=False`), less its own `setup-hooks`;
- `sent`: `inline`, then its records cut into the chunks the runner's child sends
  (`Records.chunks`, encoded as its flusher encodes them), all at once at the end: the
  child's whole cost, wherever the cutting happens (its flusher thread, or the
  recording's own as the store packs its rows, issue 24);
- `unpacked`: `inline` with the store's packing off (`PACK_EVERY` past the run): the
  probes' own cost, without the cutting that packing does as the run goes.

It prints the instructions of each step and their ratio to the plain one, for
`engine.Value` and PyPI micrograd. Instructions are not time: a recorded step also writes
its records to fresh memory, which `record_overhead.py`'s CPU times include and this does
not. Needs valgrind; about a minute a run, two runs at a time, each run under three hash
seeds (`--seeds`): a random one moves the count of the same run by up to about 1%.

    python bench/record_instructions.py [--flavour engine|micrograd]
    python bench/record_instructions.py --quick   # each run once without valgrind, small:
                                                  # does it still run? (the tests)
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOWS = ("setup", "plain", "inline", "setup-hooks", "hooks", "sent", "unpacked")

CHILD = """
import gc, os, sys
sys.path[:0] = [{root!r}, {bench!r}]
import record_overhead as ro
from mgtui.defaults import GC_GEN0_THRESHOLD
from mgtui.run.child import child_recorder
from mgtui.recording.scenario import load_scenario
how, path = {how!r}, {path!r}
scenario = load_scenario(path)
# warm up imports and rewrites, a few nodes only, in the one mode the step records in (a
# run in the other mode first would change the count: the child only ever makes one run)
warm = not how.endswith("hooks")
recorder, _ = child_recorder(scenario, inline=warm, max_nodes=10)
recorder.execute()
gc.collect()
if how == "plain":
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], GC_GEN0_THRESHOLD), *old[1:])
    exec(scenario.code, {{"__name__": "__main__", "__file__": path, "print": ro.quiet}})
    gc.set_threshold(*old)
elif not how.startswith("setup"):
    if how == "unpacked":
        import mgtui.recording.store
        mgtui.recording.store.PACK_EVERY = 1 << 40
    recorder, _ = child_recorder(scenario, inline=how != "hooks")
    error, _ = recorder.execute()
    assert error is None, error
    if how == "sent":
        from mgtui.recording.store import Mark
        from mgtui.trace.binary import encode_chunk
        records = recorder.records
        sent = [encode_chunk(c, 0) for c in records.chunks(Mark(), records.mark())]
os._exit(0)  # as the runner's child leaves: no collection, no freeing at exit
"""


def instructions(how: str, path: Path, quick: bool = False, seed: int = 0) -> int:
    """The instructions of one run of `CHILD` under the hash seed `seed` (`quick`: run it
    once without valgrind, and give 1). (A string's hash moves every dict's and set's
    layout: with a random seed the same run counts differently by up to about 1%.)"""
    code = CHILD.format(root=str(ROOT), bench=str(ROOT / "bench"), how=how, path=str(path))
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    if quick:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              cwd=ROOT, env=env)
        if done.returncode != 0:
            raise SystemExit(f"{how}: the run failed:\n{done.stderr[-2000:]}")
        return 1
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{how}: valgrind run failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flavour", choices=("engine", "micrograd"), action="append")
    parser.add_argument("--seeds", type=int, default=3,
                        help="hash seeds 0, 1, ... to count each run under (the median is "
                             "printed; default 3)")
    parser.add_argument("--quick", action="store_true",
                        help="each run once, without valgrind, on a few points: checks "
                             "that it runs, counts nothing")
    args = parser.parse_args()
    if args.quick:
        sys.path.insert(0, str(ROOT / "bench"))
        from record_overhead import one_step_source, scratch_dir

        tmp = scratch_dir()
        for flavour in args.flavour or ("engine", "micrograd"):
            path = tmp / f"moons_step_{flavour}.py"
            path.write_text(one_step_source(flavour, samples=6))
            for how in HOWS:
                instructions(how, path, quick=True)
        print("quick: every run ran (nothing counted)")
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: this benchmark counts instructions with it")
    sys.path.insert(0, str(ROOT / "bench"))
    from record_overhead import one_step_source, scratch_dir

    tmp = scratch_dir()
    # Every module's bytecode written first: a module whose .pyc is stale is compiled at
    # import by every run (PYTHONDONTWRITEBYTECODE, or a tree just changed), and a run
    # that finds it written counts hundreds of millions fewer than the one before it.
    for folder in ("mgtui", "engine", "bench"):
        compileall.compile_dir(ROOT / folder, quiet=1)
    print(f"python {sys.version.split()[0]}, instructions of one moons step (callgrind), "
          f"the median over hash seeds 0 to {args.seeds - 1}")
    for flavour in args.flavour or ("engine", "micrograd"):
        path = tmp / f"moons_step_{flavour}.py"
        path.write_text(one_step_source(flavour))
        runs = [(how, seed) for seed in range(args.seeds) for how in HOWS]
        with ThreadPoolExecutor(2) as pool:
            counts = dict(zip(runs, pool.map(lambda run: instructions(run[0], path, seed=run[1]),
                                             runs)))
        step = {how: statistics.median(
                    counts[how, seed] - counts["setup-hooks" if how == "hooks" else "setup", seed]
                    for seed in range(args.seeds))
                for how in ("plain", "inline", "hooks", "sent", "unpacked")}
        p = step["plain"]
        print(f"{flavour:10s} plain {p / 1e6:7.0f} M  recorded (inline) {step['inline'] / 1e6:7.0f} M"
              f" = {step['inline'] / p:.2f}x  old hooks {step['hooks'] / 1e6:7.0f} M"
              f" = {step['hooks'] / p:.2f}x  inline and sent {step['sent'] / 1e6:7.0f} M"
              f" = {step['sent'] / p:.2f}x  inline, packing off {step['unpacked'] / 1e6:7.0f} M"
              f" = {step['unpacked'] / p:.2f}x")


if __name__ == "__main__":
    main()
