"""The bundled scenarios: their names, paths and titles, found without running them.

Both the command line and the app's picker list them, so they live here, below both.
"""

from __future__ import annotations

import ast
from pathlib import Path

LESSON_ORDER = ("chain", "neuron", "neuron_notebook", "neuron_exp", "mlp", "moons", "tensor_neuron",
                "tensor_mlp")  # (the tensor lessons need numpy: the `tensor` extra)


def bundled_dir() -> Path:
    import scenarios

    return Path(scenarios.__file__).resolve().parent


def bundled() -> list[tuple[str, Path]]:
    """(name, path) of every bundled scenario: the lessons, then the bugs."""
    root = bundled_dir()
    found = [(p.stem, p) for p in sorted(root.glob("*.py")) if p.stem != "__init__"]
    found += [(p.stem, p) for p in sorted(root.glob("*.ipynb"))]
    found += [(f"bugs/{p.stem}", p) for p in sorted((root / "bugs").glob("*.py"))
              if p.stem != "__init__"]

    def order(item: tuple[str, Path]) -> tuple[int, str]:
        name = item[0]
        return (LESSON_ORDER.index(name) if name in LESSON_ORDER else len(LESSON_ORDER), name)

    return sorted(found, key=order)


def title_of(path: Path) -> str:
    """The first line of a scenario's docstring (a notebook's first markdown line),
    read without running it."""
    if path.suffix == ".ipynb":
        from mgtui.trace.notebook import title_of as notebook_title

        return notebook_title(path)
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ""
    return doc.strip().splitlines()[0] if doc and doc.strip() else ""


def resolve(target: str) -> Path:
    """A path as given, else a bundled scenario by name (`neuron`, `bugs/no_zero_grad`)."""
    p = Path(target)
    if p.exists():
        return p
    names = dict(bundled())
    name = target.removesuffix(".py").removesuffix(".ipynb")
    for candidate in (name, f"bugs/{name}"):
        if candidate in names:
            return names[candidate]
    return p  # let the loader report it as missing
