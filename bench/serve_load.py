"""Load test of `mgtui serve`: a server process and 30 asyncssh clients on loopback.

Each client logs in, follows the teacher for 20 steps, detaches, and steps 30 times on
its own; every client's screen (a pyte terminal, read from the client's side) must show
the right step each time. Then a client cut off mid-frame, a window of 10x5 and a wrong
password, after which one more client must still be served.

Reports the server's memory (VmRSS) before, with 1 and with N sessions and after they
all leave, and the step latency (key sent -> new step on the client's screen) with one
session and with N sessions stepping at once. The server's memory and CPU are those of
all its processes (the front and its workers). Bounded: 20 s per wait, 600 s in all.

    python bench/serve_load.py [--clients 30] [--lesson mlp] [--workers N] [--quick]
                               [--teacher-only]

--teacher-only: the class joins and the teacher leads its 20 steps (the first 10 with
the node table, the last 10 with the Graph pane open), then switches lessons (`o`, to
chain, or neuron when the lesson is chain) and leads a few steps there, then the
server ends: the teacher's figures in a minute, not four. The full run takes the
lesson switch there too, and comes back to the lesson's step 20 after it.

--quick (tests/bench/test_benches.py): 3 clients, 5 steps where there were 30, no pauses at
a person's pace and shorter waits for the server to settle; it measures nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import asyncssh

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the tests' SSH client, whose screen is a pyte terminal

from sshclient import ScreenClient  # noqa: E402

PASSWORD = "load test password"
TABLE = re.compile(r"\bid +label ")  # the node table's heading: gone while the Graph pane shows
WAIT = 20.0
# steps: one session alone, each student at a person's pace, each in the burst; the
# pauses of a person's pace, and the seconds the server is given to settle
SIZES = {"full": (30, 30, 10, (0.5, 1.5), 1.0), "quick": (5, 5, 3, (0.0, 0.0), 0.2)}


def processes(pid: int) -> list[int]:
    """The server's processes: itself and its descendants (the zygote that forks the
    workers, and the workers)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        each = todo.pop()
        found.append(each)
        todo.extend(parents.get(each, []))
    return found


def read(path: str) -> str:
    """A /proc file, or "" if its process has ended meanwhile (a worker retiring)."""
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def smaps_mb(pid: int) -> str:
    """The server's resident memory by kind: its heap, anonymous mappings, files."""
    kinds = {"heap": 0, "anon": 0, "file": 0}
    kind = "anon"
    for each in processes(pid):
        for line in read(f"/proc/{each}/smaps").splitlines():
            fields = line.split()
            if not fields[0].endswith(":"):
                name = fields[5] if len(fields) > 5 else ""
                kind = "heap" if name == "[heap]" else "file" if name.startswith("/") else "anon"
            elif fields[0] == "Rss:":
                kinds[kind] += int(fields[1])
    return ", ".join(f"{k} {v / 1024:.1f}" for k, v in kinds.items())


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def summed_mb(pid: int, file: str, field: str) -> float:
    """A field of /proc/PID/`file` in kB, summed over the server's processes, in MB."""
    total = 0
    for each in processes(pid):
        for line in read(f"/proc/{each}/{file}").splitlines():
            if line.startswith(field):
                total += int(line.split()[1])
    return total / 1024


def rss_mb(pid: int) -> float:
    return summed_mb(pid, "status", "VmRSS:")


def pss_mb(pid: int) -> float:
    """The server's proportional set size: each page shared between its processes (or
    with any other) counted once in all, not once in each. The sum of the processes'
    RSS counts a page of a shared library once for every worker that has touched it:
    the first SSH handshake in a worker maps some 6 MB of the crypto libraries, pages
    the system already holds."""
    return summed_mb(pid, "smaps_rollup", "Pss:")


class Memory:
    """The server's memory read both ways, in MB."""

    def __init__(self, pid: int) -> None:
        self.rss, self.pss = rss_mb(pid), pss_mb(pid)


def cpu_seconds(pid: int) -> float:
    total = 0
    for each in processes(pid):
        fields = read(f"/proc/{each}/stat").rsplit(")", 1)[-1].split()
        total += int(fields[11]) + int(fields[12]) if len(fields) > 12 else 0
    return total / os.sysconf("SC_CLK_TCK")


def step_of(client: ScreenClient) -> int | None:
    match = re.search(r"step (\d+)/\d+", client.text())
    return int(match.group(1)) if match else None


async def at_step(client: ScreenClient, step: int) -> bool:
    return await client.wait_for(lambda _: step_of(client) == step, WAIT)


async def timed_step(client: ScreenClient, key: str, step: int) -> float:
    """The time from the key to the client's emulated screen showing the new step.
    (Read on the screen, not in the raw output: the server sends only the cells that
    change, so "step 12/" after "step 11/" arrives as a "2".)"""
    start = time.perf_counter()
    client.send(key)
    if not await at_step(client, step):
        raise AssertionError(f"a client shows step {step_of(client)}, not {step}")
    return time.perf_counter() - start


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


REST = [1.0]  # the scale of the settling waits (--quick shortens them)


async def settle(pid: int, seconds: float = 3.0) -> Memory:
    await asyncio.sleep(seconds * REST[0])
    return Memory(pid)


PICKER = "pick a scenario"
OTHER_STEPS = {"chain": 15, "neuron": 21}  # the other lesson's steps, as its header says


async def switch_lessons(teacher: ScreenClient, students: list[ScreenClient], other: str,
                         steps: int) -> tuple[float, list[float]]:
    """The teacher opens the `other` lesson (`o`, the picker's second row) and takes
    `steps` steps there, then opens the first lesson again and leads the class back to
    its step 20: the time from the teacher's choice until every screen shows the other
    lesson, and each step's there."""
    marker = f"step 0/{OTHER_STEPS[other]}"
    teacher.send("o")
    assert await teacher.wait_for(PICKER, WAIT), teacher.text()
    teacher.send("\x1b[B")  # (down to the second lesson)
    await asyncio.sleep(0.3)
    start = time.perf_counter()
    teacher.send("\r")
    shown = await asyncio.gather(*(s.wait_for(marker, WAIT) for s in students))
    switch = time.perf_counter() - start
    assert all(shown), next(s for s, ok in zip(students, shown) if not ok).text()
    assert await teacher.wait_for(lambda t: marker in t and PICKER not in t, WAIT)
    times = []
    for k in range(1, steps + 1):
        start = time.perf_counter()
        teacher.send("n")
        shown = await asyncio.gather(*(at_step(s, k) for s in students))
        times.append(time.perf_counter() - start)
        assert all(shown), next(s for s, ok in zip(students, shown) if not ok).text()
    teacher.send("o")  # back: the first lesson, at the class's step 20
    assert await teacher.wait_for(PICKER, WAIT), teacher.text()
    teacher.send("\r")
    assert await teacher.wait_for(lambda t: PICKER not in t and re.search(
        r"step 0/(\d+)", t) and re.search(r"step 0/(\d+)", t).group(1) != marker[7:],
        WAIT), teacher.text()
    teacher.send("n" * 20)
    back = await asyncio.gather(*(at_step(s, 20) for s in students))
    assert all(back), next(s for s, ok in zip(students, back) if not ok).text()
    return switch, times


def report_switch(clients: int, other: str, switch: float, steps: list[float]) -> None:
    print(f"the teacher's lesson switch (o, to {other}) until all {clients} screens show it: "
          f"{1000 * switch:.0f} ms; then each step there until all show it: median "
          f"{1000 * statistics.median(steps):.0f} ms, p95 {1000 * p95(steps):.0f} ms")


def report_teacher(clients: int, class_steps: list[float], graph_steps: list[float],
                   graph_open: float) -> None:
    print(f"teacher's step until all {clients} screens show it: median "
          f"{1000 * statistics.median(class_steps):.0f} ms, p95 {1000 * p95(class_steps):.0f} ms")
    print(f"... with the Graph pane open on every screen: median "
          f"{1000 * statistics.median(graph_steps):.0f} ms, p95 "
          f"{1000 * p95(graph_steps):.0f} ms (teacher's m until all show the pane: "
          f"{1000 * graph_open:.0f} ms)")
    print("... each step, ms: table " + " ".join(f"{1000 * t:.0f}" for t in class_steps)
          + "; Graph pane " + " ".join(f"{1000 * t:.0f}" for t in graph_steps))


async def main(clients: int, lesson: str, workers: int | None, quick: bool = False,
               teacher_only: bool = False) -> None:
    alone_n, paced_n, burst_n, pace, REST[0] = SIZES["quick" if quick else "full"]
    other = "neuron" if lesson == "chain" else "chain"  # the lesson the teacher switches to
    work = Path(tempfile.mkdtemp(prefix="mgtui-serve-load-"))
    pw = work / "password"
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    teacher_key = asyncssh.generate_private_key("ssh-ed25519")
    (work / "teachers").write_bytes(teacher_key.export_public_key())
    env = dict(os.environ, XDG_STATE_HOME=str(work / "state"), PYTHONPATH=str(ROOT))
    server = subprocess.Popen(
        [sys.executable, "-c", "from mgtui.cli import entry; entry()", "serve", lesson, other,
         "--port", "0", "--password-file",
         str(pw), "--teacher-keys", str(work / "teachers"), "--max-sessions", str(clients + 5),
         "--max-sessions-per-address", str(clients + 5),  # (every client is on loopback)
         *(["--workers", str(workers)] if workers else [])],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        while port is None:
            line = server.stderr.readline()
            if not line:
                raise SystemExit("the server did not start")
            found = re.search(r"on 127\.0\.0\.1:(\d+)( in (\d+) processes)?", line)
            port = int(found.group(1)) if found else None
            served_by = int(found.group(3)) if found and found.group(3) else 1
        # drain the log so its pipe never fills, counting sessions started and ended
        sessions = {"start": 0, "end": 0}
        # at rest after a class: a server of one process logs that it has given the
        # class's memory back; a server of workers replaces each worker that served
        # (it retires once empty; a fresh one starts)
        given_back = [0]
        served: set[str] = set()  # the workers that have started a session
        retired: set[str] = set()  # and those that have retired since
        readies = [0]  # fresh workers ready (the first ones were, before the port line)

        walks: list[str] = []  # the server's walks of its whole heap, as it logs them

        def drain() -> None:
            for line in server.stderr:
                worker = re.search(r"\[worker (\d+)\]", line)
                worker = worker.group(1) if worker else ""
                for what in sessions:
                    sessions[what] += f" session {what} " in line
                if " session start " in line:
                    served.add(worker)
                given_back[0] += "its memory is given back" in line
                if "this worker retires" in line:
                    retired.add(worker)
                readies[0] += bool(re.search(r"worker \d+ \(pid \d+\) ready", line))
                if "walked the whole heap" in line:
                    walks.append(f"{line.split('after, in ')[-1].strip()} at {load()}")

        asyncio.get_running_loop().run_in_executor(None, drain)

        def at_rest(given: int) -> bool:
            if served_by == 1:
                return given_back[0] > given
            return served <= retired and readies[0] == len(retired)

        async def all_ended() -> float:
            """Wait (20 s at most) until the server has logged the end of every
            session it started, then (20 s more at most, 60 s for workers to start
            again) until it is at rest; how long that took."""
            start, given = time.perf_counter(), given_back[0]
            while sessions["end"] < sessions["start"] and time.perf_counter() - start < WAIT:
                await asyncio.sleep(0.1)
            while not at_rest(given) and time.perf_counter() - start < 3 * WAIT:
                await asyncio.sleep(0.1)
            return time.perf_counter() - start
        await asyncio.sleep(REST[0])
        base = Memory(server.pid)
        base_kinds = smaps_mb(server.pid)

        async def one_alone(first: int) -> tuple[list[float], float, float]:
            """One student stepping 30 times (`alone_n`) at a person's pace (a key
            about every second), the teacher connected and still: the latencies, the
            server's CPU per step, and its RSS with these two sessions."""
            solo = await ScreenClient.connect(port, password=PASSWORD)
            assert await solo.wait_for(f"step {first - 1}/", WAIT)
            solo.send("p")  # (at step 0 nothing to go back to; still its own move)
            if first > 1:
                assert await at_step(solo, first - 2)
                solo.send("n")
            rss = await settle(server.pid)
            times = []
            cpu = cpu_seconds(server.pid)
            for k in range(first, first + alone_n):
                await asyncio.sleep(random.uniform(*pace))
                times.append(await timed_step(solo, "n", k))
            cpu = (cpu_seconds(server.pid) - cpu) / len(times)
            await solo.close()
            return times, cpu, rss

        # one session alone: its step latency, and the memory one session costs
        teacher = await ScreenClient.connect(port, key=teacher_key)
        assert await teacher.wait_for(lambda t: "step 0/" in t or PICKER in t, WAIT)
        if PICKER in teacher.text():  # (two lessons, nobody leading yet: the first)
            teacher.send("\r")
        assert await teacher.wait_for(lambda t: "step 0/" in t and PICKER not in t, WAIT)
        loads = [load()]
        alone, alone_cpu, one_session = await one_alone(1)
        loads.append(load())

        # the class
        students = []
        for _ in range(clients):
            student = await ScreenClient.connect(port, password=PASSWORD)
            students.append(student)
        assert all(await asyncio.gather(*(s.wait_for("step 0/", WAIT) for s in students)))
        all_in = await settle(server.pid)
        followed, class_steps, graph_steps = 0, [], []
        class_load = load()
        # CPU of the teacher's steps (the node table's, the Graph pane's; `m` not in
        # them): the server's processes, and this process (the 30 emulators, asyncssh)
        cpu = {"server": [0.0, 0.0], "clients": [0.0, 0.0]}
        for k in range(1, 21):  # the teacher leads 20 steps; every screen must show each
            if k == 11:  # the last 10 with the Graph pane open, on every screen (issue 23)
                start = time.perf_counter()
                teacher.send("m")
                opened = await asyncio.gather(*(s.wait_for(lambda t: not TABLE.search(t), WAIT)
                                                for s in students))
                graph_open = time.perf_counter() - start
                assert all(opened), next(s for s, ok in zip(students, opened) if not ok).text()
            server_cpu, clients_cpu = cpu_seconds(server.pid), time.process_time()
            start = time.perf_counter()
            teacher.send("n")
            shown = await asyncio.gather(*(at_step(s, k) for s in students))
            (graph_steps if k > 10 else class_steps).append(time.perf_counter() - start)
            cpu["server"][k > 10] += cpu_seconds(server.pid) - server_cpu
            cpu["clients"][k > 10] += time.process_time() - clients_cpu
            if not all(shown):
                lagging = [s for s, ok in zip(students, shown) if not ok]
                raise AssertionError(f"after the teacher's step {k}, {len(lagging)} screens "
                                     f"lag; one shows:\n{lagging[0].text()}")
            followed += len(shown)
        teacher.send("m")  # the node table again, for what follows
        closed = await asyncio.gather(*(s.wait_for(lambda t: bool(TABLE.search(t)), WAIT) for s in students))
        assert all(closed), next(s for s, ok in zip(students, closed) if not ok).text()
        switched = await switch_lessons(teacher, students, other, min(alone_n, 10))
        cpu_note = (f"CPU per teacher's step, table / Graph pane: the server's processes "
                    f"{100 * cpu['server'][0]:.0f} / {100 * cpu['server'][1]:.0f} ms, this "
                    f"process (the {clients} emulators, SSH) {100 * cpu['clients'][0]:.0f} / "
                    f"{100 * cpu['clients'][1]:.0f} ms")
        if teacher_only:
            print(f"lesson {lesson}, {clients} clients, {served_by} process"
                  f"{'es' if served_by > 1 else ''} serving sessions; the teacher's steps only")
            print(f"load average (1 min) on {os.cpu_count()} CPUs: the class {class_load}-{load()}")
            print("server memory per extra session (RSS / PSS): " + " / ".join(
                f"{(getattr(all_in, k) - getattr(one_session, k)) / clients:.2f}"
                for k in ("rss", "pss")) + " MB")
            report_teacher(clients, class_steps, graph_steps, graph_open)
            report_switch(clients, other, *switched)
            print(cpu_note)
            return
        # each detaches (p: its own move), then steps 30 times on its own, all at once
        for s in students:
            s.send("p")
        assert all(await asyncio.gather(*(at_step(s, 19) for s in students))), "detach"

        async def own_steps(s: ScreenClient, first: int, count: int, paced: bool) -> list[float]:
            times = []
            for k in range(first, first + count):
                if paced:
                    await asyncio.sleep(random.uniform(*pace))
                times.append(await timed_step(s, "n", k))
            return times

        # 30 steps each at a person's pace (a key about every second, all 30 students)
        loads.append(load())
        cpu_before = cpu_seconds(server.pid)
        walks_before = len(walks)
        together = [t for ts in await asyncio.gather(*(own_steps(s, 20, paced_n, True)
                                                       for s in students)) for t in ts]
        cpu_per_step = (cpu_seconds(server.pid) - cpu_before) / len(together)
        walks_paced = walks[walks_before:]
        loads.append(load())
        # then 10 more each, every student at once as fast as the screens come back
        burst = [t for ts in await asyncio.gather(*(own_steps(s, 20 + paced_n, burst_n, False)
                                                    for s in students)) for t in ts]

        # the awkward ones; then one more client must still be served
        cut = students.pop()
        cut.send("n" * 20)
        cut.conn.abort()
        tiny = students.pop()
        tiny.resize(10, 5)
        try:
            await ScreenClient.connect(port, password="wrong")
            refused = False
        except asyncssh.PermissionDenied:
            refused = True
        check = await ScreenClient.connect(port, password=PASSWORD)
        assert await check.wait_for("step ", WAIT)
        check.send("n")
        served_after = await at_step(check, 21)  # it joined on the teacher's step 20
        students.append(tiny)
        students.append(check)
        for s in students:
            await s.close()
        await teacher.close()
        ended_in = await all_ended()
        after = await settle(server.pid, 5.0)
        kinds_before, kinds_after = base_kinds, smaps_mb(server.pid)
        # a second class, to tell memory kept by sessions from the heap's own growth
        again = [await ScreenClient.connect(port, password=PASSWORD) for _ in range(clients)]
        assert all(await asyncio.gather(*(s.wait_for("step ", WAIT) for s in again)))
        for s in again:
            s.send("pnnnn")
        await asyncio.sleep(3 * REST[0])
        for s in again:
            await s.close()
        ended_again_in = await all_ended()
        after_again = await settle(server.pid, 5.0)
        # one session alone again, measured as before, now that the class has been:
        # the two runs of 30 steps are the one-session figure
        teacher = await ScreenClient.connect(port, key=teacher_key)
        assert await teacher.wait_for("step ", WAIT)
        loads.append(load())
        alone_after, alone_cpu_after, _ = await one_alone(21)
        loads.append(load())
        await teacher.close()
        alone_both = alone + alone_after
        print(f"lesson {lesson}, {clients} clients, server pid {server.pid}, "
              f"{served_by} process{'es' if served_by > 1 else ''} serving sessions")
        print(f"screens right: {followed} follow checks + {len(together) + len(burst)} own steps, all right")
        for kind in ("rss", "pss"):
            b, o, a, f, g = (getattr(m, kind) for m in (base, one_session, all_in, after,
                                                        after_again))
            print(f"server {kind.upper()} MB: before {b:.1f}, 2 sessions {o:.1f}, "
                  f"{clients + 1} sessions {a:.1f}, after all left {f:.1f} "
                  f"({100 * (f - b) / b:+.1f}% of before); after a second class "
                  f"{g:.1f} ({100 * (g - f) / f:+.1f}% of after the first); memory per "
                  f"extra session {(a - o) / clients:.2f} MB")
        print(f"server RSS by kind, MB: before ({kinds_before}); after all left ({kinds_after}); "
              f"each 'after' 5 s after the server was at rest (it had logged that it had "
              f"given the class's memory back, or replaced each worker that served), "
              f"{ended_in:.1f} s and {ended_again_in:.1f} s after the clients closed")
        print(f"step latency p95 at a person's pace: 1 session {1000 * p95(alone_both):.1f} ms "
              f"(before the class {1000 * p95(alone):.1f}, after it "
              f"{1000 * p95(alone_after):.1f}), {clients} sessions "
              f"{1000 * p95(together):.1f} ms (ratio {p95(together) / p95(alone_both):.2f}); "
              f"median {1000 * statistics.median(alone_both):.1f} / "
              f"{1000 * statistics.median(together):.1f} ms")
        print(f"server CPU per session step at a person's pace: 1 session "
              f"{1000 * alone_cpu:.1f} / {1000 * alone_cpu_after:.1f} ms (before / after), "
              f"{clients} sessions {1000 * cpu_per_step:.1f} ms")
        print(f"whole-heap walks of the server (mgtui/serve/heap.py): {len(walks)} in all "
              f"({'; '.join(walks) or 'none'}), {len(walks_paced)} while the class stepped "
              f"at a person's pace")
        print(f"load average (1 min) on {os.cpu_count()} CPUs: one session {loads[0]}-{loads[1]}, "
              f"the class {loads[2]}-{loads[3]}, one session after {loads[4]}-{loads[5]}")
        report_teacher(clients, class_steps, graph_steps, graph_open)
        report_switch(clients, other, *switched)
        print(cpu_note)
        print(f"step latency with all {clients} pressing n at once, as fast as their screens "
              f"come back: p95 {1000 * p95(burst):.1f} ms, median "
              f"{1000 * statistics.median(burst):.1f} ms")
        print(f"cut-off client, 10x5 window, wrong password refused={refused}: "
              f"another client served={served_after}")
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--lesson", default="mlp")
    parser.add_argument("--workers", type=int, default=None,
                        help="the server's --workers (default: the server's own default)")
    parser.add_argument("--quick", action="store_true",
                        help="a quick run that measures nothing (3 clients, few steps)")
    parser.add_argument("--teacher-only", action="store_true",
                        help="only the teacher's 20 steps to the class (then the server ends)")
    args = parser.parse_args()
    clients = 3 if args.quick else args.clients
    asyncio.run(asyncio.wait_for(main(clients, args.lesson, args.workers, args.quick,
                                      args.teacher_only), 600))
