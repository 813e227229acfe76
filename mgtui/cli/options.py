"""The `mgtui` command's options: its parser, the parsers of their values, and what is
wrong with a combination of them.
"""

from __future__ import annotations

import argparse

from mgtui.defaults import DEFAULT_MAX_MEMORY, DEFAULT_MAX_NODES
from mgtui.version import __version__


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


def handout_error(args: argparse.Namespace) -> str:
    """What is wrong with --pass, --steps and -o as given, "" if nothing."""
    ranged = args.pass_ is not None or args.steps is not None
    if ranged and not (args.print_ or args.export == "html"):
        return "--pass and --steps go with --print or --export html"
    if args.output is not None and not (args.print_ or args.export):
        return "-o goes with --print or --export"
    return ""


def options_error(args: argparse.Namespace) -> str:
    """What is wrong with the options given together (beyond what the parser checks),
    "" if nothing."""
    if run_limits_error(args) or handout_error(args):
        return run_limits_error(args) or handout_error(args)
    if (args.passes is not None or args.budget is not None) and not args.check:
        return "--passes and --budget go with --check"
    if args.budget is not None and args.budget <= 0:
        return "--budget must be a positive number of seconds"
    if args.cast_delay is not None and (args.export != "cast"
                                        or not 0 < args.cast_delay < float("inf")):
        return "--cast-delay goes with --export cast, and is a positive number of seconds"
    if args.json and not args.check:
        return "--json goes with --check (for the trace as JSON, use --export json)"
    headless = args.print_ or args.export or args.check
    if args.quiz and (headless or args.save):
        return ("--quiz is the app's quiz mode: it goes with no --print, --export, "
                "--check or --save")
    if args.fields and not headless:
        return ("--fields goes with --check, --print or --export (the app reads "
                "[tool.mgtui] fields from the pyproject.toml above the scenario)")
    return ""
