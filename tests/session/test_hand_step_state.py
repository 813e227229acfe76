"""A step's parts written by hand (`Source`, `Header`, `Passes`, `Detail`, `Notice`,
`StepState`; issue 36: a `@dataclass` builds its methods with `exec` at import, before
the first frame) behave as the frozen dataclasses they were: compared, hashed, printed,
pickled, refused a new value, and `dataclasses.replace`d where the code does. Each is
checked against a frozen dataclass of the same fields, defined here as they were."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Callable

import pytest

from mgtui.recording.recorder import record
from mgtui.session import Position, Session
from mgtui.session.step_state import Detail, Header, Notice, Passes, Source, StepState
from mgtui.trace import TraceError

from tests.conftest import SCENARIOS


@dataclass(frozen=True)
class Source_:
    key: tuple
    title: str
    lines: tuple[str, ...] = ()
    first_line: int = 1
    marked: dict[int, str] = field(default_factory=dict)
    numbers: Callable[[int], str] | None = None


@dataclass(frozen=True)
class Header_:
    title: str
    where: str
    short: str = ""


@dataclass(frozen=True)
class Passes_:
    kinds: tuple[str, ...]
    current: int
    at_error: bool
    has_error: bool
    losses: tuple[float, ...] = ()
    bars: str = ""
    loss_at: int = -1


def _where(line):
    return f"line {line}" if line else ""


@dataclass(frozen=True)
class Detail_:
    step: int
    total: int
    title: str
    explanation: object = None
    line: int | None = None
    where: Callable[[int | None], str] = _where
    closure_file: str = ""
    warnings: tuple[str, ...] = ()
    error: TraceError | None = None
    notes: tuple[str, ...] = ()
    asked: str = ""


@dataclass(frozen=True)
class Notice_:
    text: str
    severity: str = "information"
    timeout: float = 3


def _check(new: object, old: object, other_new: object, other_old: object, hashable: bool) -> None:
    fields = [f.name for f in dataclasses.fields(old)]
    assert tuple(getattr(new, f) for f in fields if f != "where") == \
        tuple(getattr(old, f) for f in fields if f != "where")
    name = type(new).__name__
    if "where" not in fields:
        assert repr(new) == repr(old).replace(f"{name}_(", f"{name}(", 1)
    assert new == copy.copy(new) and (new == other_new) == (old == other_old) is False
    assert new != old
    if hashable:
        assert hash(new) == hash(copy.copy(new)) and hash(new) != hash(other_new)
    else:
        with pytest.raises(TypeError):  # (a dict among its fields, as in the dataclass)
            hash(new)
        with pytest.raises(TypeError):
            hash(old)
    for f in fields:
        with pytest.raises(FrozenInstanceError):
            setattr(new, f, None)
        with pytest.raises(FrozenInstanceError):
            delattr(new, f)
    with pytest.raises(FrozenInstanceError):
        new.not_a_field = 1
    assert repr(pickle.loads(pickle.dumps(new))) == repr(new)


def test_source():
    _check(Source(("k",), "t", ("a = 1",), 3, {3: "▶"}), Source_(("k",), "t", ("a = 1",), 3, {3: "▶"}),
           Source(("k",), "t"), Source_(("k",), "t"), hashable=False)
    assert Source(("k",), "t").marked == {} and Source(("k",), "t").marked is not Source(("k",), "t").marked


def test_header_and_notice():
    _check(Header("t", "step 3"), Header_("t", "step 3"), Header("t", "step 3", "3"),
           Header_("t", "step 3", "3"), hashable=True)
    _check(Notice("hi"), Notice_("hi"), Notice("hi", "warning"), Notice_("hi", "warning"), hashable=True)


def test_passes_and_detail_are_replaced_as_the_session_does():
    p = Passes(("forward", "backward"), 0, False, False)
    _check(p, Passes_(("forward", "backward"), 0, False, False), dataclasses.replace(p, current=1),
           dataclasses.replace(Passes_(("forward", "backward"), 0, False, False), current=1), hashable=True)
    d = Detail(3, 10, "t", line=4)
    old = Detail_(3, 10, "t", line=4)
    _check(d, old, dataclasses.replace(d, asked="?"), dataclasses.replace(old, asked="?"), hashable=True)
    assert d.where(4) == old.where(4) == "line 4" and d.where(None) == ""
    assert Detail(3, 10, "t") == Detail(3, 10, "t")  # (the same default `where`)
    assert [f.name for f in dataclasses.fields(Detail)] == [f.name for f in dataclasses.fields(Detail_)]


def test_a_step_state_compares_by_identity_and_is_replaced_and_listed():
    session = Session(record(SCENARIOS / "chain.py"))
    state, again = session.next(), None
    assert isinstance(state, StepState) and state == state
    again = dataclasses.replace(state, quiz="?")
    assert again != state and again.quiz == "?" and again.position is state.position
    assert hash(state) != hash(again) and {state, again} == {state, again}
    assert [f.name for f in dataclasses.fields(state)][:2] == ["position", "total"]
    assert len(dataclasses.fields(state)) == 21 and state.notice is None and state.hidden == frozenset()
    with pytest.raises(FrozenInstanceError):
        state.quiz = "x"
    assert repr(state).startswith("StepState(position=Position(step=1")
    assert dataclasses.replace(state.position, tab="notes").tab == "notes"
