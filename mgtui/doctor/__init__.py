"""The gradient doctor: find the node and source line behind a wrong gradient.

`diagnose()` records the scenario once with the `=`-for-`+=` probe (`probe.py`), each
recording in a child process of its own (`mgtui.run.runner`, `jobs.py`), runs the
trace checks of SPEC section 6 over every pass (`trace_checks.py`, one function per
check), and re-runs the scenario with node values nudged to check the gradients of
its backward passes numerically (`numerical.py`: by default the first, the last, and
those between them that fit in a time budget). `diagnose_call()` does the same for a
function, each run a call of it in this process, and `diagnose_recorded()` runs the
checks that need no re-run on a recorded block. All three end in `examine()`, the one
orchestration. The doctor drives the recorder only through its hooks (`jobs.py`); it
returns a `Report`, and presenting it is for the command line (`mgtui.cli`,
`mgtui.tui.report`) and the app. Headless: this package never imports textual or rich.
"""

from __future__ import annotations

import os
import time
from typing import Callable

from mgtui.defaults import DEFAULT_MAX_NODES
from mgtui.doctor import intended, jobs, torch_functions
from mgtui.doctor.context import CheckContext
from mgtui.doctor.findings import KINDS, Finding, Report, one_per_line
from mgtui.doctor.numerical import BUDGET, NumericalCheck, PassChoice, ProgressFn
from mgtui.doctor.probe import NO_ARRAYS, ArrayFacts, Overwrite, OverwriteProbe
from mgtui.doctor.reruns import CallReruns, Reruns, raise_if_interrupted
from mgtui.doctor.trace_checks import TRACE_CHECKS
from mgtui.memory import collector_paused
from mgtui.recording.scenario import Scenario, load_scenario
from mgtui.trace import Trace

__all__ = ["KINDS", "Finding", "OverwriteProbe", "Report", "diagnose", "diagnose_call",
           "diagnose_recorded", "examine"]

NO_RERUN = ("a recorded block cannot be run again, so no gradient was checked numerically: "
            "give mgtui.check a function that builds the graph for that")


def diagnose(
    path_or_scenario: str | os.PathLike | Scenario,
    *,
    seed: int = 0,
    sample: int | None = None,
    passes: PassChoice = None,
    budget: float = BUDGET,
    max_nodes: int = DEFAULT_MAX_NODES,
    timeout: float | None = None,
    on_progress: ProgressFn | None = None,
    argv: tuple[str, ...] = (),
    fields: dict[str, str] | None = None,
) -> Report:
    """Record the scenario, run every check, and return the findings.

    `passes` picks the backward passes checked numerically: None (the default) the
    first and the last, and those between them while the numerical check has taken
    less than `budget` seconds; "all"; or a list of backward pass numbers, counted from
    1. `sample` limits the non-leaf nodes nudged on their own in the numerical runs
    (leaves are always nudged; by default every node is). `on_progress(done, total, phase)` is
    called as the work goes (total 0: not known). `argv` is the script's
    `sys.argv[1:]`, for every run; `fields` names the Value class's fields where they
    cannot be told (`mgtui.recording.shapes`). Raises ScenarioLoadError if the scenario cannot run
    at all, and `NotAGraph` (one) if it recorded no node.
    """
    from mgtui.run.runner import Run, RunSpec
    from mgtui.run.child import job_reference

    started = time.perf_counter()
    scenario = (path_or_scenario if isinstance(path_or_scenario, Scenario)
                else load_scenario(path_or_scenario))
    progress = on_progress or _no_progress
    progress(0, 0, "recording")
    spec = RunSpec(str(scenario.path), seed=seed, max_nodes=max_nodes, timeout=timeout,
                   argv=tuple(argv), job=job_reference(torch_functions.probe), fields=fields)
    result = Run(spec, on_progress=lambda nid: progress(nid, 0, "recording")).run()
    raise_if_interrupted(result.trace)
    job = result.job_result if isinstance(result.job_result, dict) else {}
    marked = intended.names_for(scenario.path, job.get("intended"))
    if torch_functions.is_torch(result.trace):  # built-in ops trusted, custom Functions checked
        return intended.settle(torch_functions.torch_report(result.trace, job.get("torch"),
                                                            started), marked)
    reruns = Reruns(scenario, seed, max_nodes, timeout, argv=tuple(argv), fields=fields)
    hits, callers = jobs.probe_report(result.job_result)
    return intended.settle(examine(result.trace, hits, reruns, passes=passes, sample=sample,
                                   budget=budget, on_progress=progress, started=started,
                                   callers=callers, arrays=jobs.probe_arrays(result.job_result)),
                           marked)


def diagnose_call(fn: Callable[[], object], *, seed: int = 0, sample: int | None = None,
                  passes: PassChoice = None, budget: float | None = None,
                  fields: dict[str, str] | None = None) -> Report:
    """The doctor on a function that builds a graph and runs backward: every check of
    `diagnose` (its `passes`, `sample` and `budget` too), each run a call of `fn` in this
    process, with `random` seeded by `seed`. `fields` names the Value class's fields
    where they cannot be told (`mgtui.recording.shapes`). Raises `mgtui.recording.shapes.NotAGraph` if the
    call records no node (or makes nodes of a class it cannot record)."""
    from mgtui.recording.inprocess import record_call

    started = time.perf_counter()
    probe = OverwriteProbe()
    callers: list = []
    with torch_functions.checking() as checker:
        trace = record_call(fn, seed=seed, on_create=probe.watch, before_backward=probe,
                            fields=fields, refuse=True, callers=callers)
    code = getattr(fn, "__code__", None)
    marked = intended.names_for(code.co_filename if code is not None else None)
    if torch_functions.is_torch(trace):  # built-in ops trusted, custom Functions checked
        return intended.settle(torch_functions.torch_report(trace, checker.report(), started),
                               marked)
    return intended.settle(examine(trace, probe.hits, CallReruns(fn, seed, fields=fields),
                                   passes=passes, sample=sample,
                                   budget=BUDGET if budget is None else budget,
                                   started=started, callers=callers, arrays=ArrayFacts.of(probe)),
                           marked)


def diagnose_recorded(trace: Trace, hits: list, callers: list = (),
                      arrays: ArrayFacts = NO_ARRAYS) -> Report:
    """The doctor's checks of a recorded block's trace (`mgtui.record()`). A block cannot
    be run again, so its gradients are not checked numerically (a function can be:
    `diagnose_call`). `arrays`: what its probe saw of arrays (`ArrayFacts.of`)."""
    if torch_functions.is_torch(trace):  # (the micrograd checks would misread it)
        return torch_functions.torch_report(trace, None, time.perf_counter(), block=True)
    return examine(trace, hits, None, callers=callers, arrays=arrays)


def examine(trace: Trace, hits, reruns: Reruns | CallReruns | None, *,
            passes: PassChoice = None, sample: int | None = None, budget: float = BUDGET,
            on_progress: ProgressFn | None = None, started: float | None = None,
            callers: list = (), arrays: ArrayFacts = NO_ARRAYS) -> Report:
    """Every check of a recorded trace, given the probe's `hits` and where each
    `backward()` was called from (`callers`, `mgtui.recording.store.Records.callers`): the trace
    checks, and, with `reruns` to run it again, the numerical check of its backward
    passes. `arrays` is what the probe saw of array values (a tensor engine): the
    checks look at those element by element, through re-runs (`array_check`)."""
    started = time.perf_counter() if started is None else started
    progress = on_progress or _no_progress
    trace.index_children()  # the checks ask for the children of every call
    progress(0, 0, "checking the trace")
    ctx = CheckContext(trace, [Overwrite(*hit) for hit in hits], callers, arrays)
    if reruns is None:
        with collector_paused():
            found = [f for check in TRACE_CHECKS for f in check(trace, ctx)]
        return Report(findings=one_per_line(found), trace=trace, error=trace.error,
                      seconds=time.perf_counter() - started, notes=[NO_RERUN, *ctx.notes])
    numerical = NumericalCheck(trace, ctx, reruns, progress, budget)  # type: ignore[arg-type]
    seeds, *others = TRACE_CHECKS  # the missing-seed check first: it rules passes out
    with collector_paused():
        found = seeds(trace, ctx)
    numerical.begin(passes, sample)  # its nudged run records while the others run
    try:
        with collector_paused():
            found += [f for check in others for f in check(trace, ctx)]
    except BaseException:
        reruns.wait_quietly(numerical.pending)
        raise
    found = numerical.run(found)
    return Report(
        findings=one_per_line(found),
        trace=trace,
        error=trace.error,
        checked_passes=numerical.checked,
        checkable_passes=len(numerical.checkable),
        passes_asked="sampled" if passes is None else passes,
        budget=budget,
        numerical_seconds=numerical.seconds,
        checked_nodes=numerical.checked_nodes,
        checked_calls=numerical.checked_calls,
        runs=1 + reruns.count,
        seconds=time.perf_counter() - started,
        notes=numerical.notes + ctx.notes,
        uncovered=numerical.uncovered + unrecorded(trace),
    )


def unrecorded(trace: Trace) -> list[str]:
    """The values the recording could not keep (neither numbers nor numeric arrays):
    the nodes that hold them were not checked."""
    kinds = dict(trace.arrays.unrecorded)
    if not kinds:
        return []
    named = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return [f"values that are neither numbers nor numeric arrays were not recorded "
            f"({named}), so the nodes holding them were not checked"]


def _no_progress(done: int, total: int, phase: str) -> None:
    pass
