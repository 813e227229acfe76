"""Time the gradient doctor on `moons.py`, side by side with the doctor of an earlier
commit, in one run: issue 10 wants `moons --check` with the default sampling of backward
passes in at most the time the doctor took before it (when it checked one pass
numerically), and `--passes all` within a minute.

Each doctor runs in a process of its own, from its own tree (the earlier one is
`git archive`d into a temporary directory, or given as `--tree`), in turns, so both see
the same machine:

    python bench/doctor_time.py [--baseline REV | --tree DIR] [--repeat N] [--bug]
    python bench/doctor_time.py --bugs [--baseline REV | --tree DIR] [--repeat N]

prints the seconds of each phase, the recordings and the findings of each, and the
ratios of the totals. `--bug` also times a moons whose ReLU passes gradient for negative
inputs (a run that has to localise a fault). `--bugs` times instead each bundled bug
scenario and each engine of another shape in `tests/data/` (issue 19 wants them within
1.2× of the doctor before it), both trees on the same files, and prints the machine's
load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "abfc056"  # main before issue 10: one backward pass checked numerically

BUGGY_RELU = '''
def relu(self):
    out = Value(0 if self.data < 0 else self.data, (self,), 'ReLU')
    def _backward():
        self.grad += (out.data >= 0) * out.grad  # BUG: >= passes grad for inputs < 0
    out._backward = _backward
    return out
Value.relu = relu

'''

# Runs in the child, with the tree to time as its working directory and first on its path.
CHILD = r'''
import inspect, json, sys, time
sys.path.insert(0, ".")
from mgtui.doctor import diagnose
path, passes = sys.argv[1], json.loads(sys.argv[2])
marks = []
def progress(done, total, phase):
    if not marks or marks[-1][0] != phase:
        marks.append((phase, time.perf_counter()))
kwargs = {"on_progress": progress}
if passes is not None:
    kwargs["passes"] = passes
start = time.perf_counter()
report = diagnose(path, **kwargs)
end = time.perf_counter()
phases = [(p, t1 - t0) for (p, t0), (_, t1) in zip(marks, marks[1:] + [("end", end)])]
checked = getattr(report, "checked_passes", None)
if checked is None:
    checked = [report.checked_pass] if report.checked_pass is not None else []
numbers = [sum(1 for q in report.trace.passes[:p.index] if q.kind == "backward") + 1
           for p in checked]
print(json.dumps({"total": end - start, "phases": phases, "runs": report.runs,
                  "passes": numbers, "nodes": report.checked_nodes,
                  "findings": [f"{f.kind} at {f.label}, line {f.line}" for f in report.findings]}))
'''


def baseline_tree(rev: str, into: Path) -> Path:
    """The tree of commit `rev`, unpacked into `into`."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(tree: Path, scenario: Path, passes) -> dict:
    """One doctor run: its wall-clock phases, and the CPU seconds of its whole process
    tree (every recording's child included), which a busy machine disturbs far less.
    The tree is the working directory and first on `PYTHONPATH`, so the recordings'
    children import its mgtui too."""
    cpu = cpu_of_children()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-c", CHILD, str(scenario), json.dumps(passes)],
                         cwd=tree, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"the doctor in {tree} failed:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["cpu"] = cpu_of_children() - cpu
    return result


def show(name: str, result: dict) -> None:
    print(f"{name}: {result['total']:.1f} s ({result['cpu']:.1f} s of CPU), "
          f"{result['runs']} recordings, backward passes "
          f"{result['passes']} checked numerically ({result['nodes']:,} nodes)")
    for phase, seconds in result["phases"]:
        print(f"    {phase:28s} {seconds:6.1f} s")
    for f in result["findings"] or ["no findings"]:
        print(f"    {f}")


def compare(before: Path, after: Path, scenario_name: str, repeat: int,
            source_edit=None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        scenarios = {}
        for label, tree in (("before", before), ("after", after)):
            path = tree / "scenarios" / scenario_name
            if source_edit is not None:
                path = Path(tmp) / f"{label}_{scenario_name}"
                path.write_text(source_edit((tree / "scenarios" / scenario_name).read_text()))
            scenarios[label] = path
        runs = {"before (1 pass)": [], "after, default sampling": [], "after, --passes all": []}
        for _ in range(repeat):  # in turns, so that a busy moment hits each alike
            runs["before (1 pass)"].append(timed(before, scenarios["before"], None))
            runs["after, default sampling"].append(timed(after, scenarios["after"], None))
            runs["after, --passes all"].append(timed(after, scenarios["after"], "all"))
        best, cpu = {}, {}
        for name, results in runs.items():
            result = min(results, key=lambda r: r["total"])
            best[name] = result["total"]
            cpu[name] = min(r["cpu"] for r in results)
            show(name, result)
        base, base_cpu = best["before (1 pass)"], cpu["before (1 pass)"]
        default, every = "after, default sampling", "after, --passes all"
        print(f"  wall clock: default/before {best[default] / base:.2f}, "
              f"all/before {best[every] / base:.2f}; CPU: default/before "
              f"{cpu[default] / base_cpu:.2f}, all/before {cpu[every] / base_cpu:.2f} "
              f"(best of {repeat}; --passes all took {best[every]:.1f} s)")


def small_scenarios() -> list[Path]:
    """The bundled bug scenarios, then the engines of other shapes (issue 19)."""
    bugs = sorted(p for p in (ROOT / "scenarios" / "bugs").glob("*.py") if p.stem != "__init__")
    data = ROOT / "tests" / "data"
    shapes = sorted(p for folder in ("engines", "passes", "closures")
                    for p in (data / folder).glob("*.py"))
    return bugs + shapes


def compare_small(before: Path, after: Path, repeat: int, quick: bool = False) -> None:
    """Each small scenario under both doctors, in turns, best of `repeat` each (`quick`:
    the first bug scenario and the last other shape only)."""
    scenarios = small_scenarios()
    if quick:
        scenarios = [scenarios[0], scenarios[-1]]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    runs: dict[tuple[str, Path], list[dict]] = {}
    for _ in range(repeat):
        for path in scenarios:
            for label, tree in (("before", before), ("after", after)):
                runs.setdefault((label, path), []).append(timed(tree, path, None))
    print(f"{'scenario':34s} {'before':>8s} {'after':>8s} {'ratio':>6s}  runs  findings after")
    totals = {(label, group, what): 0.0 for label in ("before", "after")
              for group in ("bugs", "shapes") for what in ("total", "cpu")}
    for path in scenarios:
        best = {label: min(runs[(label, path)], key=lambda r: r["total"])
                for label in ("before", "after")}
        group = "bugs" if path.parent.name == "bugs" else "shapes"
        for label in best:
            totals[(label, group, "total")] += best[label]["total"]
            totals[(label, group, "cpu")] += min(r["cpu"] for r in runs[(label, path)])
        b, a = best["before"]["total"], best["after"]["total"]
        name = f"{path.parent.name}/{path.stem}"
        found = "; ".join(best["after"]["findings"]) or "none"
        print(f"{name:34s} {b:7.2f}s {a:7.2f}s {a / b:5.2f}×  {best['before']['runs']:>2}→"
              f"{best['after']['runs']:<2} {found}")
    for group in ("bugs", "shapes"):
        b, a = totals[("before", group, "total")], totals[("after", group, "total")]
        cb, ca = totals[("before", group, "cpu")], totals[("after", group, "cpu")]
        print(f"total, {'bundled bug scenarios' if group == 'bugs' else 'other shapes'}: "
              f"before {b:.1f} s, after {a:.1f} s: {a / b:.2f}×; CPU before {cb:.1f} s, "
              f"after {ca:.1f} s: {ca / cb:.2f}× (best of {repeat} each)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"commit (default {BASELINE})")
    parser.add_argument("--tree", type=Path, help="the earlier tree, checked out already "
                        "(a `git worktree add --detach`), instead of --baseline")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--bug", action="store_true", help="also time a moons with a faulty ReLU")
    parser.add_argument("--bugs", action="store_true",
                        help="time the bundled bug scenarios and the other shapes instead")
    parser.add_argument("--quick", action="store_true",
                        help="small and fast, for the test suite: measures nothing")
    args = parser.parse_args()
    if args.quick:  # this tree against itself, on two scenarios
        args.tree, args.bugs, args.repeat = ROOT, True, 1
    with tempfile.TemporaryDirectory() as tmp:
        before = args.tree.resolve() if args.tree else baseline_tree(args.baseline, Path(tmp))
        name = args.tree or args.baseline
        if args.bugs:
            print(f"small scenarios, before = {name}, after = this tree")
            compare_small(before, ROOT, args.repeat, args.quick)
            return 0
        print(f"moons.py, before = {name}, after = this tree")
        compare(before, ROOT, "moons.py", args.repeat)
        if args.bug:
            print("moons.py with a faulty ReLU")
            compare(before, ROOT, "moons.py", args.repeat, lambda source: source.replace(
                "\nfor k in range(3):", BUGGY_RELU + "for k in range(3):"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
