"""The trace's records written by hand (`mgtui.trace.records.Frozen`, issue 36: a
`@dataclass` builds its methods with `exec` at import, before the first frame) behave as
the frozen dataclasses they were: compared, hashed, printed, pickled, copied, refused a
new value, and `dataclasses.replace`d where the code does. Each is checked against a
frozen dataclass of the same fields, defined here as the records were."""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle
from array import array
from dataclasses import FrozenInstanceError, dataclass

import pytest

from mgtui.trace.chunks import EventChunk, NodeChunk, WriteChunk
from mgtui.trace.explain_arrays import ArrayContribution
from mgtui.trace.records import Closure, Event, EventKind, Field, Node, Pass, TraceError, Write
from mgtui.trace.working import Contribution, Explanation


@dataclass(frozen=True, slots=True)
class Node_:
    id: int
    label: str
    op: str
    children: tuple[int, ...]
    data: float
    line: int | None
    final_data: float
    final_grad: float


@dataclass(frozen=True, slots=True)
class Write_:
    node: int
    field: Field
    before: float
    after: float
    line: int | None
    index: int = -1


@dataclass(frozen=True, slots=True)
class Event_:
    index: int
    kind: EventKind
    node: int
    before: float = math.nan
    after: float = math.nan
    line: int | None = None
    writes: tuple = ()
    closure: int | None = None


@dataclass(frozen=True, slots=True)
class Pass_:
    index: int
    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Closure_:
    name: str
    filename: str
    first_line: int
    lines: tuple[str, ...]
    default: bool = False


@dataclass(frozen=True, slots=True)
class TraceError_:
    type: str
    message: str
    line: int | None
    after_event: int = 0


W = (4, Field.GRAD, 0.5, 1.5, 12)
CASES = [  # (the record, the dataclass it was, the arguments of two that differ by one field)
    (Node, Node_, (3, "a", "+", (1, 2), 2.0, 7, 2.0, -1.0), (3, "a", "*", (1, 2), 2.0, 7, 2.0, -1.0)),
    (Write, Write_, W, (*W, 9)),
    (Event, Event_, (5, EventKind.BACKWARD, 4, 1.0, 2.0, 9, (Write(*W),), 0),
     (5, EventKind.BACKWARD, 4, 1.0, 2.0, 9, (Write(*W),), 1)),
    (Event, Event_, (0, EventKind.CREATE, 0), (1, EventKind.CREATE, 0)),
    (Pass, Pass_, (0, "forward", 0, 10), (0, "forward", 0, 11)),
    (Closure, Closure_, ("_backward", "engine.py", 40, ("def f():", "  pass")),
     ("_backward", "engine.py", 40, ("def f():", "  pass"), True)),
    (TraceError, TraceError_, ("ValueError", "bad", 3), ("ValueError", "bad", 3, 8)),
]


def _name(cls: type) -> str:
    return cls.__name__.rstrip("_")


@pytest.mark.parametrize(("record", "was", "args", "other"), CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_a_record_behaves_as_the_frozen_dataclass_it_was(record, was, args, other):
    a, b, c = record(*args), record(*args), record(*other)
    old_a, old_c = was(*args), was(*other)
    # the same fields, in order, with the same defaults filled in
    fields = [f.name for f in dataclasses.fields(was)]
    assert [getattr(a, f) for f in fields] == [getattr(old_a, f) for f in fields]
    assert repr(a) == repr(old_a).replace(f"{was.__name__}(", f"{_name(was)}(", 1)
    assert (a == b, a == c, a != c) == (True, False, True) == (old_a == was(*args), old_a == old_c, old_a != old_c)
    assert a != old_a and (a == args) is False  # another class never compares equal
    assert hash(a) == hash(b) == hash(old_a) and hash(c) == hash(old_c)
    assert {a, b, c} == {a, c}
    for f in fields:
        with pytest.raises(FrozenInstanceError):
            setattr(a, f, 1)
        with pytest.raises(FrozenInstanceError):
            delattr(a, f)
    with pytest.raises(AttributeError):
        a.not_a_field = 1  # (frozen, and slotted: no instance dict)
    for again in (pickle.loads(pickle.dumps(a)), copy.copy(a), copy.deepcopy(a)):
        assert type(again) is record and repr(again) == repr(a)
    too_many = (*args, *[0] * 9)
    with pytest.raises(TypeError):
        record(*too_many)  # as before
    with pytest.raises(TypeError):
        was(*too_many)


def test_the_records_the_code_replaces_are_still_dataclasses():
    # `dataclasses.replace` is used on closures (the builder makes their text inert) and
    # on a trace's error; `fields` lists them in order
    c = Closure("_backward", "engine.py", 40, ("def f():",))
    assert dataclasses.replace(c, filename="x.py") == Closure("_backward", "x.py", 40, ("def f():",))
    assert [f.name for f in dataclasses.fields(c)] == [f.name for f in dataclasses.fields(Closure_)]
    e = TraceError("ValueError", "bad", 3)
    assert dataclasses.replace(e, message="worse") == TraceError("ValueError", "worse", 3)
    assert str(dataclasses.replace(e, line=None)) == "ValueError: bad"
    assert not dataclasses.is_dataclass(Event)  # (nothing replaces them: no field list)


def test_a_nan_compares_as_in_a_dataclass():
    # a dataclass compares its fields as a tuple: the very same NaN object is equal
    # (identity first), two NaNs are not
    nan = float("nan")
    assert Event(0, EventKind.CREATE, 0, nan, nan) == Event(0, EventKind.CREATE, 0, nan, nan)
    assert (Event(0, EventKind.CREATE, 0, float("nan")) == Event(0, EventKind.CREATE, 0, float("nan"))) \
        == (Event_(0, EventKind.CREATE, 0, float("nan")) == Event_(0, EventKind.CREATE, 0, float("nan")))


# -- the chunks (`mgtui.trace.chunks`) and the working (`mgtui.trace.working`) -------------
@dataclass(frozen=True)
class NodeChunk_:
    labels: tuple[str, ...]
    ops: tuple[str, ...]
    data: array
    lines: array
    child_ends: array
    child_ids: array
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class EventChunk_:
    kinds: array
    nodes: array
    before: array
    after: array
    lines: array
    closures: array
    write_starts: array


@dataclass(frozen=True)
class WriteChunk_:
    nodes: array
    fields: array
    before: array
    after: array
    lines: array


@dataclass(frozen=True)
class Contribution_:
    target: int
    label: str
    field: str
    before: float
    after: float
    line: int | None
    formula: str
    numbers: str
    nth: int
    uses: int
    expected: float | None = None


@dataclass(frozen=True)
class ArrayContribution_(Contribution_):
    terms: int = 1
    scale: float = 0.0


@dataclass(frozen=True)
class Explanation_:
    kind: str
    node: int
    title: str
    equation: str = ""
    local: str = ""
    contributions: tuple = ()
    notes: tuple[str, ...] = ()
    values: str = ""


def _arrays(*types: str) -> tuple[array, ...]:
    return tuple(array(t, [1, 2]) for t in types)


C = (2, "a", "grad", 0.0, 1.0, 5, "a.grad += 1", "1.0", 1, 1)
MORE = [
    (NodeChunk, NodeChunk_, (("a", "b"), ("", "+"), *_arrays("d", "i", "i", "i")),
     (("a", "b"), ("", "+"), *_arrays("d", "i", "i", "i"), ("x", ""))),
    (EventChunk, EventChunk_, _arrays(*"biddiii"), (*_arrays(*"biddii"), array("i", [0, 3]))),
    (WriteChunk, WriteChunk_, _arrays(*"ibddi"), (*_arrays(*"ibdd"), array("i"))),
    (Contribution, Contribution_, C, (*C, 1.0)),
    (ArrayContribution, ArrayContribution_, C, (*C, 1.0)),
    (Explanation, Explanation_, ("backward", 3, "t", "e", "l", (Contribution(*C),), ("n",)),
     ("backward", 3, "t", "e", "l", (Contribution(*C),), ("n",), "v")),
]


@pytest.mark.parametrize(("record", "was", "args", "other"), MORE,
                         ids=[c[0].__name__ for c in MORE])
def test_the_chunks_and_the_working_behave_as_the_frozen_dataclasses_they_were(
        record, was, args, other):
    a, b, c = record(*args), record(*args), record(*other)
    old_a, old_b, old_c = was(*args), was(*args), was(*other)
    fields = [f.name for f in dataclasses.fields(was)]
    assert [getattr(a, f) for f in fields] == [getattr(old_a, f) for f in fields]
    assert repr(a) == repr(old_a).replace(f"{was.__name__}(", f"{record.__name__}(", 1)
    assert (a == b, a == c) == (old_a == old_b, old_a == old_c) == (True, False)
    assert a != old_a
    try:
        expected = hash(old_a)
    except TypeError:  # (arrays among its fields: unhashable, as before)
        with pytest.raises(TypeError):
            hash(a)
    else:
        assert hash(a) == expected
    for f in fields:
        with pytest.raises(FrozenInstanceError):
            setattr(a, f, 1)
    again = pickle.loads(pickle.dumps(a))
    assert type(again) is record and again == a
    if dataclasses.is_dataclass(record):  # (those the code or the tests replace)
        changed = dataclasses.replace(a, **{fields[-1]: getattr(c, fields[-1])})
        assert changed == c and type(changed) is record


def test_the_ones_the_code_replaces_are_dataclasses():
    assert dataclasses.is_dataclass(NodeChunk) and dataclasses.is_dataclass(Explanation)
    e = Explanation("create", 0, "leaf a")
    assert dataclasses.replace(e, title="x").title == "x" and e.notes == () == e.contributions
