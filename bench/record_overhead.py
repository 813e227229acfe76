"""Recording overhead: one `moons.py` training step recorded against the same step plain.

The step (forward, zero_grad, backward, update) runs as a scenario file, once under the
recorder and once with plain `exec`, alternating in one process, for `engine.Value` and
for PyPI micrograd. Prints the median CPU time of each (this process's own: a shared
machine disturbs it far less than wall time) and their ratio, then the bytes per
recorded event of the finished trace and at the peak of recording (tracemalloc).

The recorder raises the collector's generation-0 threshold while a scenario runs (most
of a plain moons step is spent in the cyclic garbage collector). So that this cannot
hide the cost of the recording, the plain step is also timed under that same setting:
the target ratio is against plain Python as it comes, and the "hooks" ratios are against
plain Python with the same collector setting: for the run of the scenario (what the
runner's child does; the target), and with the trace built after it in this process.
Both are given for the recording as it is now, inlined into the Value class's code
(`mgtui.recording.inline.rewrite`), and for the old hooks, which still record the classes whose source
cannot be rewritten (`inline=False`). The recorder is made as the runner's child makes
it (`runner_child.child_recorder`: custom ops' values are read as their `_backward`s
begin). What the child's flusher thread does with the records as the run goes
(encodes them every `FLUSH_EVERY` seconds and writes them to the parent) is timed
apart, as "the run with the child's flusher": it runs in the same process, so it is
the child's cost too; in CPU and wall time, and also with the stream deflated at zlib
level 1 as it was before it went out stored (level 0), in the same rounds.

Then reading `a.grad` and `a.data` on a node, recorded and plain, and a long chain
(1,000,000 nodes by default) and its backward pass, recorded and plain, both under the
recorder's collector setting.

Then the bundled tensor lesson (`tensor_mlp.py`: the moons MLP with numpy matrices, 3
training steps, about 40 nodes a step whose values are arrays), recorded with the trace
built after it against plain, alternating (issue 20: at most 2x; an array is copied
once as it is recorded, so the cost is per node, not per element): as bundled, a
step's cost alone, and a step's cost with arrays 100 times as big (`tensor`).

    python bench/record_overhead.py [--rounds 7] [--chain-nodes N] [--chain-rounds 1]
    python bench/record_overhead.py --quick   # seconds: does it still run? (the tests)
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # time this tree's recorder, not whichever mgtui is installed

from mgtui.defaults import GC_GEN0_THRESHOLD  # noqa: E402
from mgtui.recording.recorder import Recorder, load_scenario, record  # noqa: E402
from mgtui.run import child as runner_child
from mgtui.run.child import Flusher, Stream, child_recorder  # noqa: E402

MOONS = ROOT / "scenarios" / "moons.py"
HOOKS_TARGET = 2.0  # recorded, against plain under the same collector setting


def scratch_dir() -> Path:
    """A temporary folder for the scenarios a bench writes, removed when it exits."""
    tmp = Path(tempfile.mkdtemp(prefix="mgtui-bench-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    return tmp


def one_step_source(flavour: str, samples: int = 100) -> str:
    """moons.py cut down to one training step, on the engine or on PyPI micrograd (and
    to fewer than its 100 points, for a quick run)."""
    source = MOONS.read_text()
    steps, points = "for k in range(3):", "make_moons(n_samples=100,"
    assert steps in source and points in source, "moons.py changed: update this benchmark"
    source = source.replace(steps, "for k in range(1):")
    source = source.replace(points, f"make_moons(n_samples={samples},")
    if flavour == "micrograd":
        source = source.replace("from engine import Value", "from micrograd.engine import Value")
        source = source.replace("from engine.nn import MLP", "from micrograd.nn import MLP")
        assert "from engine" not in source
    return source


def plain(scenario) -> None:
    exec(scenario.code, {"__name__": "__main__", "__file__": str(scenario.path), "print": quiet})


def quiet(*args, **kwargs) -> None:
    pass


def plain_same_gc(scenario) -> None:
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], GC_GEN0_THRESHOLD), *old[1:])
    try:
        plain(scenario)
    finally:
        gc.set_threshold(*old)
        # As the recorder's run ends: with the threshold put back, the next allocation
        # collects the young generation the raised threshold left, inside the recorded
        # run's time (the recorder allocates as it puts things back); here, explicitly.
        gc.collect(0)


def timed(fn, *args) -> float:
    """The CPU time of this process for `fn(*args)`: on a shared machine it is far less
    disturbed by other processes than the wall time, and every run here is one thread."""
    gc.collect()
    start = time.process_time()
    fn(*args)
    return time.process_time() - start


def recorded(scenario, inline: bool, values: bool = True) -> tuple[float, float]:
    """CPU times of running the scenario recorded, and of building its trace after. The
    recorder is the one the runner's child makes, custom ops' values read included
    (`values=False`: the recorder alone, as before the child read them)."""
    recorder, _ = child_recorder(scenario, reads_values=values, inline=inline)
    gc.collect()
    start = time.process_time()
    error, output = recorder.execute()
    ran = time.process_time()
    recorder.finish(error, output)
    return ran - start, time.process_time() - ran


def streamed(scenario, level: int | None = None) -> tuple[float, float]:
    """CPU and wall time of the run as the runner's child makes it, its flusher thread
    included: every `FLUSH_EVERY` seconds it encodes the new records and writes them to
    the parent (here to /dev/null), and once more at the end. (This process's CPU time
    counts both threads.) `level`: the zlib level of the stream, if not the child's."""
    recorder, values = child_recorder(scenario)
    fd = os.open(os.devnull, os.O_WRONLY)
    child_level = runner_child.STREAM_LEVEL
    if level is not None:
        runner_child.STREAM_LEVEL = level
    try:
        flusher = Flusher(recorder.records, Stream(fd), values)
        gc.collect()
        start, wall = time.process_time(), time.perf_counter()
        flusher.start()
        recorder.execute()
        recorder.resolve_names()
        flusher.stop()
        return time.process_time() - start, time.perf_counter() - wall
    finally:
        runner_child.STREAM_LEVEL = child_level
        os.close(fd)


READS = """
import time
from engine import Value
a = Value(1.0)
b = a * 2.0  # recorded or not, `a` is a node of a graph

def reads(n):
    start = time.process_time()
    for _ in range(n):
        a.grad; a.grad; a.grad; a.grad; a.grad; a.grad; a.grad; a.grad; a.grad; a.grad
        a.data; a.data; a.data; a.data; a.data; a.data; a.data; a.data; a.data; a.data
    return (time.process_time() - start) / (20 * n)

result = min(reads(READS) for _ in range(5))
"""

CHAIN = """
from engine import Value
x = Value(1.0)
for _ in range(NODES // 2 - 1):
    x = x + 1.0
x.backward()
"""


def run_in(scenario, how: str) -> dict:
    """Run the scenario plainly, or recorded (`inline` or `hooks`): its globals after."""
    if how == "plain":
        namespace = {"__name__": "__main__", "__file__": str(scenario.path)}
        exec(scenario.code, namespace)
        return namespace
    recorder = Recorder(scenario, inline=how == "inline")
    recorder.execute()
    return recorder.globals


def reads(tmp: Path, rounds: int, count: int = 100_000) -> None:
    """Reading `a.grad` and `a.data` on a node, recorded and plain: per read, best of 5
    loops of `count` times 20 reads."""
    path = tmp / "reads.py"
    path.write_text(READS.replace("READS", str(count)))
    scenario = load_scenario(path)
    results: dict[str, list[float]] = {"plain": [], "inline": [], "hooks": []}
    for _ in range(rounds):
        for how in results:
            results[how].append(run_in(scenario, how)["result"])
    m = {k: statistics.median(v) for k, v in results.items()}
    verdict = "ok" if m["inline"] / m["plain"] <= 1.2 else "OVER TARGET"
    print(f"reads      a.grad / a.data: plain {m['plain']*1e9:.1f} ns, recorded "
          f"{m['inline']*1e9:.1f} ns = {m['inline']/m['plain']:.2f}x (target <= 1.2x: "
          f"{verdict}); old hooks {m['hooks']*1e9:.1f} ns = {m['hooks']/m['plain']:.2f}x")


def chain(tmp: Path, nodes: int, rounds: int) -> None:
    """A chain of `nodes` nodes and its backward pass, recorded against plain, both
    under the recorder's collector setting."""
    path = tmp / "chain.py"
    path.write_text(CHAIN.replace("NODES", str(nodes)))
    scenario = load_scenario(path)
    times: dict[str, list[float]] = {"plain": [], "inline": [], "hooks": []}
    old = gc.get_threshold()
    for _ in range(rounds):
        for how in times:
            gc.collect()
            gc.set_threshold(max(old[0], GC_GEN0_THRESHOLD), *old[1:])
            start = time.process_time()
            try:
                run_in(scenario, how)
            finally:
                times[how].append(time.process_time() - start)
                gc.set_threshold(*old)
            gc.collect()
    m = {k: statistics.median(v) for k, v in times.items()}
    verdict = "ok" if m["inline"] / m["plain"] <= 2.5 else "OVER TARGET"
    print(f"chain      {nodes:,} nodes, same collector setting: plain {m['plain']:.2f} s, "
          f"recorded {m['inline']:.2f} s = {m['inline']/m['plain']:.2f}x (target <= 2.5x: "
          f"{verdict}); old hooks {m['hooks']:.2f} s = {m['hooks']/m['plain']:.2f}x")


TENSOR = ROOT / "scenarios" / "tensor_mlp.py"
TENSOR_TARGET = 2.0


def tensor_variant(tmp: Path, steps: int, points: int) -> object:
    """The tensor lesson with `steps` training steps on `points` moons points."""
    source = TENSOR.read_text()
    loop, data = "for k in range(3):", "make_moons(n_samples=100,"
    assert loop in source and data in source, "tensor_mlp.py changed: update this benchmark"
    path = tmp / f"tensor_{steps}_{points}.py"
    path.write_text(source.replace(loop, f"for k in range({steps}):")
                    .replace(data, f"make_moons(n_samples={points},"))
    return load_scenario(path)


def tensor(tmp: Path, rounds: int) -> None:
    """The tensor lesson recorded (the runner child's recorder, the trace built after it)
    against the same scenario plain, alternating: as bundled (3 steps, 100 points); the
    cost of 30 more steps (what a step costs, without the run's fixed costs: the scan
    of the loaded modules, numpy's included, for Value classes, the scenario's
    assignments, the sandbox); and the same with 10,000 points, arrays 100 times as
    big (is the cost per node, or per element?)."""
    cases = {"as bundled": [(3, 100)], "a step": [(3, 100), (33, 100)],
             "a step, 100x the elements": [(3, 10_000), (33, 10_000)]}
    scenarios = {sp: tensor_variant(tmp, *sp) for sps in cases.values() for sp in sps}
    for sc in scenarios.values():
        recorded(sc, True)  # (warm: numpy, the engine, the rewrite)
    times: dict = {sp: {"plain": [], "recorded": [], "run": []} for sp in scenarios}
    for _ in range(rounds):
        for sp, sc in scenarios.items():
            times[sp]["plain"].append(timed(plain, sc))
            run, built = recorded(sc, True)
            times[sp]["recorded"].append(run + built)
            times[sp]["run"].append(run)
    m = {sp: {k: statistics.median(v) for k, v in t.items()} for sp, t in times.items()}
    for name, sps in cases.items():
        if len(sps) == 1:
            p, r, run = (m[sps[0]][k] for k in ("plain", "recorded", "run"))
        else:
            (a, b) = sps
            p, r, run = ((m[b][k] - m[a][k]) / 30 for k in ("plain", "recorded", "run"))
        verdict = "ok" if r / p <= TENSOR_TARGET else "OVER TARGET"
        print(f"tensor     {TENSOR.name}, {name}: plain {p*1000:.2f} ms  recorded "
              f"{r*1000:.2f} ms  ratio {r/p:.2f}x  (target <= {TENSOR_TARGET}x: {verdict}); "
              f"the run alone {run*1000:.2f} ms {run/p:.2f}x, the trace built after it "
              f"{(r-run)*1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--chain-nodes", type=int, default=1_000_000,
                        help="nodes of the long chain (0: skip it)")
    parser.add_argument("--chain-rounds", type=int, default=1)
    parser.add_argument("--quick", action="store_true",
                        help="one round of everything, small: checks that it runs, "
                             "measures nothing")
    args = parser.parse_args()
    samples, read_count = 100, 100_000
    if args.quick:
        args.rounds, args.chain_nodes, samples, read_count = 1, 2_000, 6, 1_000
    tmp = scratch_dir()
    print(f"python {sys.version.split()[0]}, {args.rounds} alternating rounds, "
          "median CPU times")
    for flavour, target in (("engine", 1.3), ("micrograd", 1.5)):
        path = tmp / f"moons_step_{flavour}.py"
        path.write_text(one_step_source(flavour, samples))
        scenario = load_scenario(path)
        record(scenario)  # warm up imports and caches
        record(scenario, inline=False)
        times: dict[str, list[float]] = {k: [] for k in (
            "plain", "same gc", "run", "build", "bare run", "streamed", "streamed wall",
            "zlib 1", "zlib 1 wall", "hooks run", "hooks build")}
        for _ in range(args.rounds):
            times["plain"].append(timed(plain, scenario))
            run, build = recorded(scenario, True)
            times["run"].append(run)
            times["build"].append(build)
            times["bare run"].append(recorded(scenario, True, values=False)[0])
            times["same gc"].append(timed(plain_same_gc, scenario))
            cpu, wall = streamed(scenario)
            times["streamed"].append(cpu)
            times["streamed wall"].append(wall)
            cpu, wall = streamed(scenario, level=1)  # the stream as it was deflated
            times["zlib 1"].append(cpu)
            times["zlib 1 wall"].append(wall)
            run, build = recorded(scenario, False)
            times["hooks run"].append(run)
            times["hooks build"].append(build)
        m = {k: statistics.median(v) for k, v in times.items()}
        p, q = m["plain"], m["same gc"]
        r, h = m["run"] + m["build"], m["hooks run"] + m["hooks build"]
        verdict = "ok" if r / p <= target else "OVER TARGET"
        print(f"{flavour:10s} plain {p*1000:7.1f} ms  recorded {r*1000:7.1f} ms  "
              f"ratio {r/p:.2f}x  (target <= {target}x: {verdict})")
        verdict = "ok" if m["run"] / q <= HOOKS_TARGET else "OVER TARGET"
        print(f"{'':10s} plain, same collector setting {q*1000:7.1f} ms; against it:")
        print(f"{'':10s}   inlined recording: the run {m['run']/q:.2f}x "
              f"(target <= {HOOKS_TARGET}x: {verdict}), "
              f"with the trace built after it {r/q:.2f}x")
        print(f"{'':10s}   the run without reading custom ops' values (the recorder "
              f"alone): {m['bare run']/q:.2f}x")
        print(f"{'':10s}   the run with the child's flusher streaming the records as it "
              f"goes: {m['streamed']/q:.2f}x (CPU {m['streamed']*1000:.0f} ms, wall "
              f"{m['streamed wall']*1000:.0f} ms); streamed deflated (zlib level 1, as "
              f"before): {m['zlib 1']/q:.2f}x (CPU {m['zlib 1']*1000:.0f} ms, wall "
              f"{m['zlib 1 wall']*1000:.0f} ms)")
        print(f"{'':10s}   old hooks (inline=False): the run {m['hooks run']/q:.2f}x, "
              f"with the trace built after it {h/q:.2f}x")

    tensor(tmp, args.rounds)
    reads(tmp, args.rounds, read_count)
    if args.chain_nodes and args.chain_rounds > 0:  # (--chain-rounds 0: no chain)
        chain(tmp, args.chain_nodes, args.chain_rounds)

    scenario = load_scenario(tmp / "moons_step_engine.py")
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    trace = record(scenario)
    gc.collect()
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    events = len(trace) + trace.write_count
    print(f"memory     {len(trace):,} events + {trace.write_count:,} writes in backward calls "
          f"= {events:,} recorded events")
    print(f"           trace kept: {(kept - base) / events:6.1f} bytes/event  "
          f"(target <= 200)")
    print(f"           peak while recording: {(peak - base) / events:6.1f} bytes/event")


if __name__ == "__main__":
    main()
