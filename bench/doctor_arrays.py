"""Time the gradient doctor on the tensor engine's bugs and lessons (issue 20, item 4)
side by side with the scalar ones that match them, in one run, in turns:

    python bench/doctor_arrays.py [--repeat N] [--quick]

Each pair is a tensor scenario and its scalar counterpart (the same bug or lesson with
`Value`): each doctor run is a process of its own (`doctor_time.timed`: wall clock and
the CPU of the whole process tree, every re-run included), best of `--repeat`. Prints
the seconds, the recordings each made and what each found, and the ratio tensor/scalar.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doctor_time import ROOT, timed  # noqa: E402

PAIRS = [  # (tensor, scalar): the same kind of bug, or the same lesson
    ("bugs/unbroadcast_mean.py", "bugs/wrong_derivative.py"),
    ("bugs/matmul_transposed.py", "bugs/wrong_derivative.py"),
    ("bugs/no_broadcast_sum.py", "bugs/foreign_write.py"),
    ("bugs/tensor_overwrite.py", "bugs/overwrite.py"),
    ("tensor_neuron.py", "neuron.py"),
    ("tensor_mlp.py", "mlp.py"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="one pair, once, for the test suite: measures nothing")
    args = parser.parse_args()
    pairs = PAIRS[3:4] if args.quick else PAIRS
    if args.quick:
        args.repeat = 1
    scenarios = sorted({name for pair in pairs for name in pair})
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    runs: dict[str, list[dict]] = {}
    for _ in range(args.repeat):
        for name in scenarios:  # in turns: a busy moment hits each alike
            runs.setdefault(name, []).append(timed(ROOT, ROOT / "scenarios" / name, None))
    best = {name: min(r, key=lambda x: x["total"]) for name, r in runs.items()}
    cpu = {name: min(x["cpu"] for x in r) for name, r in runs.items()}
    print(f"{'tensor':28s} {'wall':>6s} {'CPU':>6s} runs | {'scalar':26s} {'wall':>6s} "
          f"{'CPU':>6s} runs | wall ×  CPU ×")
    for tensor, scalar in pairs:
        a, b = best[tensor], best[scalar]
        print(f"{tensor:28s} {a['total']:5.2f}s {cpu[tensor]:5.2f}s {a['runs']:>4} | "
              f"{scalar:26s} {b['total']:5.2f}s {cpu[scalar]:5.2f}s {b['runs']:>4} | "
              f"{a['total'] / b['total']:5.2f}  {cpu[tensor] / cpu[scalar]:5.2f}")
    for name in scenarios:
        print(f"  {name}: {'; '.join(best[name]['findings']) or 'no findings'}")
    wall = sum(best[a]["total"] for a, _ in pairs) / sum(best[b]["total"] for _, b in pairs)
    print(f"tensor/scalar, best of {args.repeat}, all pairs: wall {wall:.2f}×")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
