"""The `mgtui` command: argument parsing, the headless modes, and launching the app.

Exit codes: 0 the scenario ran to completion (and `--check` found nothing), 1 the
scenario raised or `--check` found a problem (the partial output is still printed),
2 it could not run at all, 3 `--check` found nothing but could not check all of the
gradients numerically (it says what and why): not a clean bill. Errors go to stderr as short messages, never tracebacks.
"""

from __future__ import annotations

import argparse
import json
import linecache
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from mgtui.version import __version__
from mgtui.run.bundled import bundled, resolve, title_of
from mgtui.defaults import DEFAULT_MAX_MEMORY, DEFAULT_MAX_NODES
from mgtui.errors import ScenarioLoadError
from mgtui.trace.saved import is_saved_trace
from mgtui.memory import return_freed_memory, with_system_malloc
from mgtui.safe import inert

if TYPE_CHECKING:
    from mgtui.compare import Comparison

# mgtui.recording.recorder's and mgtui.run.runner's, without importing them before the scenario's
# child starts (a test checks they agree)
EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2
EXIT_UNCHECKED = 3  # `--check`: no finding, but part of the gradients was not checked


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mgtui",
        description="Step through the forward and backward passes of a micrograd-style "
        "autograd graph. With no FILE, opens a picker of the bundled scenarios.",
    )
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="a scenario .py file, a bundled scenario name, or a saved trace "
                        "(TRACE.json or TRACE.mgtrace)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--print", action="store_true", dest="print_",
                      help="print the lesson as text and exit: its notes, each pass's steps "
                      "worked out with their #: notes (200 a pass; see --all, --pass, "
                      "--steps), the nodes")
    mode.add_argument("--export", choices=("json", "dot", "svg", "html", "cast"),
                      help="write the trace as JSON, or the final graph as Graphviz DOT or "
                      "as the Graph pane's picture in SVG (no Graphviz needed), or the "
                      "lesson as one HTML page that replays it offline, or as an asciinema "
                      "recording of the app (asciicast v2), to stdout")
    mode.add_argument("--check", action="store_true",
                      help="run the gradient doctor and report what it finds (exit 0: "
                      "no problem, 1: a problem, 3: none found but some gradients could "
                      "not be checked numerically, as the report says)")
    mode.add_argument("--list", action="store_true", help="list the bundled scenarios")
    parser.add_argument("--save", metavar="TRACE.mgtrace",
                        help="also write the trace to a compact binary file that "
                        "`mgtui TRACE.mgtrace` opens without running code")
    parser.add_argument("--json", action="store_true", help="with --check: findings as JSON")
    parser.add_argument("--cast-delay", type=float, metavar="SECONDS",
                        help="with --export cast: the time between two steps (default 1)")
    parser.add_argument("--all", action="store_true", help="with --print: every step of every pass")
    parser.add_argument("--pass", type=positive, metavar="N", dest="pass_",
                        help="with --print or --export html: only pass N (counted from 1, as "
                        "--print numbers them: Pass N/total)")
    parser.add_argument("--steps", type=step_range, metavar="A:B",
                        help="with --print or --export html: only steps A to B (A: or :B "
                        "for open ends; with --pass, the steps of that pass among them). "
                        "--print prints every step of the range")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="with --print or --export: write to FILE instead of stdout")
    parser.add_argument("--quiz", action="store_true",
                        help="quiz mode for self-study: at each backward step, predict the grad "
                        "it accumulates (a) before it is shown; a score at the end")
    parser.add_argument("--step", type=int, metavar="N", help="open the app at step N")
    add_run_limits(parser, "the scenario")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="with --check: how many non-leaf nodes to check numerically")
    parser.add_argument("--passes", type=pass_list, metavar="all|N,M,…",
                        help="with --check: the backward passes to check numerically, by "
                        "number from 1, or all (default: the first, the last, and those "
                        "between them that fit in the time budget)")
    parser.add_argument("--budget", type=float, metavar="SECONDS",
                        help="with --check: the time the default sampling of backward passes "
                        "may take (default 10)")
    parser.add_argument("--fields", type=fields_option, metavar="ROLE=ATTR,…",
                        help="name the fields of your Value class where mgtui cannot tell "
                        "them: data=value,grad=grad,inputs=parents,backward=backward_fn "
                        "(,op=…,label=…); over [tool.mgtui] fields in pyproject.toml. With "
                        "--check, --print and --export (the app reads pyproject.toml)")
    parser.add_argument("--version", action="version", version=f"mgtui {__version__}")
    parser.epilog = ("Arguments after -- go to the script, as its sys.argv[1:]: "
                     "mgtui train.py -- --lr 0.5. Two runs compared: mgtui diff A B "
                     "(see mgtui diff --help); lessons served: mgtui serve (mgtui serve "
                     "--help).")
    return parser


def add_run_limits(parser: argparse.ArgumentParser, which: str) -> None:
    """The options that bound a recording (`which`: what they bound, as the help says
    it), for `mgtui` and `mgtui diff` alike; `run_limits_error` checks them."""
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help=f"seed for `random` before {which} runs (default 0)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help=f"stop recording {which} after this many seconds")
    parser.add_argument("--max-nodes", type=int, default=DEFAULT_MAX_NODES, metavar="N",
                        help=f"stop recording past N nodes (default {DEFAULT_MAX_NODES:,})")
    parser.add_argument("--max-memory", type=memory_size, default=DEFAULT_MAX_MEMORY,
                        metavar="SIZE", help=f"stop {which}'s process past SIZE of memory, "
                        f"e.g. 512M or 4G (default {DEFAULT_MAX_MEMORY >> 30}G)")


def run_limits_error(args: argparse.Namespace) -> str:
    """What is wrong with the run limits given (`add_run_limits`), "" if nothing."""
    if args.timeout is not None and args.timeout <= 0:
        return "--timeout must be a positive number of seconds"
    if args.max_nodes <= 0:
        return "--max-nodes must be a positive number"
    return ""


def split_script_args(argv: list[str]) -> tuple[list[str], tuple[str, ...]]:
    """mgtui's own arguments, and the script's: everything after the first `--`."""
    if "--" not in argv:
        return argv, ()
    i = argv.index("--")
    return argv[:i], tuple(argv[i + 1:])


def memory_size(text: str) -> int:
    """`512M`, `4G`, `1.5G` or a number of bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("B")
    scale = units.get(t[-1:], 1)
    try:
        size = float(t[:-1] if t[-1:] in units else t) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 512M or 4G)") from None
    if size < 64 << 20:
        raise argparse.ArgumentTypeError(f"{text} is too little memory to run Python in")
    return int(size)


def fields_option(text: str) -> dict[str, str]:
    """`--fields data=value,inputs=parents`: role -> attribute (`mgtui.recording.shapes`)."""
    from mgtui.recording.shapes import FieldsOptionError, parse_fields

    try:
        return parse_fields(text)
    except FieldsOptionError as exc:
        message = exc.message.removeprefix("--fields: ").removeprefix("--fields ")
        raise argparse.ArgumentTypeError(message) from None


def pass_list(text: str) -> str | list[int]:
    """`all`, or backward pass numbers from 1: `3`, `1,3`, `2-4`."""
    if text.strip().lower() == "all":
        return "all"
    numbers: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            first, last = int(lo), int(hi or lo)
            if first < 1 or last < first:
                raise ValueError
            numbers.extend(range(first, last + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a list of passes: {text!r} (e.g. all, 3, 1,3 or 2-4; counted from 1)") from None
    return sorted(set(numbers))


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a number from 1: {text!r}")
    return value


def step_range(text: str) -> tuple[int | None, int | None]:
    """`A:B`, `A:`, `:B` or `A`: steps numbered from 1, either end open (None)."""
    lo, colon, hi = text.strip().partition(":")
    try:
        first = int(lo) if lo.strip() else None
        last = int(hi) if hi.strip() else (None if colon else first)
        if (first is not None and first < 1) or (last is not None and last < (first or 1)):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a range of steps: {text!r} (e.g. 10:20, 10:, :20 or 7; from step 1)") from None
    return first, last


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


def handout_error(args: argparse.Namespace) -> str:
    """What is wrong with --pass, --steps and -o as given, "" if nothing."""
    ranged = args.pass_ is not None or args.steps is not None
    if ranged and not (args.print_ or args.export == "html"):
        return "--pass and --steps go with --print or --export html"
    if args.output is not None and not (args.print_ or args.export):
        return "-o goes with --print or --export"
    return ""


def fail(message: str, detail: str = "") -> int:
    say(message, detail)
    return EXIT_UNUSABLE


def say(message: str, detail: str = "") -> None:
    """A message on stderr; scenario text in it is made inert (`mgtui.safe`)."""
    print(f"mgtui: {inert(message)}", file=sys.stderr)
    if detail:
        print(inert(detail), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        from mgtui.serve.cli import main as serve_main

        return serve_main(argv[1:])
    if argv[:1] == ["diff"]:
        return diff_main(argv[1:])
    parser = build_parser()
    own, script_args = split_script_args(list(argv))
    args, unknown = parser.parse_known_args(own)
    if unknown:
        hint = (f" (to pass them to the script, put them after --: mgtui {args.file} -- "
                f"{' '.join(unknown)})" if args.file else "")
        parser.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    args.script_args = script_args
    if script_args and args.file is None:
        return fail("arguments after -- go to a scenario: give its FILE first")
    return_freed_memory()
    if args.list:
        for name, path in bundled():
            print(f"{name:24s} {title_of(path)}")
        return EXIT_OK
    if run_limits_error(args) or handout_error(args):
        return fail(run_limits_error(args) or handout_error(args))
    if (args.passes is not None or args.budget is not None) and not args.check:
        return fail("--passes and --budget go with --check")
    if args.budget is not None and args.budget <= 0:
        return fail("--budget must be a positive number of seconds")
    if args.cast_delay is not None and (args.export != "cast"
                                        or not 0 < args.cast_delay < float("inf")):
        return fail("--cast-delay goes with --export cast, and is a positive number of seconds")
    if args.json and not args.check:
        return fail("--json goes with --check (for the trace as JSON, use --export json)")
    headless = args.print_ or args.export or args.check
    if args.quiz and (headless or args.save):
        return fail("--quiz is the app's quiz mode: it goes with no --print, --export, "
                    "--check or --save")
    if args.fields and not headless:
        return fail("--fields goes with --check, --print or --export (the app reads "
                    "[tool.mgtui] fields from the pyproject.toml above the scenario)")
    if args.file is None:
        if headless:
            return fail("this mode needs a FILE (see mgtui --list for the bundled scenarios)")
        return launch_app(None, args)
    path = resolve(args.file)
    if path.is_dir():
        if headless or args.save:
            return fail(f"{path} is a directory: --print, --export, --check and --save take "
                        "one lesson file")
        return launch_app(None, args, lesson_dir=path)
    if not headless and not args.save:
        return launch_app(path, args)
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


def launch_app(path: Path | None, args: argparse.Namespace,
               lesson_dir: Path | None = None) -> int:
    if not sys.stdout.isatty() or not sys.stdin.isatty():
        return fail("the debugger needs a terminal; for output without one use "
                    "--print, --export json|dot or --check")
    run = None
    if path is not None and path.is_file() and not is_saved_trace(path):
        # Start the scenario's child now: it records while this process imports the app.
        from mgtui.run.runner import RunOptions, start_run

        run = start_run(path, RunOptions.for_app(
            seed=args.seed, max_nodes=args.max_nodes, timeout=args.timeout,
            max_memory=args.max_memory, argv=args.script_args))
    try:
        from mgtui.tui.app import run_app
    except ImportError:  # pragma: no cover - the app ships with the package
        return fail("the debugger app is not installed; use --print or --export")
    return run_app(path, step=args.step, seed=args.seed, max_nodes=args.max_nodes,
                   timeout=args.timeout, max_memory=args.max_memory, run=run,
                   argv=args.script_args, lesson_dir=lesson_dir, quiz=args.quiz)


# -- mgtui diff A B ------------------------------------------------------------------------

def build_diff_parser() -> argparse.ArgumentParser:
    from mgtui.compare import Tolerance

    tol = Tolerance()
    parser = argparse.ArgumentParser(
        prog="mgtui diff",
        description="Record two scenarios (or read saved traces), align their graphs and "
        "name the first node whose value or gradient differs, with the line on each side "
        "that produced it. Exit 0 if they agree, 1 if they differ, 2 if one cannot be run "
        "or read. Without --print or --json, opens the debugger on A at that step.")
    parser.add_argument("a", metavar="A", help="a scenario .py file, a bundled scenario "
                        "name, or a saved trace (.json, .mgtrace): yours")
    parser.add_argument("b", metavar="B", help="the same, to compare A with (a reference: "
                        "another engine, torch, or the run before a change)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--print", action="store_true", dest="print_",
                      help="print the comparison as text and exit")
    mode.add_argument("--json", action="store_true", help="the comparison as JSON on stdout")
    parser.add_argument("--rtol", type=tolerance_value, default=tol.rtol, metavar="R",
                        help=f"relative tolerance (default {tol.rtol:g})")
    parser.add_argument("--atol", type=tolerance_value, default=tol.atol, metavar="A",
                        help=f"absolute tolerance (default {tol.atol:g}): two numbers agree "
                        "when |a - b| <= atol + rtol * max(|a|, |b|)")
    add_run_limits(parser, "each scenario")
    return parser


def tolerance_value(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"a tolerance is a number >= 0, not {text}")
    return value


def diff_main(argv: list[str]) -> int:
    """`mgtui diff A B`: 0 they agree, 1 they differ (or a run did not finish), 2 one of
    them could not be run or read."""
    from mgtui.compare import Tolerance, compare

    args = build_diff_parser().parse_args(argv)
    if run_limits_error(args):
        return fail(run_limits_error(args))
    headless = args.print_ or args.json
    if not headless and not (sys.stdout.isatty() and sys.stdin.isatty()):
        return fail("the debugger needs a terminal; for output without one use "
                    "mgtui diff A B --print or --json")
    try:
        result = compare(args.a, args.b, tolerance=Tolerance(args.rtol, args.atol),
                         seed=args.seed, timeout=args.timeout, max_nodes=args.max_nodes,
                         max_memory=args.max_memory)
    except ScenarioLoadError as exc:
        return fail(exc.message, exc.detail)
    result = place_difference(result, seed=args.seed, max_nodes=args.max_nodes,
                              timeout=args.timeout)
    code = EXIT_OK if result.agree else EXIT_FAILED
    if args.json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    elif args.print_:
        from mgtui.tui.diff_report import comparison_lines

        InertStream(sys.stdout).write("\n".join(comparison_lines(result)) + "\n")
    else:
        from mgtui.tui.app import run_diff_app

        run_diff_app(result)
    sys.stdout.flush()
    return code


def place_difference(result: Comparison, *, seed: int = 0, max_nodes: int | None = None,
                     timeout: float | None = None) -> Comparison:
    """`result`, its first difference's place (on your side) moved to the statement
    that made the wrong value, where a replay of your call in a re-run of your scenario
    names one (issue 33: `mgtui.doctor.call_origin`; the comparison may not import the
    doctor, so the two meet here); else the line that wrote it stands, said so."""
    from mgtui.doctor.call_origin import NOT_NAMED, call_origin
    from mgtui.trace.engine_kind import TORCH

    d = result.difference
    if d is None or d.kind != "grad" or d.call is None or d.a is None:
        return result
    if result.a.saved or result.a.trace.engine == TORCH:  # (nothing to re-run; torch's
        return result  # own Functions are the doctor's `torch_functions`)
    call = d.call
    try:
        found = call_origin(result.a.path, result.a.trace, call.step, call.node, call.mine,
                            call.theirs, element=d.a.element, seed=seed,
                            max_nodes=max_nodes, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - the comparison's answer stands
        found = replace(NOT_NAMED, why=f"{NOT_NAMED.why} (the replay failed: "
                        f"{type(exc).__name__})")
    if found is None:  # (not replayed: a number, or a value the trace holds in part)
        return result
    if found.line is None:
        result.difference = replace(d, message=f"{d.message} (the line named is the one "
                                    f"that wrote the grad: {found.why})")
        return result
    place = result.a.place(found.file, found.line)
    code = linecache.getline(found.file, found.line).strip()  # (shown through mgtui.safe)
    wrote = f" (written at {d.a.place})" if d.a.place and d.a.place != place else ""
    message = (f"{d.message}; the wrong value is made at {place}{wrote}: {found.why}")
    result.difference = replace(d, message=message, a=replace(d.a, place=place, code=code))
    return result


def entry() -> None:
    if sys.argv[1:2] == ["serve"]:
        with_system_malloc()  # (a server's sessions come and go: see mgtui/memory.py)
    try:
        code = main()
    except BrokenPipeError:
        code = EXIT_OK
    except KeyboardInterrupt:
        code = fail("interrupted")
    sys.exit(code)


if __name__ == "__main__":
    entry()
