"""The CPU a class costs one process when the teacher steps with the Graph pane open: a
teacher's `ServedApp` and N students' in one process (as one worker of `mgtui serve`
holds them, headless here: no SSH), sharing the lesson's trace and the classroom. The
teacher opens the Graph pane (the students follow), then steps; each step is timed
until every student's session is on it, in CPU seconds of this process (the machine's
load from others does not count) and in wall-clock time.

    python bench/class_graph_cpu.py [--students 15] [--steps 20] [--lesson mlp] [--root DIR]

`--root` runs another checkout's mgtui (main's, exported with `git archive`), in a
child process with that checkout first on its path, so the two can be compared side by
side in one session. --quick: 2 students, 3 steps (tests/bench/test_benches.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def graph_shown(debugger) -> bool:
    """Whether a session shows the Graph pane (`graph_shown`; an older checkout's
    debugger screen has the class `-graph` instead)."""
    shown = getattr(debugger, "graph_shown", None)
    return debugger.has_class("-graph") if shown is None else shown


async def measure(students: int, steps: int, lesson: str) -> None:
    from mgtui.run.bundled import resolve
    from mgtui.run.lessons import record_lesson
    from mgtui.serve.app import ServedApp
    from mgtui.session.follow import Classroom

    name = resolve(lesson).name
    lessons = {name: record_lesson(resolve(lesson), name)}
    classroom = Classroom()
    teacher = ServedApp(lessons, classroom, teacher=True)
    apps = [ServedApp(lessons, classroom, name=f"s{k}") for k in range(students)]
    async with AsyncExitStack() as stack:
        pilot = await stack.enter_async_context(teacher.run_test(size=(100, 30)))
        for app in apps:
            await stack.enter_async_context(app.run_test(size=(100, 30)))

        async def all_at(step: int) -> None:
            while not all(a.debugger.session is not None and a.debugger.position == step
                          for a in apps):
                await asyncio.sleep(0.005)

        await pilot.pause(0.5)
        await all_at(0)
        await pilot.press("m")  # the Graph pane, followed by every student
        while not all(graph_shown(a.debugger) for a in apps):
            await asyncio.sleep(0.01)
        await pilot.pause(0.5)
        cpu, wall = [], []
        for k in range(1, steps + 1):
            c, w = time.process_time(), time.perf_counter()
            await pilot.press("n")
            await all_at(k)
            await asyncio.sleep(0)  # (the frames the step scheduled, drawn)
            cpu.append(time.process_time() - c)
            wall.append(time.perf_counter() - w)
    import mgtui

    print(f"lesson {name}, {students} students and a teacher in one process, the Graph "
          f"pane open, {steps} teacher steps (mgtui of {Path(mgtui.__file__).parent.parent})")
    print(f"CPU per teacher step until every student is on it: median "
          f"{1000 * statistics.median(cpu):.0f} ms, total {sum(cpu):.2f} s; wall median "
          f"{1000 * statistics.median(wall):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=15)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lesson", default="mlp")
    parser.add_argument("--root", type=Path, default=None,
                        help="run another checkout's mgtui (its directory)")
    parser.add_argument("--quick", action="store_true", help="2 students, 3 steps, chain")
    args = parser.parse_args()
    if args.quick:
        args.students, args.steps, args.lesson = 2, 3, "chain"
    if args.root is not None:  # in a child, with that checkout's mgtui
        env = dict(os.environ, PYTHONPATH=str(args.root.resolve()))
        code = (f"import sys, asyncio; sys.path.insert(0, {str(args.root.resolve())!r}); "
                f"g = {{'__file__': {__file__!r}, '__name__': 'bench'}}; "
                f"exec(open({__file__!r}).read().split('def main')[0], g); "
                f"asyncio.run(g['measure']({args.students}, {args.steps}, {args.lesson!r}))")
        sys.exit(subprocess.run([sys.executable, "-c", code], env=env).returncode)
    sys.path.insert(0, str(ROOT))
    asyncio.run(measure(args.students, args.steps, args.lesson))


if __name__ == "__main__":
    main()
