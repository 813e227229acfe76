"""Matching the nodes of two backward passes' graphs, which may differ in shape (torch
fuses ops and adds its own nodes; a hand-written engine makes a `-1` for a subtraction):

- leaves by name (label or variable), then the rest by value, in the order they were made;
- each op, in the order it was made, to the other side's op of the same kind
  (`mgtui.diff.aliases`: `matmul` is torch's `Mm`) over the same (matched) inputs;
  failing that, to the first op made after its matched inputs that has the same value
  (a number, or an array element by element: an array only where one of its inputs
  matched) and was computed from them; an input with no partner is looked through, to
  the nearest that have one.

A leaf with no partner is a constant of its side: torch keeps no node for a tensor that
does not require grad (the data `X`, the labels `Y`, a `* 0.01`), where an engine has
a leaf for each. Ops are matched over their other inputs (`X.matmul(W1)` is torch's
`Mm` of `W1`), preferring, where a constant was left out, the op of the same value. A
constant all of whose users were matched is compared through them (`constants`), not
reported as unaligned.

It matches classes of nodes (`mgtui.diff.passes`: the copies of one computation are
one class), each by its first node.

What matches neither way stays unaligned, and the comparison says so."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field

from mgtui.diff.passes import BackwardPass, op_kind
from mgtui.diff.array_values import probe
from mgtui.diff.values import Tolerance

DEPENDS_VISITS = 20_000  # nodes looked at to tell that one op was computed from another
CANDIDATES = 64  # ops of the same value tried for one op that matched by no structure
SCANNED = 512  # ops of the same value looked at for it (most of them matched already)


@dataclass
class Alignment:
    """Which class of side A's graph (`mgtui.diff.passes`) is which of side B's, each
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
        """The classes of each side's graph with no partner (constants aside)."""
        ca, cb = map(set, self.constants())
        return ([n for n in self.a.classes if n not in self.to_b and n not in ca],
                [n for n in self.b.classes if n not in self.to_a and n not in cb])

    def constants(self) -> tuple[list[int], list[int]]:
        """Each side's leaves with no partner whose every user has one: constants (data,
        labels, a number an op was given) compared through the ops made from them."""
        return (_constants(self.a, self.to_b, self.b, self.to_a),
                _constants(self.b, self.to_a, self.a, self.to_b))


def _constants(p: BackwardPass, partner: dict[int, int], other: BackwardPass,
               back: dict[int, int]) -> list[int]:
    """Leaves of `p` with no partner, each of whose users has one (in `other`) that takes
    no leaf without a partner itself: no leaf there could be this one."""
    def free_leaf(n: int) -> bool:
        return n not in back and other.trace.is_leaf(n)

    return [n for n in p.leaves if n not in partner and p.users(n)
            and all(u in partner and not any(map(free_leaf, other.children(partner[u])))
                    for u in p.users(n))]


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
    index = _ValueIndex(b)
    leaves = set(a.leaves)
    for na in a.ops:
        kids = a.children(na)
        inputs = [al.to_b[c] for c in kids if c in al.to_b]
        constants = sum(1 for c in kids if c not in al.to_b and c in leaves)
        kind = op_kind(a.trace.op(na))
        whole = len(inputs) + constants == len(kids)
        found = _by_structure(al, na, inputs, kind, constants > 0, tol) \
            if whole and inputs else None
        if found is not None:
            al.pair(na, found, "structure")
            continue
        deep = inputs if whole else _below(a, kids, al.to_b)
        found = _by_value(al, na, deep, kind, index, tol)
        if found is not None:
            al.pair(na, found, "value")


BELOW = 64  # classes looked through for an op's nearest inputs that have a partner


def _below(p: BackwardPass, kids: list[int], partner: dict[int, int]) -> list[int]:
    """The partners of the nearest classes under `kids` that have one, looked for
    through those that have none (torch's NllLoss over a LogSoftmax that has no
    partner is computed from the logits)."""
    out, stack, seen = [], list(kids), set()
    while stack and len(seen) < BELOW:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in partner:
            out.append(partner[n])
        else:
            stack.extend(p.children(n))
    return out


class _ValueIndex:
    """Side B's ops by value (`probe`: a number, an array's first element), sorted, made
    when first asked for (reading arrays costs)."""

    def __init__(self, b: BackwardPass) -> None:
        self.b = b
        self._sorted: list[tuple[float, int]] | None = None
        self._values: list[float] = []

    def sorted(self) -> tuple[list[tuple[float, int]], list[float]]:
        if self._sorted is None:
            b = self.b
            self._sorted = sorted((v, n) for n in b.ops
                                  if math.isfinite(v := probe(b.value(n))))
            self._values = [v for v, _ in self._sorted]
        return self._sorted, self._values


def _by_value(al: Alignment, na: int, inputs: list[int], kind: str, index: _ValueIndex,
              tol: Tolerance) -> int | None:
    """B's op, not matched yet, made after `inputs` (A's op's matched inputs, on B's
    side) and computed from them, whose value agrees with A's op's: of those, the one
    that takes most of them as its own inputs, then of the same kind of op, then the
    closest value, then the first made."""
    a, b = al.a, al.b
    va = a.value(na)
    pa = probe(va)
    if not math.isfinite(pa) or not inputs and (a.arrays or b.arrays):
        return None  # (an array by its value alone: only from inputs that matched)
    by_value, values = index.sorted()
    lo, hi = tol.window(pa)
    after = max(inputs, default=-1)
    first = bisect_left(values, lo)
    wanted = set(inputs)
    scored = []
    for k in range(first, min(bisect_right(values, hi), first + SCANNED)):
        vb, nb = by_value[k]
        if nb > after and nb not in al.to_a:
            direct = len(wanted.intersection(b.children(nb)))
            scored.append((-direct, op_kind(b.trace.op(nb)) != kind, abs(vb - pa), nb))
    scored.sort()
    for *_, nb in scored[:CANDIDATES]:
        if _computed_from(b, nb, inputs) and (not b.arrays or tol.agree(va, b.value(nb))):
            return nb
    return None


def _by_structure(al: Alignment, na: int, inputs: list[int], kind: str, loose: bool,
                  tol: Tolerance) -> int | None:
    """B's op of the same kind over exactly these inputs (B's constants aside), not
    matched yet: the first; where a constant was left out on either side, the first
    whose value agrees, else the first."""
    b = al.b
    want = Counter(inputs)
    first = None
    for nb in b.users(inputs[0]):
        if nb in al.to_a or op_kind(b.trace.op(nb)) != kind:
            continue
        every = b.children(nb)
        kids = [k for k in every if k in al.to_a or not b.trace.is_leaf(k)]
        if Counter(kids) != want:
            continue
        if not loose and len(kids) == len(every):
            return nb
        if tol.agree(al.a.value(na), b.value(nb)):
            return nb
        first = nb if first is None else first
    return first


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
