"""The `mgtui` command: its arguments, then the app, a headless mode (`headless`:
--print, --export, --check, --save), `mgtui diff` (`diff`) or `mgtui serve`
(`mgtui.serve.cli`). Exit codes and messages: `exits`; options: `options`.

Only what opening the app needs is imported before it starts: the headless modes and
`mgtui diff` are imported when asked for.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mgtui.cli.exits import EXIT_OK, fail
from mgtui.cli.options import build_parser, options_error, split_script_args
from mgtui.memory import with_system_malloc
from mgtui.run.bundled import bundled, resolve, title_of
from mgtui.trace.saved import is_saved_trace

__all__ = ["build_parser", "entry", "launch_app", "main"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        from mgtui.serve.cli import main as serve_main

        return serve_main(argv[1:])
    if argv[:1] == ["diff"]:
        from mgtui.cli.diff import diff_main

        return diff_main(argv[1:])
    args = parse_args(argv)
    if script_args_alone(args):
        return fail("arguments after -- go to a scenario: give its FILE first")
    if args.list:
        for name, path in bundled():
            print(f"{name:24s} {title_of(path)}")
        return EXIT_OK
    if options_error(args):
        return fail(options_error(args))
    headless = args.print_ or args.export or args.check
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
    from mgtui.cli.headless import headless_main

    return headless_main(path, args)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command's own arguments, with the script's (after `--`) as `script_args`."""
    parser = build_parser()
    own, script_args = split_script_args(list(argv))
    args, unknown = parser.parse_known_args(own)
    if unknown:
        hint = (f" (to pass them to the script, put them after --: mgtui {args.file} -- "
                f"{' '.join(unknown)})" if args.file else "")
        parser.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    args.script_args = script_args
    return args


def script_args_alone(args: argparse.Namespace) -> bool:
    """Arguments for a script, and no script."""
    return bool(args.script_args) and args.file is None


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
