"""The small frozen records a trace hands out (`Node`, `Event`, `Write`, `Pass`,
`Closure`, `TraceError`), the kinds of its events and fields with the codes they are
stored as, and the error a malformed trace raises."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

PassKind = Literal["forward", "backward", "zero_grad", "update", "other"]
PASS_KINDS: tuple[PassKind, ...] = ("forward", "backward", "zero_grad", "update", "other")


class EventKind(StrEnum):
    """What one step is. The value is the name used in JSON; `code` is how it is stored."""

    CREATE = "create"  # a node was made
    BACKWARD = "backward"  # a node's `_backward` ran, with the writes it made
    GRAD = "grad"  # a write to a node's grad outside any `_backward`
    DATA = "data"  # a write to a node's data outside any `_backward`

    @property
    def code(self) -> int:
        return _KIND_CODES[self]


class Field(StrEnum):
    """The field a write changed."""

    GRAD = "grad"
    DATA = "data"

    @property
    def code(self) -> int:
        return _FIELD_CODES[self]


_KINDS = tuple(EventKind)
_KIND_CODES = {kind: code for code, kind in enumerate(_KINDS)}
_FIELDS = tuple(Field)
_FIELD_CODES = {f: code for code, f in enumerate(_FIELDS)}
_CREATE, _BACKWARD, _GRAD, _DATA = (k.code for k in _KINDS)
_LONE = bytes(int(b in (_GRAD, _DATA)) for b in range(256))  # 1 for a lone write's kind


class TraceFormatError(ValueError):
    """A trace (from a file or a stream) refers to something that is not there. The
    message names the first bad field, e.g. `events[12].node`."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


MAX_LINE = 2**24 - 1  # no source file has more lines; a larger one is a corrupt trace
# Inputs one node may have: every tool shows a node's inputs (the step's working, the
# Graph pane, --print, the html page), and one of millions kept each of them busy for
# minutes. A micrograd op has one or two; a sum written as one op, a few hundred.
MAX_INPUTS = 10_000


@dataclass(frozen=True, slots=True)
class Node:
    id: int
    label: str
    op: str
    children: tuple[int, ...]
    data: float
    line: int | None
    final_data: float
    final_grad: float


@dataclass(frozen=True, slots=True)
class Write:
    """One write to a node's `grad` (or `data`) made inside a `_backward` call."""

    node: int
    field: Field
    before: float
    after: float
    line: int | None
    index: int = -1  # its place among all the trace's writes (see `TraceIndex.contribution`)

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass(frozen=True, slots=True)
class Event:
    """One step: a node created, a `_backward` call with its writes, or a lone write."""

    index: int
    kind: EventKind
    node: int
    before: float = math.nan
    after: float = math.nan
    line: int | None = None
    writes: tuple[Write, ...] = ()
    closure: int | None = None

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass(frozen=True, slots=True)
class Pass:
    index: int
    kind: PassKind
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start

    def __contains__(self, step: int) -> bool:
        return self.start <= step < self.end

    @property
    def steps(self) -> range:
        """The event indices of the pass."""
        return range(self.start, self.end)


@dataclass(frozen=True, slots=True)
class Closure:
    """The source of one `_backward` closure (engine, micrograd or the scenario's own)."""

    name: str
    filename: str
    first_line: int
    lines: tuple[str, ...]
    default: bool = False  # the no-op an `__init__` sets: the node never got a real one

    def covers(self, filename: str, line: int) -> bool:
        return filename == self.filename and self.first_line <= line < self.first_line + len(self.lines)


@dataclass(frozen=True, slots=True)
class TraceError:
    type: str
    message: str
    line: int | None
    after_event: int = 0

    def __str__(self) -> str:
        where = f" at line {self.line}" if self.line else ""
        return f"{self.type}{where}: {self.message}" if self.message else f"{self.type}{where}"
