"""What the working of a step is made of: `Explanation` and its `Contribution`s, and how
numbers and names are written in it (`fmt`, `name`), shared by the scalar working
(`mgtui.trace.explain`) and the tensor one (`mgtui.trace.explain_arrays`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from mgtui.trace import Trace
from mgtui.trace.arrays import display, number
from mgtui.trace.records import Frozen


def fmt(x: float) -> str:
    """A number as a lesson shows it: at most 4 decimals, trailing zeros trimmed; an int
    (a loop index read by a closure) as an int; an array as `mgtui.trace.arrays.display`
    writes it."""
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    if isinstance(x, (float, int)):
        return number(x)
    return display(x)  # (an array, as the array engine writes it)


def name(label: str) -> str:
    """A label as it reads inside a formula: `(x1*w1 + x2*w2)` rather than `x1*w1 + x2*w2`;
    a path such as `n.layers[0].w[1]` binds tighter than any op and needs no brackets."""
    plain = label.replace("_", "a").replace("#", "a").isalnum()
    return label if plain or _ATOM.fullmatch(label) else f"({label})"


# a name, `#id`, or a path of attributes and indices from a name
_ATOM = re.compile(r"#\d+|[^\W\d]\w*(?:\.[^\W\d]\w*|\[-?\d+\]|\['[^'\\]*'\])*")


def signed(x: float) -> str:
    return fmt(x) if x < 0 or math.isnan(x) else "+" + fmt(x)


# Written by hand rather than by `@dataclass` (`mgtui.trace.records.Frozen` says why).
_set = object.__setattr__


class Contribution(Frozen):
    """One grad (or data) write made by a `_backward` call, of floats (an array engine's,
    whose values may be arrays, is `mgtui.trace.explain_arrays.ArrayContribution`)."""

    __slots__ = _fields = ("target", "label", "field", "before", "after", "line", "formula",
                           "numbers", "nth", "uses", "expected")
    target: int
    label: str
    field: str
    before: float
    after: float
    line: int | None
    formula: str  # e.g. "n.grad += (1 - o²) × o.grad"
    numbers: str  # e.g. "0.5 × 1.0", or "" when the op is unknown
    nth: int  # 1 for the first contribution to this node in its backward pass
    uses: int  # the target's fan-out in the graph this pass walks
    expected: float | None  # what the formula gives, when the op is known

    def __init__(self, target: int, label: str, field: str, before: float, after: float,
                 line: int | None, formula: str, numbers: str, nth: int, uses: int,
                 expected: float | None = None) -> None:
        _set(self, "target", target)
        _set(self, "label", label)
        _set(self, "field", field)
        _set(self, "before", before)
        _set(self, "after", after)
        _set(self, "line", line)
        _set(self, "formula", formula)
        _set(self, "numbers", numbers)
        _set(self, "nth", nth)
        _set(self, "uses", uses)
        _set(self, "expected", expected)

    @property
    def delta(self) -> float:
        return self.after - self.before

    @property
    def differs_at(self) -> tuple[int, ...] | None:
        """For arrays (`mgtui.trace.explain_arrays.ArrayContribution`): the index of the
        first element whose change differs from the rule's; a number has none."""
        return None

    @property
    def mismatch(self) -> bool:
        """The recorded delta differs from what the op's derivative gives."""
        if self.expected is None:
            return False
        if not (math.isfinite(self.expected) and math.isfinite(self.delta)):
            return math.isfinite(self.expected) != math.isfinite(self.delta)
        return abs(self.expected - self.delta) > 1e-9 + 1e-6 * abs(self.expected)

    @property
    def change(self) -> str:
        return f"{self.label}.{self.field}: {fmt(self.before)} → {fmt(self.after)} ({signed(self.delta)})"


@dataclass(init=False, repr=False, eq=False)  # (for `dataclasses.replace`)
class Explanation(Frozen):
    """The working of one step: its kind, node and title, the equation and the local
    derivative, the contributions of a `_backward` call, and notes."""

    __slots__ = _fields = ("kind", "node", "title", "equation", "local", "contributions",
                           "notes", "values")
    kind: str  # create, backward, grad, data
    node: int
    title: str
    equation: str
    local: str
    contributions: tuple[Contribution, ...]
    notes: tuple[str, ...]
    values: str  # a custom op's: what its `_backward` read as it began

    def __init__(self, kind: str, node: int, title: str, equation: str = "",
                 local: str = "", contributions: tuple[Contribution, ...] = (),
                 notes: tuple[str, ...] = (), values: str = "") -> None:
        _set(self, "kind", kind)
        _set(self, "node", node)
        _set(self, "title", title)
        _set(self, "equation", equation)
        _set(self, "local", local)
        _set(self, "contributions", contributions)
        _set(self, "notes", notes)
        _set(self, "values", values)


def graph_made(trace: Trace, index: int) -> range:
    """The nodes of the graph event `index` works on: those the latest forward pass up to
    it made (the session's `views_for` rule), so a backward pass's fan-outs count its own
    graph, not every training step's."""
    p = trace.pass_at(index)
    for k in range(p.index if p is not None else -1, -1, -1):
        if trace.passes[k].kind == "forward":
            return trace.made_ids(trace.passes[k])
    forward = next((q for q in trace.passes if q.kind == "forward"), None)
    return trace.made_ids(forward) if forward is not None else range(0)
