"""The small frozen records a trace hands out (`Node`, `Event`, `Write`, `Pass`,
`Closure`, `TraceError`), the kinds of its events and fields with the codes they are
stored as, and the error a malformed trace raises."""

from __future__ import annotations

import math
from dataclasses import FrozenInstanceError, dataclass
from enum import StrEnum
from typing import Any, ClassVar, Literal

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


class Frozen:
    """The base of a small frozen record written by hand: its fields (`_fields`, in
    order) compare, hash, print and pickle as a frozen dataclass's would, and cannot be
    set once made. A `@dataclass` builds each of these methods with `exec` when its
    module is imported (about 0.7 ms a frozen class), and the app's first frame imports
    some twenty of them. A record that `dataclasses.replace` or `fields` is used on
    keeps a `@dataclass(init=False, repr=False, eq=False)` (which only lists its fields)
    over this base."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def _field_values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._field_values() == other._field_values()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._field_values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{self.__class__.__qualname__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return self.__class__, self._field_values()


_set = object.__setattr__  # (how a record's `__init__` sets its fields)


class Node(Frozen):
    __slots__ = _fields = ("id", "label", "op", "children", "data", "line", "final_data",
                           "final_grad")
    id: int
    label: str
    op: str
    children: tuple[int, ...]
    data: float
    line: int | None
    final_data: float
    final_grad: float

    def __init__(self, id: int, label: str, op: str, children: tuple[int, ...],  # noqa: A002
                 data: float, line: int | None, final_data: float,
                 final_grad: float) -> None:
        _set(self, "id", id)
        _set(self, "label", label)
        _set(self, "op", op)
        _set(self, "children", children)
        _set(self, "data", data)
        _set(self, "line", line)
        _set(self, "final_data", final_data)
        _set(self, "final_grad", final_grad)


class Write(Frozen):
    """One write to a node's `grad` (or `data`) made inside a `_backward` call."""

    __slots__ = _fields = ("node", "field", "before", "after", "line", "index")
    node: int
    field: Field
    before: float
    after: float
    line: int | None
    index: int  # its place among all the trace's writes (see `TraceIndex.contribution`)

    def __init__(self, node: int, field: Field, before: float, after: float,
                 line: int | None, index: int = -1) -> None:
        _set(self, "node", node)
        _set(self, "field", field)
        _set(self, "before", before)
        _set(self, "after", after)
        _set(self, "line", line)
        _set(self, "index", index)

    @property
    def delta(self) -> float:
        return self.after - self.before


class Event(Frozen):
    """One step: a node created, a `_backward` call with its writes, or a lone write."""

    __slots__ = _fields = ("index", "kind", "node", "before", "after", "line", "writes",
                           "closure")
    index: int
    kind: EventKind
    node: int
    before: float
    after: float
    line: int | None
    writes: tuple[Write, ...]
    closure: int | None

    def __init__(self, index: int, kind: EventKind, node: int, before: float = math.nan,
                 after: float = math.nan, line: int | None = None,
                 writes: tuple[Write, ...] = (), closure: int | None = None) -> None:
        _set(self, "index", index)
        _set(self, "kind", kind)
        _set(self, "node", node)
        _set(self, "before", before)
        _set(self, "after", after)
        _set(self, "line", line)
        _set(self, "writes", writes)
        _set(self, "closure", closure)

    @property
    def delta(self) -> float:
        return self.after - self.before


class Pass(Frozen):
    __slots__ = _fields = ("index", "kind", "start", "end")
    index: int
    kind: PassKind
    start: int
    end: int

    def __init__(self, index: int, kind: PassKind, start: int, end: int) -> None:
        _set(self, "index", index)
        _set(self, "kind", kind)
        _set(self, "start", start)
        _set(self, "end", end)

    def __len__(self) -> int:
        return self.end - self.start

    def __contains__(self, step: int) -> bool:
        return self.start <= step < self.end

    @property
    def steps(self) -> range:
        """The event indices of the pass."""
        return range(self.start, self.end)


@dataclass(init=False, repr=False, eq=False)  # (for `dataclasses.replace`: see `Frozen`)
class Closure(Frozen):
    """The source of one `_backward` closure (engine, micrograd or the scenario's own)."""

    __slots__ = _fields = ("name", "filename", "first_line", "lines", "default")
    name: str
    filename: str
    first_line: int
    lines: tuple[str, ...]
    default: bool  # the no-op an `__init__` sets: the node never got a real one

    def __init__(self, name: str, filename: str, first_line: int, lines: tuple[str, ...],
                 default: bool = False) -> None:
        _set(self, "name", name)
        _set(self, "filename", filename)
        _set(self, "first_line", first_line)
        _set(self, "lines", lines)
        _set(self, "default", default)

    def covers(self, filename: str, line: int) -> bool:
        return filename == self.filename and self.first_line <= line < self.first_line + len(self.lines)


@dataclass(init=False, repr=False, eq=False)  # (for `dataclasses.replace`: see `Frozen`)
class TraceError(Frozen):
    """The exception a scenario raised: its type, message, line, and the event after
    which it was raised."""

    __slots__ = _fields = ("type", "message", "line", "after_event")
    type: str
    message: str
    line: int | None
    after_event: int

    def __init__(self, type: str, message: str, line: int | None,  # noqa: A002
                 after_event: int = 0) -> None:
        _set(self, "type", type)
        _set(self, "message", message)
        _set(self, "line", line)
        _set(self, "after_event", after_event)

    def __str__(self) -> str:
        where = f" at line {self.line}" if self.line else ""
        return f"{self.type}{where}: {self.message}" if self.message else f"{self.type}{where}"
