"""Which lines of a `_backward` closure assign a grad (`x.grad = …`) instead of adding to
it (`x.grad += …`): read from the closure's source, so the app marks such a write `=`
in the node table and `!` in the Source pane at every step, with or without the doctor.

A line like `x.grad = x.grad + d` reads the grad it writes: it accumulates, and is not
counted. Source that does not parse (a closure cut out of a bigger statement) gives none.
"""

from __future__ import annotations

import ast
import textwrap
from functools import lru_cache

from mgtui.trace import Closure


@lru_cache(maxsize=256)
def assigning_lines(closure: Closure) -> frozenset[int]:
    """The file line numbers of `closure` whose statement assigns some `….grad`."""
    try:
        tree = ast.parse(textwrap.dedent("\n".join(closure.lines)))
    except (SyntaxError, ValueError):
        return frozenset()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if is_grad(target) and not reads(value, target):
                found.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return frozenset(closure.first_line + n - 1 for n in found)


def is_grad(target: ast.expr) -> bool:
    return isinstance(target, ast.Attribute) and target.attr == "grad"


def reads(value: ast.expr, target: ast.expr) -> bool:
    """Does `value` read the same `….grad` that `target` writes?"""
    wanted = ast.dump(target.value)  # type: ignore[attr-defined]
    return any(isinstance(n, ast.Attribute) and n.attr == "grad" and ast.dump(n.value) == wanted
               for n in ast.walk(value))
