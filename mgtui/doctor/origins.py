"""Where, inside a faulty `_backward` (or a Function's `backward`), the wrong value was
made (issue 33, point 3): the call is replayed under a line tracer, and the line named
is the statement after which the value it added to the input's grad first exists in the
scenario's own code (not numpy's, torch's, the standard library's nor mgtui's):

- a local variable that equals it (`grad = grad.mean(…)` in `unbroadcast`, line 8, not
  the `return grad` after it), or holds it in a tuple or list;
- a function's return value that is it, or holds it (`return ((1 - t) * grad,)` in a
  `Function.backward`, not the closure's `for t, g in zip(inputs, grads):` that adds it);
- an argument a function of the scenario is called with: the caller's line made it
  (`self._accumulate(out.grad)`, not the helper's first line).

What this can pin is the statement that *made the value written*. A value computed
from an earlier wrong one (a count `n = …` that the returned `grad / n` divides by) is a
further step: `culprits` tries each value the making statement reads that was bound
earlier in the same frame (its parameters are what the call was given, not made there)
changed alone, a number to any value and a numeric array by a factor, against what the
numerical check measured of the right contribution (an element, the elements found
right, its sum along the input's nudge): one unknown against two or more numbers. A
number that, changed alone, agrees with all of them is named (the first bound, if
several), and every other value that would do as well is said beside it (a factor can
sit in the count or in the array it divides: the numbers cannot tell them apart). An
array is never named on its own: scaled, the array a statement transforms (`g =
g.mean(…)` after `g = grad.sum(…)`) always fits a mean-for-sum, so that would blame
the line before the fault. What it cannot pin: a wrong array that no factor fixes (`d =
1 - t` where `1 - t * t` belongs), a factor written in the statement itself (beside a
count it divides by, the count is named, and the statement's line is said), a value
made in another frame than the statement's, or one passed through attributes
(`self.x`). The statement is evaluated again with one local changed: it must be an
expression of its frame's values (it is the scenario's own code, run again as the
replay runs it).
"""

from __future__ import annotations

import ast
import linecache
import math
import os
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Callable

ATOL, RTOL = 1e-5, 1e-3  # gradcheck's (as the numerical check)

Same = Callable[[object], bool]


def library_paths() -> tuple[str, ...]:
    """The folders whose code is not the scenario's: the standard library, installed
    packages, and mgtui itself."""
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return tuple(sorted(p for p in paths if p))


@dataclass
class Made:
    """Where the value was made, and what that frame held just before the line ran
    (its locals, and the line each was last bound at), for `culprits`."""

    file: str
    line: int
    names: dict = field(default_factory=dict)  # local -> value, as the line started
    bound_at: dict = field(default_factory=dict)  # local -> the line that last bound it
    globals: dict = field(default_factory=dict)


def holds(x: object, same: Same) -> bool:
    """Is `x` the value, or a tuple or list holding it?"""
    if isinstance(x, (tuple, list)):
        return any(same(v) for v in x[:16])
    return same(x)


def made_at(run: Callable[[], object], same: Same,
            skip: tuple[str, ...] | None = None) -> Made | None:
    """Run `run()` under a line tracer; where the value `same` recognises was first made
    in the scenario's code (see the module's docstring). None if nowhere (it was made
    in a library, or on no line of the scenario's) or if `run` raised."""
    skip = library_paths() if skip is None else skip
    found: list[Made] = []
    last: dict[object, int] = {}  # frame -> the line it was on
    before: dict[object, tuple[dict, dict]] = {}  # frame -> (locals as that line began, bound at)

    def ours(frame) -> bool:
        name = frame.f_code.co_filename
        return os.path.isabs(name) and not name.startswith(skip)

    def local(frame, event, arg):
        if found:
            return None
        line = last.get(frame)
        names, bound = before.get(frame, ({}, {}))
        if event == "return" and holds(arg, same) and line is not None:
            found.append(Made(frame.f_code.co_filename, line, names, bound, frame.f_globals))
        elif event == "line":
            now = dict(frame.f_locals)
            if line is not None:
                if any(holds(v, same) for v in now.values()):
                    found.append(Made(frame.f_code.co_filename, line, names, bound,
                                      frame.f_globals))
                    return None
                bound = {**bound, **{k: line for k, v in now.items()
                                     if k not in names or names[k] is not v}}
            before[frame] = (now, bound)
            last[frame] = frame.f_lineno
        return local

    def call(frame, event, arg):
        if found or not ours(frame):
            return None
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        caller = frame.f_back
        if caller is not None and ours(caller) and any(
                holds(frame.f_locals.get(a), same) for a in code.co_varnames[:n]):
            found.append(Made(caller.f_code.co_filename, caller.f_lineno))
            return None
        return local

    saved = sys.gettrace()
    sys.settrace(call)
    try:
        run()
    except Exception:  # noqa: BLE001 - the real call raises it again, recorded
        return None
    finally:
        sys.settrace(saved)
    return found[0] if found else None


def statement_at(filename: str, line: int) -> ast.stmt | None:
    """The simple statement that starts at `line` of `filename` (an assignment, an
    augmented one, a return or an expression), None if there is none."""
    source = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if (isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr))
                and node.lineno == line):
            return node
    return None


def number(x: object) -> bool:
    """A plain number (an int, a float, a numpy scalar), not a bool."""
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, float)):
        return True
    return type(x).__module__ == "numpy" and getattr(x, "ndim", None) == 0 and not hasattr(
        x, "__len__") and getattr(getattr(x, "dtype", None), "kind", "") in "iuf"


@dataclass
class Target:
    """What the numerical check measured of the right contribution `C` to one input's
    grad: its flat element `j` (`expected`), the elements found right (flat index ->
    value), and `sum(C * dc) == total` along the input's nudge `dc`."""

    j: int
    expected: float
    right: dict
    dc: object  # an array of the input's shape
    total: float


@dataclass
class Culprit:
    """A value the making statement reads that, changed alone, makes the value right: a
    number (`was` -> `should`), or an array (`was` None) scaled by `should`."""

    name: str
    line: int
    was: float | None
    should: float


def culprits(made: Made, same: Same, target: Target) -> list[Culprit]:
    """The numbers the statement at `made` reads, bound earlier in its frame, that,
    changed alone, make the statement's value agree with every number measured of the
    right one (`target`); by the line they were bound at (a finding names the first)."""
    stmt = statement_at(made.file, made.line)
    if stmt is None or getattr(stmt, "value", None) is None or not made.names:
        return []
    try:
        code = compile(ast.Expression(stmt.value), made.file, "eval")
    except (SyntaxError, ValueError, TypeError):
        return []
    value_of = evaluator(code, made)
    here = value_of({})
    position = next((k for k, v in enumerate(here) if same(v)), None) if isinstance(
        here, (tuple, list)) else (-1 if same(here) else None)
    if position is None:
        return []  # the statement's value is not the contribution itself
    found = []
    for name in suspects(made, stmt):
        value, line = made.names[name], made.bound_at[name]
        if number(value):  # changed to any number
            should = fitted(lambda x: pick(value_of({name: x}), position), float(value), target)
            if should is not None:
                found.append(Culprit(name, line, float(value), should))
        elif numeric_array(value):  # scaled by a factor
            factor = fitted(lambda x: pick(value_of({name: value * x}), position), 1.0, target)
            if factor is not None:
                found.append(Culprit(name, line, None, factor))
    return found


def named(found: list[Culprit]) -> tuple[Culprit | None, list[Culprit]]:
    """The culprit a finding names, the first number (an array is never named on its
    own: see the module's docstring), and the others that fit as well, said beside it."""
    numbers = [c for c in found if c.was is not None]
    if not numbers:
        return None, []
    return numbers[0], [c for c in found if c is not numbers[0]]


def suspects(made: Made, stmt: ast.stmt | None = None) -> list[str]:
    """The locals the statement at `made` reads that `culprits` can try: numbers (not
    0) and numeric arrays bound earlier in its frame, by the line they were bound at."""
    stmt = stmt or statement_at(made.file, made.line)
    if stmt is None or getattr(stmt, "value", None) is None:
        return []
    read = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
    out = [k for k in read if made.bound_at.get(k) is not None and made.bound_at[k] < made.line
           and k in made.names and ((number(made.names[k]) and made.names[k])
                                    or numeric_array(made.names[k]))]
    return sorted(out, key=lambda k: made.bound_at[k])


def numeric_array(x: object) -> bool:
    return (type(x).__module__ == "numpy" and getattr(x, "ndim", 0) > 0
            and getattr(getattr(x, "dtype", None), "kind", "") in "iuf" and x.size > 0)


def evaluator(code, made: Made) -> Callable[[dict], object]:
    """The statement's value with some of its frame's locals replaced (None if it raised)."""
    def value_of(changed: dict) -> object:
        try:
            return eval(code, made.globals, {**made.names, **changed})  # noqa: S307
        except Exception:  # noqa: BLE001
            return None
    return value_of


def pick(value: object, position: int):
    if position < 0:
        return value
    return value[position] if isinstance(value, (tuple, list)) and position < len(value) else None


def fitted(contribution: Callable[[float], object], x0: float, target: Target) -> float | None:
    """An `x` with `contribution(x)` equal at element `j` to what was measured (a change
    of sign of the difference along a grid of `x0` times factors from 1/1000 to 1000, of
    either sign, then halving the bracket), where it also agrees with every other number
    measured; None if there is none."""
    import numpy as np

    def at_j(x: float) -> float | None:
        c = contribution(x)
        try:
            v = float(np.asarray(c, dtype=np.float64).reshape(-1)[target.j]) - target.expected
        except (TypeError, ValueError, IndexError):
            return None
        return v if math.isfinite(v) else None

    grid = [x0 * 10 ** (k / 20) for k in range(-60, 61)]
    grid = [-x for x in reversed(grid)] + grid
    values = [at_j(x) for x in grid]
    tried = 0
    for (a, fa), (b, fb) in zip(zip(grid, values), zip(grid[1:], values[1:])):
        if fa is None or fb is None or (fa > 0) == (fb > 0) or a * b < 0 or tried >= 3:
            continue
        tried += 1
        for _ in range(80):
            m = (a + b) / 2
            fm = at_j(m)
            if fm is None:
                break
            a, fa, b, fb = (a, fa, m, fm) if (fm > 0) == (fb > 0) else (m, fm, b, fb)
        x = a if abs(fa) <= abs(fb) else b
        if agrees(contribution(x), target):
            return x
    return None


def agrees(c: object, target: Target) -> bool:
    """Does contribution `c` agree with every number measured of the right one?"""
    import numpy as np

    try:
        c = np.asarray(c, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    if c.shape != np.shape(target.dc):
        return False
    flat = c.reshape(-1)
    if not all(close(flat[k], v) for k, v in [(target.j, target.expected), *target.right.items()]):
        return False
    size = float(np.max(np.abs(target.dc), initial=0.0))
    if not size:
        return False
    dc = target.dc / size  # (the runs' nudge, to a unit: the tolerances are absolute too)
    along, total = float(np.sum(c * dc)), target.total / size
    return abs(along - total) <= ATOL + RTOL * max(abs(total), float(np.sum(np.abs(c * dc))))


def close(a: float, b: float) -> bool:
    return abs(a - b) <= ATOL + RTOL * max(abs(a), abs(b))
