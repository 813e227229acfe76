"""No class of the package is built from mixins of the package (issue 36): a class that
needs several roles holds them (composition: an object the owner holds and hands out),
it does not inherit them.

Measured on the source, by its ast: a *project base* of a class is a class defined in
the package that it names among its bases (by a name defined in its module, a name
imported from the package, or `module.Name` of a module imported from it). A base that
is exception-like (a project class that derives from a built-in exception: `NotAGraph
(ScenarioLoadError, TypeError)` is an error of two kinds, not a class of two roles) or
a `typing.Protocol` (an interface: it declares, it does not bring code) does not count.
A class with two project bases or more is mixed.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path


PACKAGE = Path(__file__).resolve().parent.parent.parent / "mgtui"

def _module_name(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


class _Module:
    """One module's classes (name -> ClassDef) and the names it binds to the package's
    classes or modules (local name -> dotted name)."""

    def __init__(self, name: str, tree: ast.Module) -> None:
        self.name = name
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.names: dict[str, str] = {}
        package = name.split(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.split(".")[0] == package:
                for alias in node.names:
                    self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == package and alias.asname:
                        self.names[alias.asname] = alias.name


def _resolve(module: _Module, base: ast.expr, modules: dict[str, _Module]) -> str | None:
    """The dotted name of the project class `base` names in `module`, else None."""
    if isinstance(base, ast.Subscript):  # (a generic: `Base[int]`)
        base = base.value
    if isinstance(base, ast.Name):
        if base.id in module.classes:
            return f"{module.name}.{base.id}"
        dotted = module.names.get(base.id)
    elif isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
        owner = module.names.get(base.value.id)
        dotted = f"{owner}.{base.attr}" if owner else None
    else:
        return None
    if dotted is None:
        return None
    owner, _, name = dotted.rpartition(".")
    while owner in modules and name not in modules[owner].classes:  # (re-exported)
        if name not in modules[owner].names:
            return None
        owner, _, name = modules[owner].names[name].rpartition(".")
    return f"{owner}.{name}" if owner in modules else None


def _bases(modules: dict[str, _Module], dotted: str) -> list[ast.expr]:
    owner, _, name = dotted.rpartition(".")
    return modules[owner].classes[name].bases


def _is_exempt(modules: dict[str, _Module], dotted: str, seen: frozenset = frozenset()) -> bool:
    """Is project class `dotted` exception-like or a Protocol (see the docstring)?"""
    if dotted in seen:
        return False
    owner = modules[dotted.rpartition(".")[0]]
    for base in _bases(modules, dotted):
        name = base.value if isinstance(base, ast.Subscript) else base
        text = ast.unparse(name)
        if text in ("Protocol", "typing.Protocol"):
            return True
        found = getattr(builtins, text, None)
        if isinstance(found, type) and issubclass(found, BaseException):
            return True
        inner = _resolve(owner, base, modules)
        if inner is not None and _is_exempt(modules, inner, seen | {dotted}):
            return True
    return False


def mixed_classes(sources: dict[str, str]) -> dict[str, list[str]]:
    """{class: its project bases} for each class of `sources` ({path: text}, paths as
    `mgtui/x/y.py`) with two project bases or more, neither exception-like nor a
    Protocol."""
    modules = {}
    for path, text in sources.items():
        name = _module_name(path)
        modules[name] = _Module(name, ast.parse(text, filename=path))
    found = {}
    for module in modules.values():
        for cls in module.classes.values():
            bases = [b for b in (_resolve(module, base, modules) for base in cls.bases)
                     if b is not None and not _is_exempt(modules, b)]
            if len(bases) >= 2:
                found[f"{module.name}.{cls.name}"] = bases
    return found


def _package_sources() -> dict[str, str]:
    return {path.relative_to(PACKAGE.parent).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(PACKAGE.rglob("*.py"))}


def test_no_class_of_the_package_is_built_from_its_mixins():
    mixed = mixed_classes(_package_sources())
    assert not mixed, "classes built from the package's mixins (compose them instead):\n" \
        + "\n".join(f"{name}({', '.join(bases)})" for name, bases in sorted(mixed.items()))
