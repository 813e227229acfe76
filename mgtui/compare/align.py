"""Matching the nodes of two backward passes' graphs, which may differ in shape (torch
fuses ops and adds its own nodes; a hand-written engine makes a `-1` for a subtraction):

- leaves by name (label or variable), then the rest by value, in the order they were made;
- each op, in the order it was made, to the other side's op with the same kind of op over
  the same (matched) inputs; failing that, to the first op made after its matched inputs
  that has the same value and was computed from them.

It matches classes of nodes (`mgtui.compare.passes`: the copies of one computation are
one class), each by its first node.

What matches neither way stays unaligned, and the comparison says so."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field

from mgtui.compare.passes import BackwardPass, op_kind
from mgtui.compare.values import Tolerance

DEPENDS_VISITS = 20_000  # nodes looked at to tell that one op was computed from another
CANDIDATES = 64  # ops of the same value tried for one op that matched by no structure
SCANNED = 512  # ops of the same value looked at for it (most of them matched already)


@dataclass
class Alignment:
    """Which class of side A's graph (`mgtui.compare.passes`) is which of side B's, each
    by its first node, and how each pair was found (`name`, `value`, `structure`)."""

    a: BackwardPass
    b: BackwardPass
    to_b: dict[int, int] = field(default_factory=dict)
    to_a: dict[int, int] = field(default_factory=dict)
    how: dict[int, str] = field(default_factory=dict)

    def pair(self, na: int, nb: int, how: str) -> None:
        self.to_b[na] = nb
        self.to_a[nb] = na
        self.how[na] = how

    def unaligned(self) -> tuple[list[int], list[int]]:
        """The classes of each side's graph with no partner."""
        return ([n for n in self.a.classes if n not in self.to_b],
                [n for n in self.b.classes if n not in self.to_a])


def align(a: BackwardPass, b: BackwardPass, tol: Tolerance) -> Alignment:
    al = Alignment(a, b)
    _align_leaves(al, tol)
    _align_ops(al, tol)
    ra, rb = a.rep.get(a.root), b.rep.get(b.root)
    if ra is not None and rb is not None and ra not in al.to_b and rb not in al.to_a:
        al.pair(ra, rb, "root")  # the two outputs are the thing compared
    return al


def _align_leaves(al: Alignment, tol: Tolerance) -> None:
    a, b = al.a, al.b
    by_name: dict[str, list[int]] = {}
    for nb in b.leaves:
        if b.name(nb):
            by_name.setdefault(b.name(nb), []).append(nb)
    rest = []
    for na in a.leaves:
        named = by_name.get(a.name(na)) if a.name(na) else None
        if named:
            al.pair(na, named.pop(0), "name")
        else:
            rest.append(na)
    free = [nb for nb in b.leaves if nb not in al.to_a]
    for na in rest:
        va = a.value(na)
        for k, nb in enumerate(free):
            if tol.agree(va, b.value(nb)):
                al.pair(na, nb, "value")
                del free[k]
                break


def _align_ops(al: Alignment, tol: Tolerance) -> None:
    a, b = al.a, al.b
    by_value = sorted((b.data[n], n) for n in b.ops if math.isfinite(b.data[n]))
    values = [v for v, _ in by_value]
    for na in a.ops:
        kids = a.children(na)
        inputs = [al.to_b[c] for c in kids if c in al.to_b]
        kind = op_kind(a.trace.op(na))
        whole = len(inputs) == len(kids)
        found = _by_structure(al, inputs, kind) if whole and inputs else None
        if found is not None:
            al.pair(na, found, "structure")
            continue
        va = a.data[na]
        if not math.isfinite(va):
            continue
        found = _by_value(al, na, va, inputs, kind, by_value, values, tol)
        if found is not None:
            al.pair(na, found, "value")


def _by_value(al: Alignment, na: int, va: float, inputs: list[int], kind: str,
              by_value: list[tuple[float, int]], values: list[float],
              tol: Tolerance) -> int | None:
    """B's op, not matched yet, made after `inputs` (A's op's matched inputs, on B's
    side) and computed from them, whose value agrees with `va`: of those, the one that
    takes most of them as its own inputs, then of the same kind of op, then the closest
    value, then the first made."""
    b = al.b
    lo, hi = tol.window(va)
    after = max(inputs, default=-1)
    first = bisect_left(values, lo)
    wanted = set(inputs)
    scored = []
    for k in range(first, min(bisect_right(values, hi), first + SCANNED)):
        vb, nb = by_value[k]
        if nb > after and nb not in al.to_a:
            direct = len(wanted.intersection(b.children(nb)))
            scored.append((-direct, op_kind(b.trace.op(nb)) != kind, abs(vb - va), nb))
    scored.sort()
    for *_, nb in scored[:CANDIDATES]:
        if _computed_from(b, nb, inputs):
            return nb
    return None


def _by_structure(al: Alignment, inputs: list[int], kind: str) -> int | None:
    """B's op of the same kind over exactly these inputs, not matched yet (the first)."""
    b = al.b
    want = Counter(inputs)
    for nb in b.users(inputs[0]):
        if nb in al.to_a or op_kind(b.trace.op(nb)) != kind:
            continue
        kids = b.children(nb)
        if len(kids) == len(inputs) and Counter(kids) == want:
            return nb
    return None


def _computed_from(b: BackwardPass, nb: int, inputs: list[int]) -> bool:
    """Was B's class `nb` computed from every one of `inputs` (its matched inputs)?"""
    if not inputs:
        return True
    wanted = set(inputs)
    low = min(wanted)
    seen = {nb}
    stack = [nb]
    while stack and wanted and len(seen) < DEPENDS_VISITS:
        n = stack.pop()
        for c in b.children(n):
            if c >= low and c not in seen:
                seen.add(c)
                wanted.discard(c)
                stack.append(c)
    return not wanted
