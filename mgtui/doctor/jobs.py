"""The doctor's recordings as runner jobs: the hooks it needs, made in the child process
that runs the scenario, and what they report back to the parent (as JSON)."""

from __future__ import annotations

from mgtui.doctor.probe import OverwriteProbe
from mgtui.doctor.reruns import Nudge, StopBeforeCall


class ProbeJob:
    """The first recording: the `=`-for-`+=` probe around every `_backward` call."""

    def __init__(self) -> None:
        self.probe = OverwriteProbe()

    def hooks(self) -> dict:
        return {"before_backward": self.probe}

    def result(self) -> list[list]:
        return [list(hit) for hit in self.probe.hits]


def probe() -> tuple[dict, ProbeJob]:
    job = ProbeJob()
    return job.hooks(), job


def rerun(nudge: dict[str, float], stop_after: int,
          restore: dict[str, list[int]] | None = None) -> tuple[dict, None]:
    """A re-run with node values nudged, stopped before `_backward` call `stop_after + 1`,
    the nudges of `restore[k]` taken back before call `k + 1`. (JSON keys are strings:
    the node ids and call numbers come back to ints here.)"""
    back = {int(k): [int(n) for n in v] for k, v in (restore or {}).items()}
    nudger = Nudge({int(k): float(v) for k, v in nudge.items()},
                   {n for nids in back.values() for n in nids})
    hooks = {"on_create": nudger, "before_backward": StopBeforeCall(stop_after, nudger, back),
             "call_values": False}  # only the nodes' data is read from a re-run
    return hooks, None
