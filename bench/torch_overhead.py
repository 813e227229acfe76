"""PyTorch scenarios (issue 21): what recording costs, side by side in one run.

1. Recording overhead: `scenarios/torch_mlp.py` (the lecture's 41-parameter MLP with
   `nn.Linear`, 10 training steps: forward, zero_grad, backward, update) recorded as the
   runner's child records it (`child_recorder(...).execute()`, then its records cut into
   chunks as the child's flusher cuts them), against the same file run by plain `exec`,
   alternating, in this process, torch imported once before both. CPU time of this
   process, medians. Target: at most 3x.
2. Time to first step: `mgtui scenarios/torch_neuron.py` against `mgtui
   scenarios/neuron.py` (the micrograd neuron), each in a fresh headless app launched as
   `mgtui FILE` starts it, alternating, until the first step can be taken (as
   `bench/recording_app.py` measures it). torch's own import, which the torch neuron's
   child pays and the micrograd one's does not, is left out: a `sitecustomize` has the
   runner's keeper import torch before it forks the scenario's process and say how long
   that took, which is taken off (the time with the scenario importing it is shown
   too). Target: at most 1.5x.
3. The final gradients of the recorded MLP against the plain run's: bit for bit.
4. With `--parts`: where a recorded training step's time goes, by taking parts of the
   recording out one after another (the recording is then wrong: a measure, not a mode):
   the array snapshots (`ArraySnapshots.made` and `.write` keep nothing), the tensors'
   values (`torch_backward.value_of` reads none: no numpy arrays made, copied or summed),
   the backward steps (the hooks do nothing), their hooks (none registered), and last a
   `TorchFunctionMode` that only passes each call on, with nothing else of mgtui.

    python bench/torch_overhead.py [--rounds 9] [--starts 5] [--parts]
    python bench/torch_overhead.py --quick   # seconds: does it still run? (the tests)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # time this tree's recorder, not whichever mgtui is installed
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402,F401  (imported once, before either side is timed)

from mgtui.recording.scenario import load_scenario  # noqa: E402
from mgtui.recording.store import Mark  # noqa: E402
from mgtui.run.child import child_recorder  # noqa: E402

SCENARIOS = ROOT / "scenarios"
MLP = SCENARIOS / "torch_mlp.py"
RECORD_TARGET, FIRST_STEP_TARGET = 3.0, 1.5


def plain(scenario) -> tuple[float, dict]:
    scope = {"__name__": "__main__", "__file__": str(scenario.path)}
    start = time.process_time()
    with redirect_stdout(io.StringIO()):
        exec(scenario.code, scope)
    return time.process_time() - start, scope


def recorded(scenario) -> tuple[float, float, object, int]:
    """(the run's CPU time, cutting its records into chunks, the recorder, events)."""
    start = time.process_time()
    recorder, _ = child_recorder(scenario, capture_output=True)
    error, _ = recorder.execute()
    recorder.resolve_names()
    ran = time.process_time()
    records = recorder.records
    records.chunks(Mark(), records.mark())  # (what the child's flusher cuts and sends)
    cut = time.process_time() - ran
    assert error is None, error
    return ran - start, cut, recorder, records.event_count()


def steps(scenario, n: int):
    """The scenario with `n` training steps instead of its 10."""
    source = scenario.source.replace("range(10)", f"range({n})")
    assert source != scenario.source
    return replace(scenario, source=source,
                   code=compile(source, str(scenario.path.resolve()), "exec"))


def final_grads_match(scenario) -> bool:
    """The recorded run's parameters' grads, bit for bit those of the plain run."""
    torch.manual_seed(0)
    _, scope = plain(scenario)
    want = {k: p.grad.clone() for k, p in scope["model"].named_parameters()}
    recorder = recorded(scenario)[2]
    got = recorder.globals["model"]
    return all(torch.equal(p.grad, want[k]) for k, p in got.named_parameters())


FIRST_STEP = """
import asyncio, json, sys, time
from pathlib import Path
from mgtui.run.runner import RunOptions, start_run
path, launched = sys.argv[1], float(sys.argv[2])
run = start_run(path, RunOptions.for_app())  # as `mgtui FILE` starts it
from mgtui.tui.app import MgtuiApp

async def main():
    app = MgtuiApp(Path(path), run=run)
    async with app.run_test(size=(80, 24)) as pilot:
        while app.debugger.trace is None:
            await pilot.pause(0.005)
        first = time.time() - launched
        while app.loading:
            await pilot.pause(0.05)
        print(json.dumps({"first_step": first, "steps": len(app.debugger.trace)}))

asyncio.run(main())
"""


# Loaded by every interpreter the bench starts with `preload`: the runner's keeper (the
# process the scenario's is forked from) imports torch before it forks, and writes how
# long that took, which is taken off: the scenario's `import torch` finds it loaded.
PRELOAD = """import os, sys, time
if 'mgtui.run.keeper' in sys.orig_argv:
    start = time.perf_counter()
    import torch
    with open(os.environ['TORCH_IMPORT_LOG'], 'w') as log:
        log.write(repr(time.perf_counter() - start))
"""


RUNNER = """
import json, sys, time
from mgtui.run.runner import run
launched = time.perf_counter()
result = run(sys.argv[1])
assert result.finished and len(result.trace), result.message
print(json.dumps({"first_step": time.perf_counter() - launched}))
"""


def first_step(path: Path, preload: Path | None = None, program: str = FIRST_STEP
               ) -> tuple[float, float]:
    """(launch to first step, of which torch's import in the keeper)."""
    env = dict(os.environ)
    log = None
    if preload is not None:
        log = preload / "import.log"
        log.unlink(missing_ok=True)
        env["TORCH_IMPORT_LOG"] = str(log)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(preload), str(ROOT),
                                                           env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", program, str(path), repr(time.time())],
                          cwd=ROOT, check=True, capture_output=True, text=True, env=env)
    first = json.loads(done.stdout.strip().splitlines()[-1])["first_step"]
    return first, float(log.read_text()) if log is not None else 0.0


def plain_in_mode(scenario) -> float:
    """`plain`, under a `TorchFunctionMode` that passes each call on (`--parts`)."""
    from torch.overrides import TorchFunctionMode

    class PassOn(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **kwargs) if kwargs else func(*args)

    with PassOn():
        return plain(scenario)[0]


def _steps_dropped(run) -> None:
    """`BackwardRun.settle` making no steps (`--parts`): what the hooks noted, let go."""
    run.steps.clear()


def parts(short, long, rounds: int) -> None:
    """A recorded step with parts of the recording taken out, cumulatively (see the
    module's docstring), alternating, medians."""
    import math

    from mgtui.recording import torch_backward as tb
    from mgtui.recording import torch_recorder as tp
    from mgtui.recording.array_values import ArraySnapshots

    NAN = math.nan
    saved = [(ArraySnapshots, "made"), (ArraySnapshots, "write"), (tp, "value_of"),
             (tb, "value_of"),
             (tp.BackwardRun, "settle"), (tp.BackwardRun, "after"),
             (tp.TorchRecorder, "_hook"), (tp.TorchRecorder, "_leaf_hook"), (tp, "BUILT_IN")]
    saved = [(owner, name, getattr(owner, name)) for owner, name in saved]
    off = [  # (what is taken out, [(owner, name, stand-in)])
        ("as recorded", []),
        ("no array snapshots", [(ArraySnapshots, "made", lambda self, nid, data, grad=None: NAN),
                                (ArraySnapshots, "write", lambda self, nid, f, b, v: (NAN, NAN))]),
        ("no values either", [(tp, "value_of", lambda t, copy=False: NAN),
                              (tb, "value_of", lambda t, copy=False: NAN)]),
        ("no backward steps either", [(tp.BackwardRun, "after", lambda *a: None),
                                      (tp.BackwardRun, "settle", _steps_dropped)]),
        ("no backward hooks either", [(tp.TorchRecorder, "_hook", lambda *a: None),
                                      (tp.TorchRecorder, "_leaf_hook", lambda *a: None),
                                      (tp, "BUILT_IN", frozenset())]),  # (none inline)
    ]
    times: dict = {label: ([], []) for label, _ in off}
    times["a TorchFunctionMode alone"] = ([], [])
    times["plain"] = ([], [])
    for _ in range(rounds):
        for owner, name, old in saved:
            setattr(owner, name, old)
        for label, stand_ins in off:
            for owner, name, new in stand_ins:
                setattr(owner, name, new)
            for k, sc in enumerate((short, long)):
                times[label][k].append(recorded(sc)[0])
        for k, sc in enumerate((short, long)):
            times["a TorchFunctionMode alone"][k].append(plain_in_mode(sc))
            times["plain"][k].append(plain(sc)[0])
    for owner, name, old in saved:
        setattr(owner, name, old)
    per = {label: (statistics.median(b) - statistics.median(a)) / 30
           for label, (a, b) in times.items()}
    print(f"where a recorded step's time goes (40 steps against 10, medians of {rounds}; "
          f"each row takes out what the rows above it took out too):")
    for label, t in per.items():
        print(f"  {label:28s} {t * 1000:6.3f} ms  {t / per['plain']:4.2f}x plain")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="one round of each: does it run?")
    ap.add_argument("--parts", action="store_true",
                    help="only where a recorded step's time goes (no starts)")
    args = ap.parse_args()
    rounds, starts = (1, 1) if args.quick else (args.rounds, args.starts)
    if args.parts:
        scenario = load_scenario(MLP)
        short, long = scenario, steps(scenario, 40)
        for sc in (short, long):
            plain(sc), recorded(sc)
        parts(short, long, rounds)
        return

    scenario = load_scenario(MLP)
    short, long = scenario, steps(scenario, 11 if args.quick else 40)
    for sc in (short, long):  # (warm: torch's first calls, the caches)
        plain(sc), recorded(sc)
    times: dict = {k: [] for k in ("p10", "r10", "c10", "pN", "rN", "cN")}
    events = 0
    for _ in range(rounds):
        for tag, sc in (("10", short), ("N", long)):
            times["p" + tag].append(plain(sc)[0])
            run, cut, _, n = recorded(sc)
            times["r" + tag].append(run)
            times["c" + tag].append(cut)
            events = n if tag == "10" else events
    m = {k: statistics.median(v) for k, v in times.items()}
    n_long = 11 if args.quick else 40
    print(f"torch_mlp.py as bundled, 10 training steps ({events:,} events), CPU, median of "
          f"{rounds}:")
    print(f"  plain {m['p10'] * 1000:7.1f} ms   recorded {m['r10'] * 1000:7.1f} ms "
          f"(+ {m['c10'] * 1000:5.1f} ms cutting chunks)   "
          f"{(m['r10'] + m['c10']) / m['p10']:4.2f}x")
    if not args.quick:
        per = {k: (m[k + "N"] - m[k + "10"]) / (n_long - 10) for k in ("p", "r", "c")}
        print(f"one training step (forward, zero_grad, backward, update), from {n_long} "
              f"steps against 10:")
        print(f"  plain {per['p'] * 1000:6.3f} ms   recorded {per['r'] * 1000:6.3f} ms "
              f"{per['r'] / per['p']:4.2f}x   with its chunks cut "
              f"{(per['r'] + per['c']) * 1000:6.3f} ms {(per['r'] + per['c']) / per['p']:4.2f}x "
              f"(target ≤ {RECORD_TARGET:g}x)")
    print(f"  final gradients bit for bit the plain run's: {final_grads_match(scenario)}")

    rows = {k: [] for k in ("micro", "torch", "app", "r_micro", "r_torch")}
    with tempfile.TemporaryDirectory() as preload:
        (Path(preload) / "sitecustomize.py").write_text(PRELOAD)
        for _ in range(starts):
            rows["micro"].append(first_step(SCENARIOS / "neuron.py")[0])
            rows["torch"].append(first_step(SCENARIOS / "torch_neuron.py")[0])
            first, imported = first_step(SCENARIOS / "torch_neuron.py", Path(preload))
            rows["app"].append(first - imported)
            rows["r_micro"].append(first_step(SCENARIOS / "neuron.py", None, RUNNER)[0])
            first, imported = first_step(SCENARIOS / "torch_neuron.py", Path(preload), RUNNER)
            rows["r_torch"].append(first - imported)
    m = {k: statistics.median(v) for k, v in rows.items()}
    print(f"time to first step, fresh headless app at 80x24, median of {starts}:")
    print(f"  neuron.py (micrograd) {m['micro'] * 1000:6.0f} ms   torch_neuron.py "
          f"{m['torch'] * 1000:6.0f} ms (torch imported by the scenario)")
    print(f"  torch_neuron.py without torch's import {m['app'] * 1000:6.0f} ms   "
          f"{m['app'] / m['micro']:4.2f}x (the keeper's import overlaps the app's start: "
          f"a lower bound)")
    print("the runner alone, launch to the whole trace (the neuron's first step is its last):")
    print(f"  neuron.py {m['r_micro'] * 1000:6.0f} ms   torch_neuron.py without torch's import "
          f"{m['r_torch'] * 1000:6.0f} ms   {m['r_torch'] / m['r_micro']:4.2f}x "
          f"(target ≤ {FIRST_STEP_TARGET:g}x)")


if __name__ == "__main__":
    main()
