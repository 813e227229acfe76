"""One hostile student in a class: what it costs `mgtui serve`, and what the others see.

A server process (`--workers N`), a student stepping every half second, and a client
that asks for the largest window (65535x65535) and sends keys as fast as SSH allows,
changing its window size between packets. Reports the server's memory over all its
processes (VmRSS summed, and PSS) at rest, at its peak during the flood and after; the
student's step latency (key -> new step on its emulated screen) before and during the
flood; how many characters the flood got the server to take; and how long its session
takes to end once the client is killed. Bounded: each wait 20 s, the flood --seconds.

Then two more cases (issue 34): a browser visitor of `mgtui serve --web` that sends 8 MB
of keys in a moment and closes its websocket (the server's memory over its processes,
how long until the visitor's process is gone, and whether its seat is free again), and
two quiz answers at the ends of the float range (1.7e308, -1.7e308) against a teacher's
console (refused, the bound said; the teacher's session still stepping; the memory).

    python bench/serve_hostile.py [--seconds 60] [--workers 1] [--lesson mlp]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the tests' SSH clients and server process

from sshclient import PASSWORD, Flooder, ServerProcess, memory_mb, processes  # noqa: E402


def pss_mb(pid: int) -> float:
    total = 0
    for each in processes(pid):
        try:
            text = Path(f"/proc/{each}/smaps_rollup").read_text()
        except OSError:
            continue
        found = re.search(r"^Pss:\s+(\d+)", text, re.M)
        total += int(found.group(1)) if found else 0
    return total / 1024


def step_of(client) -> int | None:
    found = re.search(r"step (\d+)/(\d+)", client.text())
    return int(found.group(1)) if found else None


async def steps(client, seconds: float) -> list[float]:
    """Step back and forth every half second for `seconds`: each step's latency."""
    times = []
    deadline = time.monotonic() + seconds
    last = int(re.search(r"step \d+/(\d+)", client.text()).group(1))
    while time.monotonic() < deadline:
        now = step_of(client)
        key, want = ("n", now + 1) if now < last else ("p", now - 1)
        start = time.monotonic()
        client.send(key)
        if not await client.wait_for(lambda _: step_of(client) == want, 20):
            raise SystemExit(f"the student's step did not come in 20 s (at {step_of(client)})")
        times.append(time.monotonic() - start)
        await asyncio.sleep(0.5)
    return times


def summary(times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    p95 = statistics.quantiles(ms, n=20)[-1] if len(ms) > 1 else ms[0]
    return f"median {statistics.median(ms):.0f} ms, p95 {p95:.0f} ms, max {ms[-1]:.0f} ms ({len(ms)} steps)"


async def resizing(flooder: Flooder, stop: asyncio.Event) -> int:
    """Window changes as fast as the event loop turns, between the flood's packets."""
    count = 0
    chan = next(iter(flooder.conn._channels.values()))  # (its one session)
    while not stop.is_set():
        chan.change_terminal_size(65535 - count % 2, 65535)
        count += 1
        await asyncio.sleep(0.001)
    return count


async def main(seconds: float, workers: int, lesson: str) -> None:
    srv = ServerProcess(Path(tempfile.mkdtemp(prefix="mgtui-hostile-")), "--workers",
                        str(workers), "--max-sessions", "10", lessons=(lesson,))
    pid = srv.process.pid
    flooder = None
    try:
        student = await srv.join(password=PASSWORD)
        assert await student.wait_for(lambda _: step_of(student) is not None, 20)
        calm = await steps(student, 10)
        await asyncio.sleep(2)
        rest, rest_pss = memory_mb(pid), pss_mb(pid)
        print(f"server ({len(processes(pid))} processes) at rest, one student in: "
              f"RSS {rest:.0f} MB, PSS {rest_pss:.0f} MB", flush=True)
        print(f"student, calm: {summary(calm)}", flush=True)
        flooder = await Flooder.start(srv.port, size=(65535, 65535))
        await srv.logged(r"session start flood@\S+ as student \(xterm-256color, 500x200\)", 20)
        stop = asyncio.Event()
        resizes = asyncio.create_task(resizing(flooder, stop))
        peak = [rest, rest_pss]

        async def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], memory_mb(pid))
                peak[1] = max(peak[1], pss_mb(pid))
                await asyncio.sleep(0.5)

        sampler = asyncio.create_task(sample())
        started = time.monotonic()
        flooded = await steps(student, seconds)
        stop.set()
        changes = await resizes
        await sampler
        took = flooder.sent
        print(f"flood, {time.monotonic() - started:.0f} s: the server took {took:,} characters "
              f"({took / (time.monotonic() - started):,.0f}/s) and {changes:,} window changes; "
              f"drew {flooder.received:,} characters back", flush=True)
        print(f"server memory at its peak: RSS {peak[0]:.0f} MB (+{peak[0] - rest:.0f} above "
              f"rest), PSS {peak[1]:.0f} MB (+{peak[1] - rest_pss:.0f})", flush=True)
        print(f"student, during the flood: {summary(flooded)}", flush=True)
        flooder.kill()
        gone = time.monotonic()
        await srv.logged(r"session end flood@", 20)
        print(f"the flood's session ended {time.monotonic() - gone:.2f} s after its client "
              "was killed", flush=True)
        await asyncio.sleep(5)
        print(f"server 5 s later: RSS {memory_mb(pid):.0f} MB, PSS {pss_mb(pid):.0f} MB",
              flush=True)
    finally:
        if flooder is not None:
            flooder.kill()
        await srv.close()


async def web_flood(megabytes: int = 8) -> None:
    """A browser visitor floods keys, then leaves: memory, and its process's end."""
    import json
    import socket
    import subprocess

    import aiohttp

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, XDG_STATE_HOME=tempfile.mkdtemp(prefix="mgtui-web-"),
               PYTHONPATH=str(ROOT))
    server = subprocess.Popen(
        [sys.executable, "-c", "from mgtui.cli import entry; entry()", "serve", "chain", "--web",
         "--port", str(port), "--max-sessions", "1"], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    session = aiohttp.ClientSession()
    try:
        async def visit():
            for _ in range(200):
                try:
                    ws = await session.ws_connect(f"http://127.0.0.1:{port}/ws?width=80&height=24")
                    break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.3)
            seen = b""
            async with asyncio.timeout(60):
                while b"step 0/" not in seen:
                    message = await ws.receive()
                    if isinstance(message.data, bytes):
                        seen = seen[-200:] + message.data
            return ws

        ws = await visit()
        rest = memory_mb(server.pid)
        print(f"web: server and one visitor at rest: RSS {rest:.0f} MB "
              f"({len(processes(server.pid))} processes)", flush=True)
        chunk = json.dumps(["stdin", "np" * 32768])
        started = time.monotonic()
        for _ in range(megabytes * 16):
            await ws.send_str(chunk)
        sent = time.monotonic() - started
        peak = rest
        for _ in range(5):  # (the visitor taking what it was sent, for a moment)
            await asyncio.sleep(0.3)
            peak = max(peak, memory_mb(server.pid))
        await ws.close()
        gone = time.monotonic()
        while len(processes(server.pid)) > 1 and time.monotonic() - gone < 30:
            peak = max(peak, memory_mb(server.pid))
            await asyncio.sleep(0.1)
        ended = time.monotonic() - gone
        print(f"web: {megabytes} MB of keys sent in {sent:.2f} s; peak RSS {peak:.0f} MB "
              f"(+{peak - rest:.0f}); the visitor's process gone {ended:.1f} s after its "
              f"websocket closed; server now {memory_mb(server.pid):.0f} MB", flush=True)
        again = await visit()  # its seat (the only one) is free
        print("web: its seat taken again by a new visitor", flush=True)
        await again.close()
    finally:
        await session.close()
        server.terminate()
        server.wait(20)


async def quiz_overflow(workers: int) -> None:
    """Answers of 1.7e308 and -1.7e308 against the teacher's console."""
    srv = ServerProcess(Path(tempfile.mkdtemp(prefix="mgtui-quiz-")), "--workers",
                        str(workers), "--quiz")
    try:
        teacher = await srv.join(key=srv.teacher_key, user="rivera", size=(120, 34))
        assert await teacher.wait_for("step ", 20)
        students = [await srv.join(password=PASSWORD, user=name, size=(120, 34))
                    for name in ("ada", "bob")]
        rest = memory_mb(srv.process.pid)
        teacher.send("n" * 9)
        for student, huge in zip(students, ("1.7e308", "-1.7e308")):
            assert await student.wait_for("press a to answer", 20), student.text()
            student.send("a")
            assert await student.wait_for("Your prediction", 10)
            student.send(huge + "\r")
            refused = await student.wait_for("is not taken", 10)
            student.send("a")
            assert await student.wait_for("Your prediction", 10)
            student.send(("1e12" if huge[0] != "-" else "-1e12") + "\r")
        drawn = await teacher.wait_for("0/2 right", 20)
        teacher.send("n")
        steps = await teacher.wait_for("step 10/", 20)
        print(f"quiz: 1.7e308 and -1.7e308 {'refused, the bound said' if refused else 'TAKEN'}; "
              f"the teacher's histogram of ±1e12 {'drawn' if drawn else 'NOT drawn'}, its "
              f"session {'still stepping' if steps else 'ENDED'}; server RSS {rest:.0f} -> "
              f"{memory_mb(srv.process.pid):.0f} MB", flush=True)
    finally:
        await srv.close()


async def everything(options) -> None:
    await main(options.seconds, options.workers, options.lesson)
    await web_flood(2 if options.quick else 8)
    await quiz_overflow(options.workers)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--lesson", default="chain")
    parser.add_argument("--quick", action="store_true",
                        help="small and fast, for the test suite: measures nothing")
    options = parser.parse_args()
    if options.quick:
        options.seconds = 3
    print(f"python {sys.version.split()[0]}, load {os.getloadavg()[0]:.1f}, lesson "
          f"{options.lesson}, --workers {options.workers}", flush=True)
    asyncio.run(everything(options))
