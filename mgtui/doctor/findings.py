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
    "repeated-backward": "a _backward run more than once in one pass",
    "foreign-write": "write to a node that is not an input",
    "no-backward": "op with no _backward",
    "non-finite": "nan or inf",
    "wrong-gradient": "gradient differs from the numerical one",
    "grad-shape": "a grad whose shape differs from its data's",
    "unchecked": "not checked numerically",
}


@dataclass(frozen=True)
class Finding:
    """One problem, at the node and the step the app should jump to."""

    kind: str
    node: int
    label: str
    op: str
    step: int  # the event index the finding concerns (shown as step `step + 1`)
    file: str  # the scenario file, or the file of the `_backward` closure
    line: int | None
    text: str  # that line's source text
    message: str
    numerical: float | None = None
    recorded: float | None = None
    input: int | None = None  # wrong-derivative: the input whose contribution is off
    local: float | None = None  # and d node / d input there, numerically
    also_in_passes: tuple[int, ...] = ()  # the other backward passes it was found in
    element: tuple[int, ...] | None = None  # on an array: the index of the element at fault

    @property
    def title(self) -> str:
        return KINDS.get(self.kind, self.kind)

    @property
    def node_name(self) -> str:
        """`e (#3, op *)`; a node with no label of its own, `#25 (op softplus)`."""
        op = f"op {self.op}" if self.op else ""
        if self.label == f"#{self.node}":
            return f"{self.label} ({op})" if op else self.label
        return f"{self.label} (#{self.node}, {op})" if op else f"{self.label} (#{self.node})"

    def to_json(self) -> dict:
        """The finding for `--check --json`. Its `step` is the step number the text
        report, the app and `--step` use: the event index plus 1 (step 0 is the start)."""
        out = asdict(self)
        out["step"] = self.step + 1
        out["node"] = {"id": self.node, "label": self.label, "op": self.op}
        del out["label"], out["op"]
        for key in ("numerical", "recorded", "local"):
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
    checked_passes: list[Pass] = field(default_factory=list)  # checked numerically
    checkable_passes: int = 0  # the backward passes that could be checked numerically
    passes_asked: str | list[int] = "sampled"  # "sampled", "all", or pass numbers from 1
    budget: float = 0.0  # seconds, for the sampled passes between the first and the last
    numerical_seconds: float = 0.0
    checked_nodes: int = 0  # over the checked passes
    checked_calls: int = 0
    runs: int = 1  # recordings made, the first one included
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    scope: str = "every step of every pass"  # what the trace checks looked at
    uncovered: list[str] = field(default_factory=list)  # what could not be checked, and why

    @property
    def checked_pass(self) -> Pass | None:
        """The first backward pass checked numerically."""
        return self.checked_passes[0] if self.checked_passes else None

    def backward_number(self, p: Pass) -> int:
        """Pass `p`'s number among the trace's backward passes, from 1."""
        return sum(1 for q in self.trace.passes[:p.index] if q.kind == "backward") + 1

    @property
    def backward_count(self) -> int:
        return sum(1 for q in self.trace.passes if q.kind == "backward")

    @property
    def clean(self) -> bool:
        return not self.findings and self.error is None

    @property
    def unchecked(self) -> str | None:
        """What the numerical check did not cover, said wherever the verdict is (a
        clean verdict on gradients nobody checked is no verdict); None if it checked a
        backward pass."""
        if self.checked_passes:
            return "; ".join(self.uncovered) or None
        if not self.backward_count:
            return "no backward pass was run, so no gradient was checked"
        return "no backward pass was checked numerically"

    def unchecked_finding(self) -> Finding | None:
        """What the numerical check did not cover, as a finding of its own (kind
        `unchecked`), for a caller whose verdict is "no findings" (`mgtui.check`)."""
        why = self.unchecked
        if why is None:
            return None
        why = why + (": " + "; ".join(self.notes) if self.notes else "")
        return Finding("unchecked", -1, "", "", 0, self.trace.scenario, None, "",
                       f"not a clean bill: {why}")

    @property
    def nodes(self) -> set[int]:
        """The ids of the nodes with a finding, to mark them in a node table."""
        return {f.node for f in self.findings}


def one_per_line(found: Iterable[Finding]) -> list[Finding]:
    """One finding per kind and source line (the first node it happened at), by step.
    A wrong derivative at the line of an `overwrite` is that overwrite's consequence
    (the `=` lost what was there), not a second problem: left out."""
    found = list(found)
    overwritten = {(f.file, f.line) for f in found if f.kind == "overwrite" and f.line}
    seen: set[tuple] = set()
    out: list[Finding] = []
    for f in found:
        key = (f.kind, f.file, f.line, f.text if f.line is None else "")
        if f.kind == "wrong-derivative" and (f.file, f.line) in overwritten:
            continue
        if key not in seen:
            seen.add(key)
            out.append(f)
    out.sort(key=lambda f: f.step)
    return out
