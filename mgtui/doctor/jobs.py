"""The hooks through which the doctor drives a recording (`mgtui.recording.probes.Hooks`), and
the doctor's recordings as runner jobs: those hooks made in the child process that runs
the scenario (`mgtui.run.child.Job`), and what they report back to the parent (as
JSON). The recorder knows none of this: it only runs the hooks it is given.

- the first recording runs the `=`-for-`+=` probe around every `_backward` call;
- a re-run nudges nodes' data as they are made (`Nudge`) and ends before a given
  `_backward` call (`StopBeforeCall`).
"""

from __future__ import annotations

from typing import Callable

from mgtui.doctor.overwrite_check import ArrayFacts, OverwriteCheck
from mgtui.recording.probes import Hooks, StopRecording
from mgtui.marks import INTENDED


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


def rerun_hooks(nudge: dict[int, float], stop_after: int,
                restore: dict[int, list[int]] | None = None) -> Hooks:
    """A re-run's hooks: node values nudged, the run stopped before `_backward` call
    `stop_after + 1`, the nudges of `restore[k]` taken back before call `k + 1`."""
    back = restore or {}
    nudger = Nudge(nudge, {n for nids in back.values() for n in nids})
    return Hooks(on_create=nudger, before_backward=StopBeforeCall(stop_after, nudger, back))


# -- as runner jobs ------------------------------------------------------------------------


class ProbeJob:
    """The first recording: the `=`-for-`+=` probe around every `_backward` call. What it
    reports: the probe's hits, and where each `backward()` was called from (the
    recording's `callers`, given it as `records`), for the line that builds the order."""

    reads_values = True  # (custom ops' values are shown from this trace)

    def __init__(self) -> None:
        self.probe = OverwriteCheck()
        self.hooks = Hooks(on_create=self.probe.watch, before_backward=self.probe)
        self.records = None  # the recording's `Records` (`mgtui.run.child.serve`)

    def result(self) -> dict:
        callers = self.records.callers if self.records is not None else []
        out = {"hits": [list(hit) for hit in self.probe.hits],
               "callers": [[event, [list(f) for f in chain]] for event, chain in callers]}
        if self.probe.watch.shapes:
            out["arrays"] = ArrayFacts.of(self.probe).to_json()
        if INTENDED:  # the ops the scenario marked with `mgtui.intended_gradient`
            out["intended"] = sorted(INTENDED)
        return out


def probe_report(result: object) -> tuple[list, list]:
    """(hits, callers) from what the probe's run reported (`ProbeJob.result`): the JSON
    back as tuples."""
    if not isinstance(result, dict):
        return list(result or ()), []
    callers = [(int(event), tuple((str(f), int(line), str(name)) for f, line, name in chain))
               for event, chain in result.get("callers", ())]
    return list(result.get("hits", ())), callers


def probe_arrays(result: object) -> ArrayFacts:
    """What the probe's run saw of arrays (`ArrayFacts`), from what it reported."""
    return ArrayFacts.from_json(result.get("arrays") if isinstance(result, dict) else None)


class RerunJob:
    """A re-run (`rerun_hooks`): only the nodes' data is read from it."""

    reads_values = False

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    def result(self) -> None:
        return None


def probe() -> ProbeJob:
    return ProbeJob()


def rerun(nudge: dict[str, float], stop_after: int,
          restore: dict[str, list[int]] | None = None) -> RerunJob:
    """`rerun_hooks` from a job's arguments (JSON keys are strings: the node ids and
    call numbers come back to ints here)."""
    back = {int(k): [int(n) for n in v] for k, v in (restore or {}).items()}
    return RerunJob(rerun_hooks({int(k): float(v) for k, v in nudge.items()}, stop_after, back))


def job_args(nudge: dict[int, float], stop_after: int,
             restore: dict[int, list[int]] | None = None) -> dict:
    """`rerun`'s arguments, as they travel to the child (as JSON)."""
    return {"nudge": {str(k): v for k, v in nudge.items()}, "stop_after": stop_after,
            "restore": {str(k): v for k, v in (restore or {}).items()}}
