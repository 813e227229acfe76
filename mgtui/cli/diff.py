"""`mgtui diff A B`: two runs compared, the first difference named (and placed where
the doctor can name the statement that made it), as text, JSON or in the app.
"""

from __future__ import annotations

import argparse
import json
import linecache
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from mgtui.cli.exits import EXIT_FAILED, EXIT_OK, fail
from mgtui.cli.headless import InertStream
from mgtui.cli.options import add_run_limits, run_limits_error
from mgtui.errors import ScenarioLoadError
from mgtui.memory import return_freed_memory

if TYPE_CHECKING:
    from mgtui.diff import Comparison


def build_diff_parser() -> argparse.ArgumentParser:
    from mgtui.diff import Tolerance

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
    from mgtui.diff import Tolerance, compare

    args = build_diff_parser().parse_args(argv)
    return_freed_memory()  # (two traces built: what each frees goes back)
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
