"""What the doctor reports: one `Finding` per problem, gathered in a `Report`."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Iterable

from mgtui.trace import Pass, Trace, TraceError

KINDS = {
    "wrong-derivative": "wrong local derivative",
    "overwrite": "`=` instead of `+=`",
    "missing-zero-grad": "missing zero_grad",
    "missing-seed": "missing seed",
    "topo-order": "wrong topological order",
    "foreign-write": "write to a node that is not an input",
    "no-backward": "op with no _backward",
    "non-finite": "nan or inf",
    "wrong-gradient": "gradient differs from the numerical one",
}


@dataclass(frozen=True)
class Finding:
    """One problem, at the node and the step the app should jump to."""

    kind: str
    node: int
    label: str
    op: str
    step: int  # the event index the finding concerns
    file: str  # the scenario file, or the file of the `_backward` closure
    line: int | None
    text: str  # that line's source text
    message: str
    numerical: float | None = None
    recorded: float | None = None

    @property
    def title(self) -> str:
        return KINDS.get(self.kind, self.kind)

    def to_json(self) -> dict:
        out = asdict(self)
        out["node"] = {"id": self.node, "label": self.label, "op": self.op}
        del out["label"], out["op"]
        for key in ("numerical", "recorded"):
            value = out[key]
            if value is not None and not math.isfinite(value):
                out[key] = str(value)
        return out


@dataclass
class Report:
    """What `diagnose()` found: the findings, the trace they refer to, and the run error."""

    findings: list[Finding]
    trace: Trace
    error: TraceError | None = None  # the scenario raised: the checks ran up to there
    checked_pass: Pass | None = None  # the backward pass checked numerically
    checked_nodes: int = 0
    checked_calls: int = 0
    runs: int = 1  # recordings made, the first one included
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.findings and self.error is None

    @property
    def nodes(self) -> set[int]:
        """The ids of the nodes with a finding, to mark them in a node table."""
        return {f.node for f in self.findings}


def one_per_line(found: Iterable[Finding]) -> list[Finding]:
    """One finding per kind and source line (the first node it happened at), by step."""
    seen: set[tuple] = set()
    out: list[Finding] = []
    for f in found:
        key = (f.kind, f.file, f.line, f.text if f.line is None else "")
        if key not in seen:
            seen.add(key)
            out.append(f)
    out.sort(key=lambda f: f.step)
    return out
