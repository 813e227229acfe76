"""The size limits of issue 18, checked on every module of the package: no function over
80 lines, no class over 400, no module over 700; and, as issue 36 asks, nothing within a
tenth of its limit (a module that must grow is split by concern before it has to be).

A function or class is measured from its `def` or `class` line to its last line (its
decorators not counted); a module by its lines. A giant is split by concern, not cut in
the middle.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent.parent / "mgtui"

MAX_FUNCTION = 80
MAX_CLASS = 400
MAX_MODULE = 700



def giants(path: Path, root: Path = PACKAGE.parent, share: float = 1.0) -> list[str]:
    """What in one module is over its limit (`share` of it), as `mgtui/x.py:12 class
    Name: 412 lines (limit 400)`, the module named from `root`."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(root).as_posix()
    found = []
    lines = len(text.splitlines())
    if lines > int(MAX_MODULE * share):
        found.append(f"{name}: module of {lines} lines (limit {int(MAX_MODULE * share)})")
    for node in ast.walk(ast.parse(text, filename=name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind, limit = "function", MAX_FUNCTION
        elif isinstance(node, ast.ClassDef):
            kind, limit = "class", MAX_CLASS
        else:
            continue
        size = node.end_lineno - node.lineno + 1
        limit = int(limit * share)
        if size > limit:
            found.append(f"{name}:{node.lineno} {kind} {node.name}: {size} lines (limit {limit})")
    return found


def test_no_module_class_or_function_is_over_its_limit():
    over: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found = giants(path)
        if found:
            over[path.relative_to(PACKAGE.parent).as_posix()] = found
    lines = [line for found in over.values() for line in found]
    assert not lines, "over the size limits:\n" + "\n".join(lines)


def test_nothing_sits_within_a_tenth_of_its_limit():
    close = [line for path in sorted(PACKAGE.rglob("*.py")) for line in giants(path, share=0.9)]
    assert not close, "within a tenth of a size limit:\n" + "\n".join(close)


def test_the_measure_finds_a_giant(tmp_path):
    """The check can fail: a long function, a long class and a long module are named,
    and what is just within a limit is not."""
    def lines(n: int, indent: str) -> str:
        return "\n".join(f"{indent}x{k} = {k}" for k in range(n))

    source = (f"def long():\n{lines(MAX_FUNCTION, '    ')}\n\n\n"
              f"def fits():\n{lines(MAX_FUNCTION - 1, '    ')}\n\n\n"
              f"class Long:\n{lines(MAX_CLASS, '    ')}\n")
    source += "\n" * (MAX_MODULE + 1 - len(source.splitlines()))
    (tmp_path / "big.py").write_text(source, encoding="utf-8")
    assert len(source.splitlines()) == MAX_MODULE + 1
    class_line = 2 * MAX_FUNCTION + 6
    assert giants(tmp_path / "big.py", tmp_path) == [
        f"big.py: module of {MAX_MODULE + 1} lines (limit {MAX_MODULE})",
        f"big.py:1 function long: {MAX_FUNCTION + 1} lines (limit {MAX_FUNCTION})",
        f"big.py:{class_line} class Long: {MAX_CLASS + 1} lines (limit {MAX_CLASS})",
    ]
    # and within a tenth of the limits: `fits` too
    assert f"big.py:{MAX_FUNCTION + 4} function fits: {MAX_FUNCTION} lines (limit 72)" in giants(
        tmp_path / "big.py", tmp_path, share=0.9)
