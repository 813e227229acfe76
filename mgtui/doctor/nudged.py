"""What the numerical check plans and measures on a scalar engine: one backward pass to
check and the direction its graph is nudged along (`Plan`), every node's data in the
nudged runs (`Moves`), a `_backward` call that does not match them (`Suspect`), and the
tolerances they are compared with (`numerical`, `faulty_op`).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from mgtui.trace import Pass

ATOL, RTOL = 1e-5, 1e-3  # gradcheck's tolerances
H = 1e-7  # nudge of the directional runs, relative to max(1, |data|)


def close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= ATOL + RTOL * scale


@dataclass
class Plan:
    """What the nudged runs check: one backward pass and the graph behind its root."""

    pass_: Pass
    first: int  # its first `_backward` event
    stop_after: int  # the `_backward` calls before that one, over the whole run
    root: int
    nodes: list[int]  # the root's graph, by id
    leaves: list[int]
    direction: dict[int, float]  # node -> its nudge, in units of H


@dataclass
class Moves:
    """Every node's data as the checked pass found it, and in the two nudged runs (or in
    the one nudged up, `minus` then being `base`: a one-sided difference)."""

    base: array
    plus: array
    minus: array
    start_grad: array  # every grad as the checked pass found it
    span: float = 2 * H  # plus - minus, in units of the direction: 2H, or H one-sided

    @property
    def two_sided(self) -> bool:
        return self.minus is not self.base


@dataclass
class Suspect:
    """A `_backward` call whose contributions do not match how its node moves."""

    event: int
    node: int
    grad: float  # the node's grad when its `_backward` ran
    contrib: dict[int, float]  # input -> what the call added to its grad
