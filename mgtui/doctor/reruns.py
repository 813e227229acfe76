"""Re-running a scenario for the doctor, each run in a child process (`mgtui.runner`),
with recorder hooks that are plain objects: one nudges nodes' data as they are made, one
ends the run before a given `_backward` call (`jobs.rerun` makes them in the child)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mgtui.recorder import Scenario, StopRecording
from mgtui.trace import Trace


class Nudge:
    """An `on_create` hook: adds `amounts[nid]` to node `nid`'s data as it is made. The
    nodes in `kept` are held on to, for `StopBeforeCall` to take their nudge back."""

    def __init__(self, amounts: dict[int, float], kept: set[int] = frozenset()) -> None:
        self.amounts = amounts
        self.kept = kept
        self.nodes: dict[int, dict] = {}

    def __call__(self, nid: int, d: dict) -> None:
        amount = self.amounts.get(nid)
        if amount is not None:
            d["data"] = d["data"] + amount
            if nid in self.kept:
                self.nodes[nid] = d

    def take_back(self, nids: list[int]) -> None:
        for nid in nids:
            d = self.nodes.pop(nid, None)
            if d is not None:
                d["data"] = d["data"] - self.amounts[nid]


class StopBeforeCall:
    """A `before_backward` hook: ends the run just before `_backward` call number `n + 1`.
    Before call number `k + 1` it first takes back the own nudges of `restore[k]`: the
    op nodes of a checked pass, before that pass's backward reads them. (A nudge that
    stayed would move a ReLU's output off 0 and switch its `_backward` on: a jump, not a
    small move, in every pass after it.)"""

    def __init__(self, n: int, nudge: Nudge | None = None,
                 restore: dict[int, list[int]] | None = None) -> None:
        self.n = n
        self.calls = 0
        self.nudge = nudge
        self.restore = restore or {}

    def __call__(self, d: dict, fn: Callable[[], object]) -> None:
        nids = self.restore.get(self.calls)
        if nids is not None and self.nudge is not None:
            self.nudge.take_back(nids)
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

    def __call__(self, nudge: dict[int, float], stop_after: int,
                 on_progress: Callable[[int], None] | None = None) -> Trace:
        """Re-run the scenario with `nudge` added to nodes' data at their creation,
        stopping before `_backward` call number `stop_after + 1`: just before the
        checked pass."""
        return self.pair((nudge,), stop_after, (on_progress,))[0]

    def pair(self, nudges: tuple[dict[int, float], ...], stop_after: int,
             on_progress: tuple[Callable[[int], None] | None, ...],
             restore: dict[int, list[int]] | None = None) -> list[Trace]:
        """Re-runs as `__call__` makes them, one per nudge, side by side (each in a
        process of its own: two cores do a pair in the time of one). `restore` maps a
        number of `_backward` calls to the nodes whose own nudge is taken back then."""
        return self.wait(self.start(nudges, stop_after, on_progress, restore))

    def start(self, nudges: tuple[dict[int, float], ...], stop_after: int,
              on_progress: tuple[Callable[[int], None] | None, ...],
              restore: dict[int, list[int]] | None = None) -> list:
        """The re-runs of `pair`, started: `wait` gives their traces."""
        from mgtui.runner import Run, RunSpec

        runs = []
        for nudge, progress in zip(nudges, on_progress):
            self.count += 1
            spec = RunSpec(str(self.scenario.path), seed=self.seed, max_nodes=self.max_nodes,
                           timeout=self.timeout, job="mgtui.doctor.jobs:rerun",
                           job_args={"nudge": {str(k): v for k, v in nudge.items()},
                                     "stop_after": stop_after,
                                     "restore": {str(k): v for k, v in (restore or {}).items()}})
            runs.append(Run(spec, on_progress=progress).start())
        return runs

    @staticmethod
    def wait_quietly(runs: list) -> None:
        """Stop started re-runs that are no longer wanted, and wait for them to end."""
        for run in runs:
            run.cancel("the doctor stopped")
        for run in runs:
            try:
                run.wait()
            except BaseException:  # noqa: BLE001 - it is being thrown away
                pass

    @staticmethod
    def wait(runs: list) -> list[Trace]:
        """The traces of started re-runs; ctrl+c (or an error) in one stops them all."""
        traces = []
        try:
            for run in runs:
                traces.append(run.wait().trace)
                raise_if_interrupted(traces[-1])
        except BaseException:
            for run in runs[len(traces):]:
                run.cancel("the doctor stopped")
                run.wait()
            raise
        return traces


def raise_if_interrupted(trace: Trace) -> None:
    """ctrl+c during a recording ends the whole check, not just that run."""
    error = trace.error
    if error is not None and error.type == "Stopped" and error.message.endswith("interrupted"):
        raise KeyboardInterrupt
