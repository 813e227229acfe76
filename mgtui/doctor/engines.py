"""The doctor's part of each engine (`mgtui.trace.engine_kind`): how a recorded trace of
that engine is checked. `examine()` (`mgtui.doctor`) asks the trace's engine here, and
never guesses from what the trace holds.

- scalar: the trace checks (`trace_checks`, one function per check) and the numerical
  check, which re-runs the scenario with node values nudged (`numerical`);
- array: the same trace checks, and the numerical check element by element
  (`array_check`, its re-runs reading live arrays through hooks of their own:
  `array_runs`);
- torch: built-in ops trusted, each custom `torch.autograd.Function`'s backward checked
  by finite differences as it was recorded (`torch_functions`).

Which engine recorded a scenario is known only once it has run, so the doctor's entries
record it with every engine's watch on (`recording_job`, `CallWatch`): a watch is how
an engine checks as it records (torch's custom Functions), and each entry then ends in
`examine()`, by the engine that recorded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from mgtui.doctor import jobs, torch_functions
from mgtui.doctor.context import CheckContext
from mgtui.doctor.findings import Report, one_per_line
from mgtui.doctor.jobs import ProbeJob
from mgtui.doctor.numerical import BUDGET, NumericalCheck, PassChoice, ProgressFn
from mgtui.doctor.overwrite_check import NO_ARRAYS, ArrayFacts, Overwrite
from mgtui.doctor.trace_checks import TRACE_CHECKS
from mgtui.memory import collector_paused
from mgtui.trace import Trace
from mgtui.trace.engine_kind import ARRAY, SCALAR, TORCH

NO_RERUN = ("a recorded block cannot be run again, so no gradient was checked numerically: "
            "give mgtui.check a function that builds the graph for that")


@dataclass(frozen=True)
class Seen:
    """What the doctor's hooks saw as the run was recorded: the `=`-for-`+=` probe's
    `hits`, where each `backward()` was called from (`callers`), what the probe saw of
    arrays (`arrays`), and the custom torch Functions checked as they ran (`functions`,
    `FunctionChecker.report`; None where none could be)."""

    hits: list = field(default_factory=list)
    callers: list = field(default_factory=list)
    arrays: ArrayFacts = NO_ARRAYS
    functions: dict | None = None


@dataclass(frozen=True)
class How:
    """How far the numerical check goes (`mgtui.doctor.diagnose`'s arguments)."""

    passes: PassChoice = None
    sample: int | None = None
    budget: float = BUDGET
    progress: ProgressFn | None = None
    started: float = 0.0


def recording_job(passes: PassChoice = None) -> ProbeJob:
    """The job the doctor records a scenario with, in the runner's child (a `job` of
    `mgtui.run.runner.start_run`): the `=`-for-`+=` probe, with every engine's watch on
    (torch: its custom Functions checked as they run, `passes` as asked). What it
    reports is `Seen` (`seen_of`)."""
    return torch_functions.TorchProbeJob(passes)


def seen_of(result: object) -> Seen:
    """What the recording job (`recording_job`) reported, back from JSON."""
    hits, callers = jobs.probe_report(result)
    functions = result.get("torch") if isinstance(result, dict) else None
    return Seen(hits, callers, jobs.probe_arrays(result), functions)


class CallWatch:
    """Every engine's watch on a function recorded in this process (the in-process
    entry, `diagnose_call`): hand `on_function` to the recording, then `functions()`
    is `Seen.functions`."""

    def __init__(self, passes: PassChoice = None) -> None:
        self.on_function = torch_functions.FunctionChecker(passes=passes)

    def functions(self) -> dict:
        return self.on_function.report()


class EngineDoctor(Protocol):
    """The doctor's part of one engine: every check of a trace it recorded. `reruns`
    runs the scenario again (None: a recorded block, which cannot be)."""

    kind: str

    def examine(self, trace: Trace, seen: Seen, reruns, how: How) -> Report: ...


class MicrogradDoctor:
    """A micrograd-style engine's checks: the trace checks, then the numerical check of
    its backward passes, by value (scalar) or element by element (array)."""

    def __init__(self, kind: str, by_element: bool) -> None:
        self.kind, self.by_element = kind, by_element

    def examine(self, trace: Trace, seen: Seen, reruns, how: How) -> Report:
        progress = how.progress or _no_progress
        trace.index.index_children()  # the checks ask for the children of every call
        progress(0, 0, "checking the trace")
        ctx = CheckContext(trace, [Overwrite(*hit) for hit in seen.hits], seen.callers,
                           seen.arrays)
        if reruns is None:
            with collector_paused():
                found = [f for check in TRACE_CHECKS for f in check(trace, ctx)]
            return Report(findings=one_per_line(found), trace=trace, error=trace.error,
                          seconds=time.perf_counter() - how.started,
                          notes=[NO_RERUN, *ctx.notes])
        numerical = NumericalCheck(trace, ctx, reruns, progress, how.budget,
                                   by_element=self.by_element)
        seeds, *others = TRACE_CHECKS  # the missing-seed check first: it rules passes out
        with collector_paused():
            found = seeds(trace, ctx)
        numerical.begin(how.passes, how.sample)  # its nudged run records while the others run
        try:
            with collector_paused():
                found += [f for check in others for f in check(trace, ctx)]
        except BaseException:
            reruns.wait_quietly(numerical.pending)
            raise
        found = numerical.run(found)
        tally = numerical.tally
        return Report(
            findings=one_per_line(found), trace=trace, error=trace.error,
            checked_passes=tally.checked, checkable_passes=len(numerical.checkable),
            passes_asked="sampled" if how.passes is None else how.passes,
            budget=how.budget, numerical_seconds=numerical.seconds,
            checked_nodes=tally.checked_nodes, checked_calls=tally.checked_calls,
            runs=1 + reruns.count, seconds=time.perf_counter() - how.started,
            notes=tally.notes + ctx.notes, uncovered=tally.uncovered + unrecorded(trace))


class TorchDoctor:
    """PyTorch's checks: its built-in ops trusted, its custom Functions checked as they
    ran (`torch_functions`); a recorded block's were not."""

    kind = TORCH

    def examine(self, trace: Trace, seen: Seen, reruns, how: How) -> Report:
        return torch_functions.torch_report(trace, seen.functions, how.started,
                                            block=reruns is None, asked=how.passes)


def unrecorded(trace: Trace) -> list[str]:
    """The values the recording could not keep (neither numbers nor numeric arrays):
    the nodes that hold them were not checked."""
    kinds = dict(trace.arrays.unrecorded)
    if not kinds:
        return []
    named = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return [f"values that are neither numbers nor numeric arrays were not recorded "
            f"({named}), so the nodes holding them were not checked"]


DOCTORS: dict[str, EngineDoctor] = {
    d.kind: d for d in (MicrogradDoctor(SCALAR, False), MicrogradDoctor(ARRAY, True),
                        TorchDoctor())}


def doctor_of(trace: Trace) -> EngineDoctor:
    """The doctor's part of the engine that recorded `trace`."""
    return DOCTORS[trace.engine]


def _no_progress(done: int, total: int, phase: str) -> None:
    pass
