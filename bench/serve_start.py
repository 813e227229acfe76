"""Start-up of `mgtui serve` (issue 35, point 9): a class of four lessons including
mlp, and a student who logs in as soon as the port is open. Times from the command's
start: the port announced, the student's first screen (the lesson picker while nobody
leads, or a lesson), the student's first lesson screen (the picker's first lesson
opened), the background warm-up done. Target: the first lesson screen within 3 s on
an idle machine.

    python bench/serve_start.py [--root DIR] [--workers N] [--runs K] [--log] [--quick]

--root: the mgtui checkout to run (another worktree, say main's, for a side-by-side:
run once with each and compare). --quick (tests/bench/test_benches.py): the chain lesson
only, one run; it measures nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import asyncssh

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the tests' SSH client, a pyte terminal

from sshclient import ScreenClient  # noqa: E402

PASSWORD = "start-up bench"
LESSONS = ("chain", "neuron", "neuron_exp", "mlp")
WAIT = 180.0  # seconds at most for any one event
SHOW_LOG = False  # --log: the server's lines as they come, with their times


def run_once(root: Path, lessons: tuple[str, ...], workers: str | None) -> dict:
    """One server started, one student in as soon as it listens; the seconds of each
    event since the start."""
    with tempfile.TemporaryDirectory() as tmp:
        pw = Path(tmp) / "password"
        pw.write_text(PASSWORD + "\n")
        pw.chmod(0o600)
        env = dict(os.environ, PYTHONPATH=str(root), XDG_STATE_HOME=str(Path(tmp) / "state"))
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-c", "from mgtui.cli import entry; entry()", "serve", *lessons,
             "--port", "0", "--password-file", str(pw),
             *(["--workers", workers] if workers else [])],
            cwd=root, env=env, stderr=subprocess.PIPE, text=True, errors="replace")
        times: dict[str, float] = {}
        lines: list[str] = []

        def drain() -> None:
            for line in process.stderr:
                lines.append(line)
                if SHOW_LOG and "Warning" not in line and not line.startswith("  "):
                    print(f"    {time.monotonic() - started:5.1f} s  {line.rstrip()[:110]}")
                if "warmed up" in line and "warm-up" not in times:
                    times["warm-up"] = time.monotonic() - started

        threading.Thread(target=drain, daemon=True).start()
        try:
            asyncio.run(student(lines, started, times))
            deadline = time.monotonic() + WAIT
            while "warm-up" not in times and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
        if len(times) < 4:
            raise SystemExit("the server did not get that far:\n" + "".join(lines)[-3000:])
        return times


async def student(lines: list[str], started: float, times: dict) -> None:
    deadline = time.monotonic() + WAIT
    port = 0
    while not port and time.monotonic() < deadline:
        found = re.search(r"on 127\.0\.0\.1:(\d+)[; ]", "".join(lines))
        port = int(found.group(1)) if found else 0
        await asyncio.sleep(0.01)
    times["port open"] = time.monotonic() - started
    client = await ScreenClient.connect(port, user="ada", password=PASSWORD, size=(80, 24))
    try:
        assert await client.wait_for(lambda t: "pick a" in t or re.search(r"step \d+/", t),
                                     WAIT), client.text()
        times["first screen"] = time.monotonic() - started
        if "pick a" in client.text():
            client.send("\r")
        assert await client.wait_for(lambda t: "pick a" not in t and re.search(
            r"step \d+/", t), WAIT), client.text()
        times["first lesson screen"] = time.monotonic() - started
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--workers", default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--log", action="store_true", help="show the server's log, timed")
    args = parser.parse_args()
    global SHOW_LOG
    SHOW_LOG = args.log
    lessons, runs = (("chain",), 1) if args.quick else (LESSONS, args.runs)
    print(f"mgtui serve {' '.join(lessons)} ({args.root}; workers: {args.workers or 'default'}; "
          f"load {os.getloadavg()[0]:.1f} before)")
    found = [run_once(args.root, lessons, args.workers) for _ in range(runs)]
    for event in ("port open", "first screen", "first lesson screen", "warm-up"):
        each = [f"{t[event]:.1f}" for t in found]
        print(f"  {event:<20} median {statistics.median(t[event] for t in found):5.1f} s"
              f"   (runs: {', '.join(each)})")
    print(f"load {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    asyncssh.set_log_level("WARNING")
    main()
