"""The headless modes of the `mgtui` command: `--print`, `--export`, `--check` and
`--save`, the trace loaded or recorded without the app, written to stdout or a file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from mgtui.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_UNCHECKED, EXIT_UNUSABLE, fail, say
from mgtui.errors import ScenarioLoadError
from mgtui.memory import return_freed_memory
from mgtui.safe import inert
from mgtui.trace.saved import is_saved_trace


def headless_main(path: Path, args: argparse.Namespace) -> int:
    """`mgtui FILE` with --print, --export, --check or --save: the trace recorded (or a
    saved one read), saved and written; the exit code."""
    return_freed_memory()  # (the app does this itself, once the scenario's child has started)
    saved = is_saved_trace(path)
    if saved and args.check:
        return fail("--check runs the scenario, and a saved trace has no code to run")
    if args.check:
        return run_check(path, args)
    try:
        trace, stopped = load_trace(path, args) if saved else record_trace(path, args)
    except ScenarioLoadError as exc:
        return fail(exc.message, exc.detail)
    saved_ok = save_trace(trace, Path(args.save)) if args.save else True
    try:
        if not write_output(trace, args):
            return EXIT_UNUSABLE
    except KeyboardInterrupt:
        say(f"{path}: interrupted while writing the trace (what was written is partial)")
        return EXIT_FAILED
    if not saved_ok:
        return EXIT_UNUSABLE
    if stopped:
        say(f"{path}: recording stopped: {stopped} (the trace up to there was kept)")
        return EXIT_FAILED
    if trace.error is not None:
        say(f"{path}: {trace.places.error_text()} (the trace up to there was kept)")
        return EXIT_FAILED
    return EXIT_OK


def chosen_steps(trace, args: argparse.Namespace) -> tuple[int, int] | None:
    """The steps (first, last) that `--pass` and `--steps` choose of `trace`, None for
    all of it; ValueError saying why when they choose none."""
    if args.pass_ is None and args.steps is None:
        return None
    first, last = 1, len(trace)
    if args.pass_ is not None:
        if args.pass_ > len(trace.passes):
            raise ValueError(f"--pass {args.pass_}: the trace has {len(trace.passes)} "
                             f"pass{'es' if len(trace.passes) != 1 else ''}")
        chosen = trace.passes[args.pass_ - 1]
        first, last = chosen.start + 1, chosen.end
    if args.steps is not None:
        lo, hi = args.steps
        if (lo or 1) > len(trace):
            raise ValueError(f"--steps: the trace has {len(trace):,} steps")
        first, last = max(first, lo or 1), min(last, len(trace) if hi is None else hi)
        if first > last:
            raise ValueError(f"--steps and --pass {args.pass_}: no step is in both (the "
                             f"pass is steps {chosen.start + 1}–{chosen.end})")
    return first, last


def load_trace(path: Path, args: argparse.Namespace):
    from mgtui.trace.export import load

    progress = Progress(sys.stderr)
    tell = (lambda done, size: progress(done, size, "loading")) if progress.tty else None
    try:
        return load(path, max_nodes=args.max_nodes, max_memory=args.max_memory,
                    on_progress=tell), ""
    finally:
        progress.done()


def record_trace(path: Path, args: argparse.Namespace):
    """Record in a child process: (the trace, "" or why it did not finish). On a
    terminal, stderr shows how many nodes have been recorded meanwhile."""
    from mgtui.run.runner import RunOptions, start_run

    progress = Progress(sys.stderr)
    options = RunOptions(seed=args.seed, max_nodes=args.max_nodes, timeout=args.timeout,
                         max_memory=args.max_memory, argv=args.script_args, fields=args.fields)
    tell = (lambda nodes: progress(nodes, 0, "recording")) if progress.tty else None
    try:
        result = start_run(path, options, on_progress=tell).wait()
    finally:
        progress.done()
    return result.trace, result.message


def save_trace(trace, path: Path) -> bool:
    """Save, all or nothing (`mgtui.trace.saving`); False, with the reason said, if it failed."""
    from mgtui.trace.saving import save_trace as save

    progress = Progress(sys.stderr)
    tell = (lambda done, steps: progress(done, steps, "saving")) if progress.tty else None
    try:
        save(trace, path, tell)
    except OSError as exc:
        say(f"cannot write {path}: {exc.strerror or exc} (nothing was written there)")
        return False
    finally:
        progress.done()
    return True


def write_output(trace, args: argparse.Namespace) -> bool:
    """`write_trace` to stdout, or with -o to its file: written beside it and renamed into
    place, so a failure leaves what was there. False (said) if it cannot be written, or
    --pass and --steps choose no step of it."""
    try:
        steps = chosen_steps(trace, args)
    except ValueError as exc:
        say(str(exc))
        return False
    if args.output is None:
        write_trace(trace, args, sys.stdout, steps)
        return True
    import os

    target = Path(args.output)
    part = target.with_name(f".{target.name}.part")
    try:
        with open(part, "w", encoding="utf-8") as stream:
            write_trace(trace, args, stream, steps)
        os.replace(part, target)
    except OSError as exc:
        part.unlink(missing_ok=True)
        say(f"cannot write {target}: {exc.strerror or exc} (nothing was written there)")
        return False
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return True


def print_width(stream) -> int:
    """The width --print wraps to: on a terminal its own (COLUMNS if set), else 100
    (a file or a pipe: the same handout wherever it is written)."""
    import shutil

    if getattr(stream, "isatty", lambda: False)():
        return max(shutil.get_terminal_size((100, 24)).columns, 40)
    return 100


def write_trace(trace, args: argparse.Namespace, stream=None,
                steps: tuple[int, int] | None = None) -> None:
    stream = sys.stdout if stream is None else stream
    out = InertStream(stream)
    if args.export == "json":
        from mgtui.trace.export import write_json

        write_json(trace, stream)  # as a stream; JSON escapes every control character
    elif args.export == "dot":
        from mgtui.trace.export import to_dot

        out.write(to_dot(trace))
    elif args.export == "svg":
        from mgtui.tui.graph_paint import graph_svg

        stream.write(graph_svg(trace))  # XML-escaped text: nothing reaches a terminal raw
    elif args.export == "html":
        from mgtui.tui.export_html import lesson_html

        stream.write(lesson_html(trace, steps))  # scenario text only in its JSON, with no `<`
    elif args.export == "cast":
        from mgtui.tui.export_cast import lesson_cast

        # (the app's screens, scenario text inert in them; JSON escapes every control)
        lesson_cast(trace, stream, delay=args.cast_delay or 1.0)
    elif args.print_:
        from mgtui.tui.report import print_trace

        every = args.all or args.steps is not None  # (a range asked for: all of it)
        print_trace(trace, out, limit=None if every else 200, width=print_width(stream),
                    steps=steps)
    stream.flush()


class InertStream:
    """A text stream that makes everything written to it inert (`mgtui.safe`): what
    --print and --check write is scenario text, and it goes to a terminal."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(inert(text))

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()


def run_check(path: Path, args: argparse.Namespace) -> int:
    """`mgtui FILE --check`: the doctor's report (or its findings as JSON) on stdout,
    its progress on stderr; exit 1 if it found a problem or the scenario raised, 3 if
    it found none but could not check every gradient numerically."""
    from mgtui.doctor import diagnose
    from mgtui.tui.report import format_report

    progress = Progress(sys.stderr)
    try:
        budget = {} if args.budget is None else {"budget": args.budget}
        report = diagnose(path, seed=args.seed, sample=args.sample, passes=args.passes,
                          max_nodes=args.max_nodes, **budget,
                          timeout=args.timeout, on_progress=progress, argv=args.script_args,
                          fields=args.fields)
    except ScenarioLoadError as exc:
        progress.done()
        return fail(exc.message, exc.detail)
    progress.done()
    if args.json:
        unchecked = report.unchecked_finding() if report.clean else None  # (its own finding)
        found = [*report.findings, *([unchecked] if unchecked is not None else [])]
        sys.stdout.write(json.dumps([finding_json(f, report) for f in found], indent=2) + "\n")
    else:
        InertStream(sys.stdout).write(format_report(report))
    sys.stdout.flush()
    if report.error is not None:
        say(f"{path}: {report.trace.places.error_text()} (checked up to there)")
    if not report.clean:
        return EXIT_FAILED
    return EXIT_OK if report.unchecked is None else EXIT_UNCHECKED


def finding_json(finding, report) -> dict:
    """A finding as JSON, with the backward pass it is in (numbered from 1, as the text
    report numbers them) when it is in one."""
    out = finding.to_json()
    p = report.trace.pass_at(finding.step)
    if p is not None and p.kind == "backward":
        out["backward_pass"] = report.backward_number(p)
    return out


class Progress:
    """The doctor's progress on stderr: a live line on a terminal, else one line per phase."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.phase = ""
        self.last = 0.0

    def __call__(self, done: int, total: int, phase: str) -> None:
        if phase != self.phase:
            self.phase = phase
            if not self.tty:
                print(f"mgtui: {phase}…", file=self.stream, flush=True)
        if not self.tty:
            return
        now = time.monotonic()
        if now - self.last < 0.1 and done != total:
            return
        self.last = now
        if total:
            width = 20
            filled = int(width * done / total)
            bar = "█" * filled + "·" * (width - filled)
            text = f"{phase} {bar} {100 * done // total}%"
        else:
            text = f"{phase}… {done:,} nodes" if done else f"{phase}…"
        self.stream.write(f"\r\x1b[2K{text}")
        self.stream.flush()

    def done(self) -> None:
        if self.tty and self.phase:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
