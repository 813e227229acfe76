"""A scenario file read and compiled, ready to record: a Python script or a Jupyter
notebook's code cells, with its title and notes from its docstring. A file that cannot
run raises `ScenarioLoadError` with one clear sentence."""

from __future__ import annotations

import ast
import io
import linecache
import os
import tokenize
from dataclasses import dataclass
from pathlib import Path

from mgtui.errors import ScenarioLoadError

__all__ = ["Scenario", "ScenarioLoadError", "load_scenario"]


@dataclass(frozen=True)
class Scenario:
    """A scenario as the recorder runs it: its file, source, compiled code, and the
    title and notes its docstring gives."""

    path: Path
    source: str
    code: object
    title: str
    notes: str


def load_scenario(path: str | os.PathLike) -> Scenario:
    """Read and compile a scenario, or raise ScenarioLoadError with a clear message."""
    p = Path(path)
    if not p.exists():
        raise ScenarioLoadError(f"no such file: {path}")
    if p.is_dir():
        raise ScenarioLoadError(f"{path} is a directory, not a scenario file")
    if p.suffix == ".ipynb":
        return load_notebook(p)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ScenarioLoadError(f"cannot read {path}: {exc.strerror}") from None
    if b"\0" in raw[:4096]:
        raise ScenarioLoadError(f"{path} is not a Python file (it looks binary)")
    try:  # as Python reads it: a BOM, or a PEP 263 coding cookie, else UTF-8
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        source = raw.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        raise ScenarioLoadError(f"{path} is not a Python file (its text is not UTF-8, nor in "
                                "the encoding its coding line names)") from None
    if p.suffix not in (".py", ""):
        raise ScenarioLoadError(f"{path} is not a Python file (expected a .py scenario)")
    filename = str(p.resolve())
    try:
        tree = ast.parse(source, filename)
        code = compile(tree, filename, "exec")
    except SyntaxError as exc:
        raise ScenarioLoadError(syntax_message(path, exc), caret(exc)) from None
    except ValueError as exc:
        raise ScenarioLoadError(f"{path} is not a Python file: {exc}") from None
    doc = ast.get_docstring(tree) or ""
    title, _, notes = doc.partition("\n")
    return Scenario(p, source, code, title.strip() or p.stem, notes.strip())


def load_notebook(p: Path) -> Scenario:
    """A Jupyter notebook's code cells, in order, as one scenario (`mgtui.trace.notebook`)."""
    from mgtui.trace import notebook

    try:
        nb = notebook.read(p)
    except ValueError as exc:
        raise ScenarioLoadError(str(exc)) from None
    except OSError as exc:
        raise ScenarioLoadError(f"cannot read {p}: {exc.strerror}") from None
    filename = str(p.resolve())
    try:
        code = compile(nb.source, filename, "exec")
    except SyntaxError as exc:
        raise ScenarioLoadError(f"{p}, {notebook.where(nb.source, exc.lineno)}: SyntaxError: "
                                f"{exc.msg}", caret(exc)) from None
    # Lines read back by file name (a closure's source, a traceback) are the script's,
    # not the notebook's JSON. (An entry with no mtime is never checked against the file.)
    linecache.cache[filename] = (len(nb.source), None, nb.source.splitlines(True), filename)
    return Scenario(p, nb.source, code, nb.title, nb.notes)


def syntax_message(path: str | os.PathLike, exc: SyntaxError) -> str:
    return f"{path}:{exc.lineno}:{exc.offset or 0}: SyntaxError: {exc.msg}"


def caret(exc: SyntaxError) -> str:
    text = (exc.text or "").rstrip("\n")
    if not text:
        return ""
    stripped = text.lstrip()
    indent = len(text) - len(stripped)
    col = max((exc.offset or 1) - 1 - indent, 0)
    return f"    {stripped}\n    {' ' * col}^"
