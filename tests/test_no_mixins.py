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

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mgtui"

# Mixed classes known today, each with who is taking it apart: the lead removes an entry
# as the branch that fixes it is merged (its xfail test below then passes, strictly).
KNOWN = {
    "mgtui.serve.app.ServedApp": "helper serve36 is composing its roles (issue 36)",
}


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
    mixed = {name: bases for name, bases in mixed_classes(_package_sources()).items()
             if name not in KNOWN}
    assert not mixed, "classes built from the package's mixins (compose them instead):\n" \
        + "\n".join(f"{name}({', '.join(bases)})" for name, bases in sorted(mixed.items()))


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=why))
    for name, why in sorted(KNOWN.items())])
def test_a_known_mixed_class_is_taken_apart(name):
    """Each entry of `KNOWN` names a class mixed today: expected to fail, strictly, so
    that once the class is taken apart this passes, fails the run, and the entry goes."""
    assert name not in mixed_classes(_package_sources())


OLD_TRACE = {
    # The trace as it was before issue 36: four mixins, each in a module of its own,
    # one imported under another name, one through a re-exporting package module.
    "mgtui/trace/places.py": "class TracePlaces:\n    scenario: str\n",
    "mgtui/trace/replay.py": "class TraceReplay:\n    def apply(self): ...\n",
    "mgtui/trace/index.py": "class TraceIndexes:\n    def uses(self): ...\n",
    "mgtui/trace/arrays.py": "class TraceArrays:\n    pass\n",
    "mgtui/trace/__init__.py": "from mgtui.trace.arrays import TraceArrays\n",
    "mgtui/trace/model.py": (
        "from dataclasses import dataclass\n"
        "from mgtui.trace import TraceArrays\n"
        "from mgtui.trace.index import TraceIndexes as Indexes\n"
        "from mgtui.trace.places import TracePlaces\n"
        "from mgtui.trace import replay\n"
        "@dataclass(frozen=True)\n"
        "class Trace(TracePlaces, replay.TraceReplay, Indexes, TraceArrays):\n"
        "    scenario: str\n"),
}


def test_the_check_finds_the_old_trace_built_from_four_mixins():
    """The check can fail: the old `Trace` is found, with its four mixins resolved."""
    assert mixed_classes(OLD_TRACE) == {"mgtui.trace.model.Trace": [
        "mgtui.trace.places.TracePlaces", "mgtui.trace.replay.TraceReplay",
        "mgtui.trace.index.TraceIndexes", "mgtui.trace.arrays.TraceArrays"]}


def test_one_project_base_an_error_of_two_kinds_or_a_protocol_is_not_mixed():
    sources = {
        "mgtui/errors.py": "class LoadError(Exception):\n    pass\n",
        "mgtui/probe.py": "from typing import Protocol\nclass Probe(Protocol):\n    pass\n",
        "mgtui/app.py": (
            "from textual.app import App\n"
            "from mgtui.errors import LoadError\n"
            "from mgtui.probe import Probe\n"
            "class Loading:\n    pass\n"
            "class MyApp(Loading, App[int]):\n    pass\n"  # one project base
            "class NotAGraph(LoadError, TypeError):\n    pass\n"
            "class Odd(LoadError, Loading):\n    pass\n"  # an error and one role
            "class Both(Probe, Loading):\n    pass\n"),  # an interface and one role
    }
    assert mixed_classes(sources) == {}
    sources["mgtui/app.py"] += "class Two(Loading, MyApp):\n    pass\n"
    assert mixed_classes(sources) == {"mgtui.app.Two": ["mgtui.app.Loading", "mgtui.app.MyApp"]}
