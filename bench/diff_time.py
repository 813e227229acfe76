"""`mgtui diff` on the 41-parameter MLP against a twin, side by side with the two plain runs.

The twin is `scenarios/mlp.py` with its loss written `(yout - ygt)*(yout - ygt)` rather
than `(yout - ygt)**2`: a graph of another shape (each difference made twice, a `*` where
the other has a `**2`), so the alignment has to match by value and treat the copies as
one quantity, not only walk identical graphs. Also timed: the MLP against itself (two
runs of one engine), and, where torch is installed, against its scalar torch twin
(`tests/data/diff/mlp_torch.py`: one float64 tensor a parameter, the same draws from
`random`), beside `python -c "import torch"` (torch's import is most of that run).

Each round, alternating: the whole command `mgtui diff mlp twin --json` in a fresh
process (both recordings, the comparison, the JSON), then `python mlp.py` and
`python twin.py` one after the other (what the two runs cost without mgtui). Then, in
this process, the phases: recording both sides (`open_sides`, side by side in two child
processes) and the comparison itself (`compare_traces`). Target (issue 21): the command
under 2 s.

    python bench/diff_time.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mgtui.diff import Tolerance, compare_traces, open_sides

ROOT = Path(__file__).resolve().parent.parent
SQUARED = "loss = sum((yout - ygt)**2 for ygt, yout in zip(ys, ypred))"
TWICE = "loss = sum((yout - ygt)*(yout - ygt) for ygt, yout in zip(ys, ypred))"
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def twin_of(path: Path, where: Path) -> Path:
    source = path.read_text()
    assert source.count(SQUARED) == 1, "scenarios/mlp.py's loss line has changed"
    twin = where / "mlp_twin.py"
    twin.write_text(source.replace(SQUARED, TWICE))
    return twin


def timed(args: list[str], ok=(0,)) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(args, cwd=ROOT, env=ENV, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    assert done.returncode in ok, done.stderr[-2000:]
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true",
                        help="small and fast, for the test suite: measures nothing")
    args = parser.parse_args()
    scenario = ROOT / "scenarios" / "mlp.py"
    if args.quick:
        args.rounds = 1
    with tempfile.TemporaryDirectory() as tmp:
        twin = twin_of(scenario, Path(tmp))
        mgtui = [sys.executable, "-m", "mgtui.cli", "diff"]
        rows: dict[str, list[float]] = {"diff": [], "self": [], "plain": [], "record": [],
                                        "compare": []}
        for _ in range(args.rounds):
            t, out = timed(mgtui + [str(scenario), str(twin), "--json"])
            doc = json.loads(out)
            assert doc["agree"], doc["difference"]
            rows["diff"].append(t)
            rows["self"].append(timed(mgtui + [str(scenario), str(scenario), "--json"])[0])
            rows["plain"].append(timed([sys.executable, str(scenario)])[0]
                                 + timed([sys.executable, str(twin)])[0])
            start = time.perf_counter()
            a, b = open_sides(str(scenario), str(twin))
            rows["record"].append(time.perf_counter() - start)
            start = time.perf_counter()
            c = compare_traces(a, b, Tolerance())
            rows["compare"].append(time.perf_counter() - start)
            assert c.agree
        torch_rows = time_torch_twin(mgtui, scenario, args.rounds)
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"{args.rounds} rounds, medians; {c.compared} backward passes, {c.aligned} "
          f"quantities aligned, {c.leaves} parameters' grads compared")
    print(f"diff, MLP against its twin:     {med['diff']:.3f} s  (target < 2 s)")
    print(f"diff, MLP against itself:       {med['self']:.3f} s")
    print(f"the two plain runs, one by one: {med['plain']:.3f} s  "
          f"(diff/plain {med['diff'] / med['plain']:.2f}x)")
    print(f"  in process: recording both    {med['record']:.3f} s")
    print(f"  in process: the comparison    {med['compare']:.3f} s")
    if torch_rows:
        tm = {k: statistics.median(v) for k, v in torch_rows.items()}
        print(f"diff, MLP against its torch twin: {tm['diff']:.3f} s; `import torch` alone "
              f"{tm['import']:.3f} s; without it {tm['diff'] - tm['import']:.3f} s")
        print(f"the torch twin run plain:         {tm['plain']:.3f} s")


TORCH_TWIN = ROOT / "tests" / "data" / "diff" / "mlp_torch.py"


def time_torch_twin(mgtui: list[str], scenario: Path, rounds: int) -> dict[str, list[float]]:
    """The MLP against its torch twin, where torch is installed (else nothing)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None or not TORCH_TWIN.exists():
        print("(torch or its twin of the MLP is not here: the torch row is left out)")
        return {}
    rows: dict[str, list[float]] = {"diff": [], "import": [], "plain": []}
    for _ in range(rounds):
        t, out = timed(mgtui + [str(scenario), str(TORCH_TWIN), "--json"])
        assert json.loads(out)["agree"]
        rows["diff"].append(t)
        rows["import"].append(timed([sys.executable, "-c", "import torch"])[0])
        rows["plain"].append(timed([sys.executable, str(TORCH_TWIN)])[0])
    return rows


if __name__ == "__main__":
    main()
