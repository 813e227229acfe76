"""The checked backward passes each numerical finding showed in (`WrongPasses`), shared by
the scalar check (`numerical`) and the array check (`array_check`): a finding is made
once, at the first wrong pass, and names the others.
"""

from __future__ import annotations

from dataclasses import replace

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

