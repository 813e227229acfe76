"""Re-running a scenario for the doctor, each run in a child process (`mgtui.runner`),
with recorder hooks that are plain objects: one nudges nodes' data as they are made, one
ends the run before a given `_backward` call (`jobs.rerun` makes them in the child)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mgtui.recorder import Scenario, StopRecording
from mgtui.trace import Trace


class Nudge:
    """An `on_create` hook: adds `amounts[nid]` to node `nid`'s data as it is made."""

    def __init__(self, amounts: dict[int, float]) -> None:
        self.amounts = amounts

    def __call__(self, nid: int, d: dict) -> None:
        amount = self.amounts.get(nid)
        if amount is not None:
            d["data"] = d["data"] + amount


class StopBeforeCall:
    """A `before_backward` hook: ends the run just before `_backward` call number `n + 1`."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls = 0

    def __call__(self, d: dict, fn: Callable[[], object]) -> None:
        self.calls += 1
        if self.calls > self.n:
            raise StopRecording("the doctor has what it needs")


@dataclass
class Reruns:
    """The doctor's re-runs of one scenario, counted."""

    scenario: Scenario
    seed: int
    max_nodes: int
    timeout: float | None
    count: int = 0
    argv: tuple[str, ...] = ()  # the script's sys.argv[1:]

    def __call__(self, nudge: dict[int, float], stop_after: int,
                 on_progress: Callable[[int], None] | None = None) -> Trace:
        """Re-run the scenario with `nudge` added to nodes' data at their creation,
        stopping before `_backward` call number `stop_after + 1`: just before the
        checked pass."""
        from mgtui.runner import Run, RunSpec

        self.count += 1
        spec = RunSpec(str(self.scenario.path), seed=self.seed, max_nodes=self.max_nodes,
                       timeout=self.timeout, argv=self.argv, job="mgtui.doctor.jobs:rerun",
                       job_args={"nudge": {str(k): v for k, v in nudge.items()},
                                 "stop_after": stop_after})
        trace = Run(spec, on_progress=on_progress).run().trace
        raise_if_interrupted(trace)
        return trace


def raise_if_interrupted(trace: Trace) -> None:
    """ctrl+c during a recording ends the whole check, not just that run."""
    error = trace.error
    if error is not None and error.type == "Stopped" and error.message.endswith("interrupted"):
        raise KeyboardInterrupt
