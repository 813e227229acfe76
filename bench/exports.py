"""The lesson exports' size and time: `--export html` (target for mlp: under 1 MB and
2 s) and `--export cast`, each against `--export json` of the same lesson, alternating in
one run (the machine is shared), as the command line runs them: recording included.

    python bench/exports.py [--rounds 5] [--lesson mlp] [--cast-lesson neuron]

Prints, per export, the median wall time and CPU time (this process's children: the
command and the scenario's recording child) and the output's size, then where the
html export's time goes, measured in this process.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

MGTUI = [sys.executable, "-m", "mgtui.cli"]


def timed(args: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s, bytes written) of one `mgtui` command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(MGTUI + args, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"mgtui {' '.join(args)} failed: {done.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, len(done.stdout)


def compare(exports: dict[str, list[str]], rounds: int) -> None:
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in exports}
    for _ in range(rounds):
        for name, args in exports.items():
            results[name].append(timed(args))
    for name, runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"  {name:28s} wall {wall:5.2f} s   cpu {cpu:5.2f} s   {runs[0][2]:>10,} bytes")


def phases(lesson: str) -> None:
    """Where `--export html`'s time goes (in this process, after the imports)."""
    from mgtui.run.bundled import resolve
    from mgtui.tui.export_html import add_pictures, deflated
    from mgtui.tui.export_html_data import pack_lesson
    from mgtui.run.runner import run

    marks = [("start", time.perf_counter())]
    trace = run(resolve(lesson)).trace
    marks.append(("record (child process)", time.perf_counter()))
    packed = pack_lesson(trace)
    marks.append(("pack: steps explained", time.perf_counter()))
    add_pictures(trace, packed)
    marks.append(("graph pictures", time.perf_counter()))
    body = json.dumps(packed.data, ensure_ascii=False, separators=(",", ":")).encode()
    marks.append(("JSON", time.perf_counter()))
    squeezed = deflated(body)
    marks.append(("deflate", time.perf_counter()))
    for (_, t0), (name, t1) in zip(marks, marks[1:]):
        print(f"  {name:28s} {t1 - t0:5.2f} s")
    print(f"  JSON {len(body):,} bytes, deflated {len(squeezed):,} "
          f"(level 9 would be {len(zlib.compress(body, 9)):,})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lesson", default="mlp")
    parser.add_argument("--cast-lesson", default="neuron")
    parser.add_argument("--quick", action="store_true",
                        help="small and fast, for the test suite: measures nothing")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.lesson, args.cast_lesson = 1, "chain", "chain"
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    print(f"{args.lesson}: html against json, {args.rounds} rounds alternating")
    compare({f"{args.lesson} --export json": [args.lesson, "--export", "json"],
             f"{args.lesson} --export html": [args.lesson, "--export", "html"]}, args.rounds)
    print(f"{args.cast_lesson} and {args.lesson}: cast, {max(args.rounds // 2, 1)} rounds")
    compare({f"{args.cast_lesson} --export json": [args.cast_lesson, "--export", "json"],
             f"{args.cast_lesson} --export cast": [args.cast_lesson, "--export", "cast"],
             f"{args.lesson} --export cast": [args.lesson, "--export", "cast"]},
            max(args.rounds // 2, 1))
    print(f"{args.lesson} --export html, phase by phase:")
    phases(args.lesson)


if __name__ == "__main__":
    main()
