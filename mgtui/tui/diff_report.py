"""The comparison of two runs (`mgtui diff A B`) as text: for `--print`, and for the
app's comparison pane, line by line. Scenario text in it (labels, lines of code) is made
inert where it is written out (`mgtui.safe`), never parsed as markup."""

from __future__ import annotations

from mgtui.diff import Comparison
from mgtui.diff.result import Point, shown

UNALIGNED_SHOWN = 8  # nodes listed by name on each side; the rest are counted


def headline(c: Comparison) -> str:
    """One line: what was found."""
    if c.difference is not None:
        return c.difference.message
    if c.problems:
        return "no difference in what was recorded, but not both runs are whole"
    agreed = (f"{c.compared} backward pass{'es' if c.compared != 1 else ''}, "
              f"{c.aligned} nodes aligned, {c.leaves} inputs' grads among them")
    left = len(c.unaligned_a) + len(c.unaligned_b)
    if left > c.aligned:  # most of the graphs were never compared: not a clean bill
        return (f"they agree where they could be aligned, which is the lesser part: {agreed}; "
                f"{len(c.unaligned_a)} nodes of A and {len(c.unaligned_b)} of B not compared")
    return f"they agree: {agreed}"


def kinds_note(c: Comparison) -> list[str]:
    """A note when one side's values are numbers and the other's arrays: nodes are
    aligned one to one, so a scalar engine and a tensor one meet only at numbers."""
    arrays = (c.a.trace.has_arrays, c.b.trace.has_arrays)
    if arrays[0] == arrays[1]:
        return []
    scalar, tensor = ("A", "B") if arrays[1] else ("B", "A")
    return [f"note: {scalar}'s values are numbers and {tensor}'s arrays: nodes are aligned one "
            "to one, so only nodes holding one number on both sides can be compared"]


def side_line(tag: str, name: str, pt: Point, widths: tuple[int, int] = (0, 0)) -> str:
    """`A  mine.py:37  n.grad 0.2929  self.grad += (1 - t) * out.grad`."""
    code = f"  {pt.code}" if pt.code else ""
    return f"{tag}  {where(name, pt).ljust(widths[0])}  {what(pt).ljust(widths[1])}{code}".rstrip()


def where(name: str, pt: Point) -> str:
    """`mine.py:37`; `TanhBackward0 (torch_ref.py: no source line)` for an autograd
    node of torch's own."""
    if pt.place:
        return pt.place
    return f"{pt.by} ({name}: no source line)" if pt.by else f"{name} (no line recorded)"


def what(pt: Point) -> str:
    """`n.grad 0.2929`, or `n = 0.8814` for a value."""
    return f"{pt.name} {shown(pt)}" if pt.field == "grad" else f"{pt.name} = {shown(pt)}"


def side_lines(c: Comparison) -> list[str]:
    """The two sides of the difference, one line each, in columns."""
    d = c.difference
    if d is None or d.a is None or d.b is None:
        return []
    sides = (("A", c.a.name, d.a), ("B", c.b.name, d.b))
    widths = (max(len(where(n, p)) for _, n, p in sides), max(len(what(p)) for _, _, p in sides))
    return [side_line(tag, n, p, widths) for tag, n, p in sides]


def comparison_lines(c: Comparison) -> list[str]:
    """The whole comparison, as --print writes it."""
    lines = [f"A: {c.a.name}{' (saved trace)' if c.a.saved else ''}",
             f"B: {c.b.name}{' (saved trace)' if c.b.saved else ''}",
             f"tolerance: {c.tolerance} (--rtol, --atol)",
             f"backward passes: {c.passes_a} in A, {c.passes_b} in B; compared {c.compared}"]
    lines += [f"note: {p}" for p in c.problems] + kinds_note(c)
    lines.append("")
    d = c.difference
    lines.append(("first difference, " if d is not None else "") + headline(c))
    lines += ["  " + line for line in side_lines(c)]
    if d is not None and d.hint:
        lines.append(f"  {d.hint}")
    lines += unaligned_lines(c)
    return lines


def unaligned_lines(c: Comparison) -> list[str]:
    """What of each graph (in the last pass compared) has no partner on the other side."""
    out = []
    for tag, nodes in (("A", c.unaligned_a), ("B", c.unaligned_b)):
        if not nodes:
            continue
        names = ", ".join(f"{label} ({op})" if op else label
                          for _, label, op in nodes[:UNALIGNED_SHOWN])
        more = f" and {len(nodes) - UNALIGNED_SHOWN} more" if len(nodes) > UNALIGNED_SHOWN else ""
        out.append(f"not aligned in {tag} (no partner in the other graph, not compared): "
                   f"{names}{more}")
    for tag, nodes in (("A", c.constants_a), ("B", c.constants_b)):
        if nodes:
            out.append(f"constants of {tag} only (no grad on the other side, so theirs is not "
                       f"compared; their values are, through the ops made from them): "
                       f"{_names(nodes)}")
    return out


def _names(nodes) -> str:
    shown = ", ".join(label for _, label, _ in nodes[:UNALIGNED_SHOWN])
    more = f" and {len(nodes) - UNALIGNED_SHOWN} more" if len(nodes) > UNALIGNED_SHOWN else ""
    return shown + more


def comparison_pane(c: Comparison) -> list[str]:
    """The app's comparison pane, most telling first (it may be cut at the bottom): both
    sides' lines and values, what was found, then the tolerance and what did not align."""
    lines = side_lines(c) + [headline(c)]
    if c.difference is not None and c.difference.hint:
        lines.append(c.difference.hint)
    lines += [f"note: {p}" for p in c.problems] + kinds_note(c)
    lines.append(f"A = {c.a.name} (shown), B = {c.b.name}; tolerance {c.tolerance}")
    return lines + unaligned_lines(c)
