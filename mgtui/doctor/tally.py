"""What the numerical check has checked, as its report says it (`Tally`): the passes,
nodes and calls checked, the notes and what was left out, and the checked passes each
finding showed in (`WrongPasses`: a finding is made once, at the first wrong pass, and
names the others). One tally per check, kept by `numerical.NumericalCheck` and written
by the array check (`array_check`) on a tensor engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from mgtui.doctor.context import CheckContext
from mgtui.doctor.findings import Finding
from mgtui.trace import Pass, Trace


class WrongPasses:
    """The checked backward passes each numerical finding showed in, so that the finding
    is made once, at the first of them, and names the others."""

    def __init__(self, trace: Trace, ctx: CheckContext) -> None:
        self.trace = trace
        self.ctx = ctx
        self.passes: dict[tuple, list[int]] = {}  # (kind, closure or line) -> passes
        self.made: set[int] = set()  # the id() of each finding of the numerical check

    def first_time(self, kind: str, where: object, p: Pass) -> bool:
        """Is this the first checked pass where a numerical finding of `kind` shows at
        `where` (a closure, or a line)? Either way pass `p` is noted as wrong there."""
        passes = self.passes.setdefault((kind, where), [])
        passes.append(self.ctx.backward_number(p))
        return len(passes) == 1

    def own(self, found: list[Finding]) -> list[Finding]:
        """`found`, made by the numerical check: `named` adds their other passes."""
        self.made.update(map(id, found))
        return found

    def first_of(self, found: list[Finding], p: Pass) -> list[Finding]:
        """The findings of pass `p` that did not show in an earlier checked pass."""
        return self.own([f for f in found if self.first_time(f.kind, (f.file, f.line), p)])

    def named(self, found: list[Finding]) -> list[Finding]:
        """Each numerical finding, with the other checked passes it showed in
        (`also wrong in backward passes 3, 5`); it is at the first of them."""
        t = self.trace
        out = []
        for f in found:
            where = t.closure_index(f.step) if f.kind == "wrong-derivative" else (f.file, f.line)
            passes = self.passes.get((f.kind, where), ())
            if len(passes) > 1 and id(f) in self.made:
                others = passes[1:]
                f = replace(f, also_in_passes=tuple(others), message=(
                    f"{f.message} Also wrong in backward pass{'es' if len(others) > 1 else ''} "
                    f"{', '.join(map(str, others))}."))
            out.append(f)
        return out



@dataclass
class Tally:
    """The counts and notes of one numerical check (`mgtui.doctor.findings.Report`'s)."""

    wrong_in: WrongPasses  # the passes each numerical finding showed in
    checked: list[Pass] = field(default_factory=list)  # the passes checked, in order
    checked_nodes: int = 0
    checked_calls: int = 0  # `_backward` calls whose local derivative was checked
    kinks: int = 0  # of them, those that only agreed on one side (ReLU at 0)
    notes: list[str] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)  # said as the verdict's "but"
