"""A `_backward` closure bound late (issue 33, point 3): made inside a loop, it reads a
variable the loop rebinds (`for x in xs: … def fn(): x.grad += …`), so every closure made
there sees the variable's last value when it runs, not the one of its own turn.

Read from the source only (the syntax tree of the closure's file): the closure's free
names (read, neither its parameters nor assigned in it) that a loop around its
definition, in the function that defines it, assigns (its target, or an assignment in
its body). A default argument (`def fn(x=x):`) is a parameter, so it is not late. What
this cannot see: a name rebound by a loop in another function, or the closure made by a
function called from the loop (each call binds its own variables: not late anyway).
"""

from __future__ import annotations

import ast
import linecache
from functools import lru_cache

Function = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@lru_cache(maxsize=32)
def _tree(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def late_names(filename: str, first_line: int) -> list[str]:
    """The names the closure defined at `first_line` of `filename` reads late (see the
    module's docstring), sorted; [] if none or if the source cannot be read."""
    tree = _tree("".join(linecache.getlines(filename)))
    if tree is None:
        return []
    for outer in ast.walk(tree):
        if not isinstance(outer, Function):
            continue
        for loop in loops_in(outer):
            for closure in ast.walk(loop):
                if isinstance(closure, Function) and closure is not outer and (
                        closure.lineno == first_line or first_decorated(closure) == first_line):
                    late = free_names(closure) & assigned_in(loop)
                    if late:
                        return sorted(late)
    return []


def first_decorated(f: ast.AST) -> int:
    decorators = getattr(f, "decorator_list", None) or []
    return min([d.lineno for d in decorators] + [f.lineno])


def loops_in(function: ast.AST) -> list[ast.AST]:
    """The loops of `function` itself (not those of functions defined in it)."""
    out, stack = [], list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, Function):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def params(f: ast.AST) -> set[str]:
    a = f.args  # type: ignore[attr-defined]
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    names += [x for x in (a.vararg, a.kwarg) if x is not None]
    return {x.arg for x in names}


def stored(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, (ast.Store, ast.Del))}


def free_names(closure: ast.AST) -> set[str]:
    """The names the closure reads that it neither takes nor assigns (nor declares
    global)."""
    body = closure.body if isinstance(closure.body, list) else [closure.body]  # type: ignore
    read, own = set(), params(closure)
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                read.add(n.id)
            elif isinstance(n, ast.Global):
                own.update(n.names)
        own |= stored(stmt)
    return read - own


def assigned_in(loop: ast.AST) -> set[str]:
    """The names a loop rebinds each turn: its target, and what its body assigns (not
    inside a function defined there)."""
    out = stored(loop.target) if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
    stack = list(loop.body)  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        if isinstance(node, Function):
            if not isinstance(node, ast.Lambda):
                out.add(node.name)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return out


def late_text(filename: str, first_line: int) -> str:
    """A sentence for a finding in a closure bound late, "" for one that is not."""
    names = late_names(filename, first_line)
    if not names:
        return ""
    listed = ", ".join(names)
    defaults = ", ".join(f"{n}={n}" for n in names)
    return (f" The closure is made in a loop and reads {listed}, which the loop rebinds: "
            f"it is bound late, so each closure made there sees the last "
            f"{'value' if len(names) == 1 else 'values'} when it runs, not those of its own "
            f"turn (bind {'it' if len(names) == 1 else 'them'} as defaults: ({defaults})).")
