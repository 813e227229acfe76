"""Jupyter notebooks as scenarios: the code cells, in order, run as one script.

`read()` turns a notebook (read with nbformat) into the source the recorder compiles:
each code cell after a marker line `# mgtui: cell N`, N its place among all the
notebook's cells, counted from 1. The markdown cells become the lesson notes. IPython
magics (`%`, a whole `%%` cell) and shell lines (`!`) cannot run as Python: each is
replaced by a `pass` (so every line keeps its number) and a note says so.

A trace carries its source, so `where(source, line)` can say `cell 3, line 2` for any
trace of a notebook, saved or streamed, with nothing added to the trace formats.
Headless: nbformat is imported only to read a notebook.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

MARK = "# mgtui: cell "
_MARK_LINE = re.compile(r"# mgtui: cell (\d+)$")


@dataclass(frozen=True)
class NotebookSource:
    source: str  # the code cells as one script, each after its marker line
    title: str
    notes: str  # the markdown cells, then what was skipped


def read(path: str | os.PathLike) -> NotebookSource:
    """The notebook as one script. Raises ValueError (with a message to show) if
    nbformat cannot read it."""
    import nbformat

    try:
        nb = nbformat.read(os.fspath(path), as_version=4)
    except Exception as exc:  # noqa: BLE001 - nbformat raises many kinds; all say "bad file"
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{path} is not a notebook nbformat can read: {reason}") from None
    lines: list[str] = []
    markdown: list[str] = []
    skipped: list[str] = []
    for number, cell in enumerate(nb.cells, 1):
        text = cell.get("source", "")
        if cell.get("cell_type") == "markdown":
            if text.strip():
                markdown.append(text.strip())
            continue
        if cell.get("cell_type") != "code":
            continue
        lines.append(f"{MARK}{number}")
        cell_lines = text.split("\n")
        first = next((s.strip() for s in cell_lines if s.strip()), "")
        if first.startswith("%%"):  # a cell magic: the whole cell is its input
            skipped.append(f"cell {number}: the cell magic `{first}` (the whole cell)")
            lines.extend(_blank(s) for s in cell_lines)
            continue
        for m, s in enumerate(cell_lines, 1):
            stripped = s.lstrip()
            if stripped.startswith(("%", "!")):
                kind = "shell line" if stripped.startswith("!") else "IPython magic"
                skipped.append(f"cell {number}, line {m}: the {kind} `{stripped}`")
                lines.append(_blank(s))
            else:
                lines.append(s)
    title = _title(markdown)
    if title:  # the first markdown line is the title, as a docstring's first line is
        markdown[0] = markdown[0].split("\n", 1)[1].strip() if "\n" in markdown[0] else ""
    notes = "\n\n".join(m for m in markdown if m)
    title = title or Path(path).stem
    if skipped:
        notes += ("\n\n**Skipped** (not Python, so not run):\n\n"
                  + "\n".join(f"- {s}" for s in skipped))
    return NotebookSource("\n".join(lines) + "\n", title, notes.strip())


def _blank(line: str) -> str:
    """A line that does nothing, at the same indentation."""
    return line[: len(line) - len(line.lstrip())] + "pass" if line.strip() else ""


def _title(markdown: list[str]) -> str:
    """The first line of the first markdown cell, without its `#`s."""
    for text in markdown:
        first = text.strip().splitlines()[0].strip()
        if first:
            return first.lstrip("#").strip()
    return ""


def title_of(path: Path) -> str:
    try:
        return read(path).title
    except (ValueError, OSError):
        return ""


@lru_cache(maxsize=16)
def cells_of(source: str) -> tuple[tuple[int, int], ...]:
    """(marker line, cell number) of each code cell of a notebook's source, in order;
    empty for a plain script."""
    if MARK not in source:
        return ()
    found = []
    for k, line in enumerate(source.split("\n"), 1):
        m = _MARK_LINE.fullmatch(line)
        if m:
            found.append((k, int(m.group(1))))
    return tuple(found)


def cell_line(source: str, line: int) -> tuple[int, int] | None:
    """(cell, line in it) of a line of a notebook's source; None for a plain script
    (or a line before the first cell)."""
    cells = cells_of(source)
    if not cells:
        return None
    at = None
    for mark, cell in cells:  # a notebook has tens of cells: a scan is enough
        if mark > line:
            break
        at = (cell, line - mark)
    return at


def where(source: str, line: int | None) -> str:
    """`line 12` for a script, `cell 3, line 2` for a notebook; "" for no line."""
    if not line:
        return ""
    at = cell_line(source, line)
    if at is None:
        return f"line {line}"
    cell, m = at
    return f"cell {cell}, line {m}" if m else f"cell {cell}"


def number(source: str, line: int) -> str:
    """A line's number as a gutter shows it: `12`, or `3:2` in a notebook."""
    at = cell_line(source, line)
    if at is None:
        return str(line)
    return f"{at[0]}:{at[1]}" if at[1] else f"{at[0]}:"
