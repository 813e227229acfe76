"""Time the gradient doctor on `moons.py`: SPEC section 6 wants it under a minute here.

Runs `diagnose()` on moons.py (and, with `--bug`, on a copy whose ReLU passes gradient
for negative inputs, to time a run that has to localise a fault), prints the seconds of
each phase, the number of recordings and the findings.

    python bench/doctor_time.py [--seed N] [--sample N] [--bug]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # time this tree's doctor, not whichever mgtui is installed

from mgtui.doctor import diagnose  # noqa: E402

MOONS = ROOT / "scenarios" / "moons.py"

BUGGY_RELU = '''
def relu(self):
    out = Value(0 if self.data < 0 else self.data, (self,), 'ReLU')
    def _backward():
        self.grad += (out.data >= 0) * out.grad  # BUG: >= passes grad for inputs < 0
    out._backward = _backward
    return out
Value.relu = relu

'''


def timed(path: Path, seed: int, sample: int | None) -> None:
    marks: list[tuple[str, float]] = []

    def progress(done: int, total: int, phase: str) -> None:
        if not marks or marks[-1][0] != phase:
            marks.append((phase, time.perf_counter()))

    start = time.perf_counter()
    report = diagnose(path, seed=seed, sample=sample, on_progress=progress)
    end = time.perf_counter()
    print(f"{path.name}: {report.trace.node_count:,} nodes, {len(report.trace):,} steps, "
          f"{report.runs} recordings, {report.checked_nodes:,} nodes checked numerically")
    for (phase, t0), (_, t1) in zip(marks, marks[1:] + [("end", end)]):
        print(f"  {phase:28s} {t1 - t0:6.1f} s")
    print(f"  {'total':28s} {end - start:6.1f} s")
    for f in report.findings:
        print(f"  finding: {f.kind} at {f.label} (line {f.line}): {f.message[:100]}")
    if not report.findings:
        print("  no findings")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", type=int)
    parser.add_argument("--bug", action="store_true", help="also time a moons with a faulty ReLU")
    args = parser.parse_args()
    timed(MOONS, args.seed, args.sample)
    if args.bug:
        source = MOONS.read_text().replace("\nfor k in range(3):", BUGGY_RELU + "for k in range(3):")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "moons_bug.py"
            path.write_text(source)
            timed(path, args.seed, args.sample)
    return 0


if __name__ == "__main__":
    sys.exit(main())
