"""Saved traces of `moons.py`: the binary format against JSON, side by side in one run.

Writes both files once, then loads each `--loads` times, alternating, and prints the
median load times, their ratio and the sizes. Targets (issue 8): the binary file loads
at least 20x faster than the JSON and is at most a fifth of its size.

    python bench/trace_files.py [--scenario scenarios/moons.py] [--loads 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this tree's mgtui, not whichever one is installed

from mgtui.trace import binary as tracefile
from mgtui.trace.export import dumps, load  # noqa: E402
from mgtui.recording.recorder import record  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "moons.py"))
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="small and fast, for the test suite: measures nothing")
    args = parser.parse_args()
    if args.quick:
        args.scenario, args.loads = str(ROOT / "scenarios" / "mlp.py"), 1
    trace = record(args.scenario)
    with tempfile.TemporaryDirectory() as tmp:
        as_json, as_binary = Path(tmp) / "t.json", Path(tmp) / "t.mgtrace"
        start = time.perf_counter()
        as_json.write_text(dumps(trace), encoding="utf-8")
        json_write = time.perf_counter() - start
        start = time.perf_counter()
        as_binary.write_bytes(tracefile.dumpb(trace))
        binary_write = time.perf_counter() - start
        times: dict[str, list[float]] = {"json": [], "binary": []}
        for _ in range(args.loads):
            for name, path in (("json", as_json), ("binary", as_binary)):
                start = time.perf_counter()
                back = load(path)
                times[name].append(time.perf_counter() - start)
                assert len(back) == len(trace)
        js, bn = (statistics.median(times[k]) for k in ("json", "binary"))
        size_json, size_binary = as_json.stat().st_size, as_binary.stat().st_size
    print(f"{Path(args.scenario).name}: {trace.node_count:,} nodes, {len(trace):,} steps")
    print(f"write      json {json_write:.2f} s   binary {binary_write:.2f} s")
    print(f"load       json {js:.2f} s   binary {bn:.3f} s   json/binary {js / bn:.1f}x (target >= 20)")
    print(f"size       json {size_json / 1e6:.1f} MB   binary {size_binary / 1e6:.1f} MB   "
          f"binary/json {size_binary / size_json:.3f} (target <= 0.2)")


if __name__ == "__main__":
    main()
