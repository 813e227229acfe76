"""Writes into parts of an array grad, recorded (issue 33).

`x.grad[:, lo:hi] += g`, `x.grad[rows, labels] -= 1`, `x.grad /= n` on a view,
`np.add.at(x.grad, idx, g)` and `np.add(a, b, out=x.grad)` change a grad array in
place without storing to `x.grad`, so neither the hooks nor the rewritten code see
them. After each `_backward` call on an engine with arrays whose source shows such a
write (`MARKS`: most closures store to the field, and cost one lookup), `note_inplace`
compares the grad of every node the closure holds (its free variables and default arguments, and
the nodes in a tuple or list among them) with the snapshot the recording last took of
it; one that changed is recorded as a write of the call, from that snapshot to its
value now, at the closure's line that writes into it (`x.grad[`, `(x.grad,`,
`out=x.grad`), else the closure's first line.
"""

from __future__ import annotations

import linecache
import re
from typing import Iterator

from mgtui.recording.store import ID
from mgtui.trace import Field

GRAD = Field.GRAD.code
_lines: dict[tuple[int, str], int] = {}  # (id of a code, variable) -> its write's line
MAY: dict[int, bool] = {}  # id of a closure's code -> may it write a grad in place?
# what a closure's source shows where it may change a grad in place: an element or slice
# of it assigned, `np.add.at(x.grad, ...)` (any ufunc's `at`), `np.copyto(x.grad, ...)`,
# `out=` (a helper that changes a grad it is handed is not looked into)
MARKS = re.compile(r"grad\[[^\n]*\]\s*[-+*/@%]?=(?!=)|(\.at|copyto)\(\s*[\w.]*grad\s*,"
                   r"|\bout\s*=")
COMMENT = re.compile(r"#[^\n'\"]*$", re.M)  # a comment, not looked in (`# out = A @ B`)


def note_inplace(records, fn: object) -> None:
    """Record the in-place changes `fn` (a `_backward` that just ran; the recorder's
    stack still holds its node) made to its nodes' array grads."""
    arrays = records.arrays
    last = arrays.last
    if not last or arrays.ndarray is None:
        return
    code = getattr(fn, "__code__", None)
    may = MAY.get(id(code))
    if may is None:
        may = MAY[id(code)] = code is not None and may_write(code)
    if not may:
        return  # (most closures: `x.grad += ...` stores to the field, which is recorded)
    for name, node in closure_nodes(fn):
        d = getattr(node, "__dict__", None)
        nid = d.get(ID) if type(d) is dict else None
        if nid is None:
            continue
        grad = d.get("grad")
        if type(grad) is not arrays.ndarray:
            continue
        entry = arrays.held(nid, GRAD)
        if entry is None or entry[0]() is not grad or not differs(entry[1], grad):
            continue
        before, after = arrays.write(nid, GRAD, grad, grad)
        records.add_write((nid, GRAD, before, after, write_line(fn, name)))


def differs(value, grad) -> bool:
    """Does the array `grad` hold other values than the snapshot `value`? (False where
    the snapshot is not whole: a big array's summary cannot tell.)"""
    if not getattr(value, "whole", False) or value.shape != grad.shape:
        return False
    held = value._values  # (the snapshot's bytes, or its float64 elements)
    if type(held) is bytes:
        return grad.tobytes() != held
    return grad.astype("float64").tobytes() != held.tobytes()


def closure_nodes(fn: object) -> Iterator[tuple[str, object]]:
    """(variable name, object) for each node-like object `fn` holds: its free
    variables, its default arguments, and the items of a tuple or list among them."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    held: list[tuple[str, object]] = []
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        try:
            held.append((name, cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    defaults = getattr(fn, "__defaults__", None) or ()
    names = code.co_varnames[code.co_argcount - len(defaults):code.co_argcount]
    held += zip(names, defaults)
    for name, obj in held:
        if type(obj) in (tuple, list):
            for item in obj[:16]:
                if hasattr(item, ID):
                    yield name, item
        elif hasattr(obj, ID):
            yield name, obj


def write_line(fn: object, name: str) -> int:
    """The line of `fn` that writes into `name`'s grad in place (else its first line)."""
    code = fn.__code__  # type: ignore[attr-defined]
    key = (id(code), name)
    line = _lines.get(key)
    if line is None:
        line = _lines[key] = find_write(code, name)
    return line


def may_write(code) -> bool:
    """Does the source of `code` show a grad written in place (`MARKS`)? True where
    the source cannot be read."""
    lines = [n for _, _, n in code.co_lines() if n is not None]
    text = "".join(linecache.getline(code.co_filename, n)
                   for n in range(code.co_firstlineno, max(lines, default=0) + 1))
    return not text or MARKS.search(COMMENT.sub("", text)) is not None


def find_write(code, name: str) -> int:
    lines = [n for _, _, n in code.co_lines() if n is not None]
    first, end = code.co_firstlineno, max(lines, default=code.co_firstlineno)
    marks = (f"{name}.grad[", f"({name}.grad,", f"out={name}.grad", f"{name}.grad,")
    for n in range(first, end + 1):
        text = linecache.getline(code.co_filename, n)
        if any(m in text for m in marks):
            return n
    return first
