"""Where a backward pass's topological order is built: the line that adds to the list its
`_backward` calls walk (`topo.append(v)`), found in the source of the frames its first
`_backward` call was made from, as the recording noted them (`Records.callers`,
innermost first), in whatever file each is: the user's package as well as the scenario.

Only the syntax tree is read: the function around the frame's line whose loop walks a
list in reverse (`for v in reversed(topo)`, `topo[::-1]`) or pops a worklist (`while
order: order.pop()._backward()`), and the `append` or `insert` that fills that list, in
the same function or in the function of the same module that returns it or is handed
it (`topo = build_topo(self)`, `build(self, topo)`). A worklist refilled in its own loop
is Kahn's algorithm, ordered by the count of each node's consumers: the line that sets
the count is named (`pending[p] = pending.get(p, 0) + 1`), or, with no count, the
append in the loop (a breadth-first walk that queues a node each time it is reached).
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from functools import lru_cache
from typing import Callable, Sequence

Chain = tuple[tuple[str, int, str], ...]  # (file, line, function), innermost first
Callers = Sequence[tuple[int, Chain]]  # (event, chain), by event


def chain_at(callers: Callers, event: int) -> Chain:
    """The frames the `_backward` call `event` was made from: the chain noted last at or
    before it (one is noted whenever it changes)."""
    k = bisect_right([e for e, _ in callers], event)
    return callers[k - 1][1] if k else ()


def built_in_frames(chain: Chain, source_of: Callable[[str], str | None]
                    ) -> tuple[str, int] | None:
    """(file, line) of the line that builds the order walked by the innermost frame of
    `chain` that walks one (`source_of(file)`: a file's source, None if unknown)."""
    for filename, line, _ in chain:
        source = source_of(filename)
        if source is None:
            continue
        built = order_line(source, line, by_name=False)
        if built is not None:
            return filename, built
    return None


@lru_cache(maxsize=32)
def _tree(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def order_line(source: str, call: int, by_name: bool = True) -> int | None:
    """The line that adds to the topological order, for a backward pass whose
    `_backward` calls run from line `call` of `source`: the `for v in reversed(topo)`
    loop holding that line names the order, and the first `topo.append(...)` (or
    `insert`) in the same function builds it, or, where the list comes from another
    function of the module (`topo = build_topo(self)`, `build(self, topo)`), in that
    one. `by_name`: for a call from outside any such loop (`root.backward()` in a
    scenario), the loop of a function named `backward` in the same source."""
    tree = _tree(source)
    if tree is None:
        return None
    functions = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    around = [f for f in functions if f.lineno <= call <= (f.end_lineno or f.lineno)]
    around.sort(key=lambda f: f.lineno, reverse=True)  # innermost first
    named = [f for f in functions if f.name == "backward" and f not in around] if by_name else []
    for function in around + named:
        for loop in ast.walk(function):
            if not isinstance(loop, (ast.For, ast.While)):
                continue
            name = walked_list(loop.iter) if isinstance(loop, ast.For) else popped_list(loop)
            inside = loop.lineno <= call <= (loop.end_lineno or loop.lineno)
            if name is None or not (inside or function in named):
                continue
            lines = (queued_lines(function, loop, name) if isinstance(loop, ast.While) else []
                     ) or appends_to(function, name) or filled_elsewhere(function, name, functions)
            if lines:
                return min(lines)
    return None


def popped_list(loop: ast.While) -> str | None:
    """`queue` for `while queue:` (or `while len(queue)`) whose body takes from it
    (`queue.pop()`, `queue.popleft()`): a worklist walked from its end or its front."""
    test = loop.test
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "len" \
            and len(test.args) == 1:
        test = test.args[0]
    if not isinstance(test, ast.Name):
        return None
    pops = [n for stmt in loop.body for n in ast.walk(stmt) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and n.func.attr in ("pop", "popleft")
            and isinstance(n.func.value, ast.Name) and n.func.value.id == test.id]
    return test.id if pops else None


def queued_lines(function: ast.AST, loop: ast.While, name: str) -> list[int]:
    """For a worklist refilled inside its own loop: Kahn's algorithm, which queues a node
    once a count of its consumers (`pending[p] -= 1; if pending[p] == 0: queue.append(p)`)
    runs out, is ordered by that count, so the lines that set the count (outside the
    loop: `pending[p] = pending.get(p, 0) + 1`); a walk with no count queues a node
    each time it is reached, at the append in the loop. [] if the loop does not refill."""
    inner = appends_to(loop, name)
    if not inner:
        return []
    counts = {n.target.value.id for n in ast.walk(loop) if isinstance(n, ast.AugAssign)
              and isinstance(n.target, ast.Subscript) and isinstance(n.target.value, ast.Name)
              and isinstance(n.op, ast.Sub)}
    if not counts:
        return inner
    in_loop = {id(n) for n in ast.walk(loop)}
    set_at = [n.lineno for n in ast.walk(function) if id(n) not in in_loop
              and isinstance(n, (ast.Assign, ast.AugAssign)) and any(
                  isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                  and t.value.id in counts
                  for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    return set_at or inner


def appends_to(function: ast.AST, name: str | None) -> list[int]:
    """The lines of `name.append(...)` and `name.insert(...)` in `function` (of any list,
    for `name` None)."""
    return [n.lineno for n in ast.walk(function) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and n.func.attr in ("append", "insert")
            and isinstance(n.func.value, ast.Name) and (name is None or n.func.value.id == name)]


def filled_elsewhere(function: ast.AST, name: str, functions: list) -> list[int]:
    """For a list `name` that `function` gets from another function of the module
    (`name = f(...)`) or hands to one (`f(..., name)`), the appends in that function."""
    callees = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            callees.add(called_name(node.value))
        elif isinstance(node, ast.Call) and any(
                isinstance(a, ast.Name) and a.id == name for a in node.args):
            callees.add(called_name(node))
    lines: list[int] = []
    for f in functions:
        if f is not function and f.name in callees:
            lines += appends_to(f, None)
    return lines


def called_name(call: ast.Call) -> str | None:
    """`f` for `f(...)`, `self.f(...)` or `module.f(...)`."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def walked_list(it: ast.expr) -> str | None:
    """`topo` for a loop over `reversed(topo)` or `topo[::-1]`."""
    if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "reversed"
            and len(it.args) == 1 and isinstance(it.args[0], ast.Name)):
        return it.args[0].id
    if isinstance(it, ast.Subscript) and isinstance(it.value, ast.Name):
        return it.value.id
    return None
