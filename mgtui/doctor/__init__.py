"""The gradient doctor: find the node and source line behind a wrong gradient.

`diagnose()` records the scenario once with the `=`-for-`+=` probe (`probe.py`), each
recording in a child process of its own (`mgtui.run.runner`, `jobs.py`), runs the
trace checks of SPEC section 6 over every pass (`trace_checks.py`, one function per
check), and re-runs the scenario with node values nudged to check the gradients of
its backward passes numerically (`numerical.py`: by default the first, the last, and
those between them that fit in a time budget). `diagnose_call()` does the same for a
function, each run a call of it in this process, and `diagnose_recorded()` runs the
checks that need no re-run on a recorded block. All three end in `examine()`, the one
orchestration, which asks the engine that recorded the trace how it is checked
(`engines.py`); the two that record put every engine's watch on first
(`engines.recording_job`, `engines.CallWatch`), the engine being known only after. The
doctor drives the recorder only through its hooks (`jobs.py`); it
returns a `Report`, and presenting it is for the command line (`mgtui.cli`,
`mgtui.tui.report`) and the app. Headless: this package never imports textual or rich.
"""

from __future__ import annotations

import os
import time
from typing import Callable

from mgtui.defaults import DEFAULT_MAX_NODES
from mgtui.doctor import intended
from mgtui.doctor.engines import CallWatch, How, Seen, doctor_of, recording_job, seen_of
from mgtui.doctor.findings import KINDS, Finding, Report
from mgtui.doctor.numerical import BUDGET, PassChoice, ProgressFn
from mgtui.doctor.overwrite_check import NO_ARRAYS, ArrayFacts, OverwriteCheck
from mgtui.doctor.reruns import CallReruns, Reruns, raise_if_interrupted
from mgtui.recording.scenario import Scenario, load_scenario
from mgtui.trace import Trace

__all__ = ["KINDS", "Finding", "OverwriteCheck", "Report", "diagnose", "diagnose_call",
           "diagnose_recorded", "examine"]

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
    from mgtui.run.runner import RunOptions, start_run

    started = time.perf_counter()
    scenario = (path_or_scenario if isinstance(path_or_scenario, Scenario)
                else load_scenario(path_or_scenario))
    progress = on_progress or _no_progress
    progress(0, 0, "recording")
    options = RunOptions(seed=seed, max_nodes=max_nodes, timeout=timeout, argv=tuple(argv),
                         fields=fields)
    result = start_run(scenario.path, options, job=recording_job,
                       job_args={"passes": passes},
                       on_progress=lambda nid: progress(nid, 0, "recording")).wait()
    raise_if_interrupted(result.trace)
    job = result.job_result if isinstance(result.job_result, dict) else {}
    marked = intended.names_for(scenario.path, job.get("intended"))
    reruns = Reruns(scenario, seed, max_nodes, timeout, argv=tuple(argv), fields=fields)
    seen = seen_of(result.job_result)
    return intended.settle(examine(result.trace, seen.hits, reruns, passes=passes,
                                   sample=sample, budget=budget, on_progress=progress,
                                   started=started, callers=seen.callers, arrays=seen.arrays,
                                   functions=seen.functions),
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
    probe = OverwriteCheck()
    callers: list = []
    watch = CallWatch(passes)  # every engine's: which one records is known after the call
    trace = record_call(fn, seed=seed, on_create=probe.watch, before_backward=probe,
                        fields=fields, refuse=True, callers=callers,
                        on_function=watch.on_function)
    code = getattr(fn, "__code__", None)
    marked = intended.names_for(code.co_filename if code is not None else None)
    return intended.settle(examine(trace, probe.hits, CallReruns(fn, seed, fields=fields),
                                   passes=passes, sample=sample,
                                   budget=BUDGET if budget is None else budget,
                                   started=started, callers=callers, arrays=ArrayFacts.of(probe),
                                   functions=watch.functions()),
                           marked)


def diagnose_recorded(trace: Trace, hits: list, callers: list = (),
                      arrays: ArrayFacts = NO_ARRAYS) -> Report:
    """The doctor's checks of a recorded block's trace (`mgtui.record()`). A block cannot
    be run again, so its gradients are not checked numerically (a function can be:
    `diagnose_call`). `arrays`: what its probe saw of arrays (`ArrayFacts.of`)."""
    return examine(trace, hits, None, callers=callers, arrays=arrays)


def examine(trace: Trace, hits, reruns: Reruns | CallReruns | None, *,
            passes: PassChoice = None, sample: int | None = None, budget: float = BUDGET,
            on_progress: ProgressFn | None = None, started: float | None = None,
            callers: list = (), arrays: ArrayFacts = NO_ARRAYS,
            functions: dict | None = None) -> Report:
    """Every check of a recorded trace, by the engine that recorded it
    (`mgtui.doctor.engines`), given the probe's `hits` and where each `backward()` was
    called from (`callers`, `mgtui.recording.store.Records.callers`): the trace checks,
    and, with `reruns` to run it again, the numerical check of its backward passes.
    `arrays` is what the probe saw of array values (a tensor engine), `functions` the
    custom torch Functions checked as they ran (`FunctionChecker.report`)."""
    started = time.perf_counter() if started is None else started
    seen = Seen(list(hits), list(callers), arrays, functions)
    how = How(passes, sample, budget, on_progress, started)
    return doctor_of(trace).examine(trace, seen, reruns, how)


def _no_progress(done: int, total: int, phase: str) -> None:
    pass
