"""The gradient doctor: find the node and source line behind a wrong gradient.

`diagnose()` records the scenario once with the `=`-for-`+=` probe (`probe.py`), each
recording in a child process of its own (`mgtui.runner`, `jobs.py`), runs the
trace checks of SPEC section 6 over every pass (`trace_checks.py`, one function per
check), and re-runs the scenario with node values nudged to check the gradients of
its backward passes numerically (`numerical.py`: by default the first, the last, and
those between them that fit in a time budget). It returns a `Report`; presenting it is for the command line
(`mgtui.cli`, `mgtui.report`) and the app. Headless: this package never imports textual
or rich.
"""

from __future__ import annotations

import os
import time

from mgtui.doctor.context import CheckContext, collector_paused
from mgtui.doctor.findings import KINDS, Finding, Report, one_per_line
from mgtui.doctor.numerical import BUDGET, NumericalCheck, PassChoice, ProgressFn
from mgtui.doctor.probe import Overwrite, OverwriteProbe
from mgtui.doctor.reruns import Reruns, raise_if_interrupted
from mgtui.doctor.trace_checks import TRACE_CHECKS
from mgtui.recorder import DEFAULT_MAX_NODES, Scenario, load_scenario
from mgtui.runner import Run, RunSpec

__all__ = ["KINDS", "Finding", "OverwriteProbe", "Report", "diagnose"]


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
) -> Report:
    """Record the scenario, run every check, and return the findings.

    `passes` picks the backward passes checked numerically: None (the default) the
    first and the last, and those between them while the numerical check has taken
    less than `budget` seconds; "all"; or a list of backward pass numbers, counted from
    1. `sample` limits the non-leaf nodes nudged on their own in the numerical runs
    (leaves are always nudged; by default every node is). `on_progress(done, total, phase)` is
    called as the work goes (total 0: not known). `argv` is the script's
    `sys.argv[1:]`, for every run. Raises ScenarioLoadError if the
    scenario cannot run at all.
    """
    started = time.perf_counter()
    scenario = (path_or_scenario if isinstance(path_or_scenario, Scenario)
                else load_scenario(path_or_scenario))
    progress = on_progress or (lambda done, total, phase: None)
    progress(0, 0, "recording")
    spec = RunSpec(str(scenario.path), seed=seed, max_nodes=max_nodes, timeout=timeout,
                   argv=tuple(argv), job="mgtui.doctor.jobs:probe")
    result = Run(spec, on_progress=lambda nid: progress(nid, 0, "recording")).run()
    trace = result.trace
    trace.index_children()  # the checks ask for the children of every call
    raise_if_interrupted(trace)
    hits = [Overwrite(*hit) for hit in result.job_result or ()]

    progress(0, 0, "checking the trace")
    ctx = CheckContext(trace, hits)
    reruns = Reruns(scenario, seed, max_nodes, timeout, argv=tuple(argv))
    numerical = NumericalCheck(trace, ctx, reruns, progress, budget)
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
        notes=numerical.notes,
    )
