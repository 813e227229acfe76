"""What a custom op's `_backward` reads as it begins, recorded in the runner's child so
that the step can be worked out with its numbers (`s = 0.5744, out.grad = 1.0`).

`CallValues` is a recorder `on_backward` hook: it only reads, so the recorder runs it
on its fast path and takes nothing back after it. For each closure code it works out
once, from the bytecode, which of its closure variables it reads: a number (`s`), or
the `data`/`grad` of a node (`out.grad`; the `x.grad` that `x.grad += …` reads only to
add to is left out). At each call it reads just those. Ops that `mgtui.trace.explain` works out
from their formulas (`+`, `*`, `tanh`…, by their `_op`) go into its `skip` set as they
are first seen, and the recorder no longer calls it for them, which keeps the cost of a
big training run low.
"""

from __future__ import annotations

import dis
from typing import Callable

from mgtui.trace.explain import known_op
from mgtui.recording.slots_hooks import node_dict

Reads = tuple[tuple[str, int, str], ...]  # (shown name, closure cell index, "" | "data" | "grad")
MAX_VALUES = 12  # values kept per call: a closure over a whole model shows its first ones


def reads_of(code) -> Reads:
    """The closure variables `code` reads, and the fields of them it reads."""
    free = code.co_freevars
    found: dict[str, tuple[str, int, str]] = {}
    ins = list(dis.get_instructions(code))
    for k, op in enumerate(ins):
        if op.opname not in ("LOAD_DEREF", "LOAD_CLOSURE") or op.argval not in free:
            continue
        name = op.argval
        cell = free.index(name)
        nxt = ins[k + 1] if k + 1 < len(ins) else None
        if nxt is not None and nxt.opname == "COPY":
            continue  # `x.grad += …`: read only to add to it
        if nxt is not None and nxt.opname == "LOAD_ATTR" and nxt.argval in ("data", "grad"):
            key = f"{name}.{nxt.argval}"
            found.setdefault(key, (key, cell, nxt.argval))
        elif nxt is None or nxt.opname != "LOAD_ATTR":
            found.setdefault(name, (name, cell, ""))
    return tuple(found.values())


class CallValues:
    """The `on_backward` hook: `found` holds (event index, ((name, value), …))."""

    def __init__(self) -> None:
        self.records = None  # set once the recorder exists: its event count is the index
        self.found: list[tuple[int, tuple[tuple[str, float], ...]]] = []
        self.skip: set = set()  # the `_op`s of known ops: the recorder leaves them out
        # by the code's id (a code object hashes all its constants, every time), with
        # the code kept alive beside its plan
        self.plans: dict[int, tuple[object, Reads | None]] = {}

    def plan(self, fn) -> Reads | None:
        code = getattr(fn, "__code__", None)
        found = self.plans.get(id(code))
        if found is None:
            plan = None
            if code is not None and code.co_freevars:
                plan = reads_of(code) or None
            found = self.plans[id(code)] = (code, plan)
        return found[1]

    def __call__(self, op: object, fn: Callable[[], object]) -> None:
        records = self.records
        if records is None:
            return
        if known_op(op):
            self.skip.add(op)  # (a known op is a string)
            return
        plan = self.plan(fn)
        if plan is None:
            return
        cells = fn.__closure__ or ()  # type: ignore[attr-defined]
        values = []
        for shown, cell, fieldname in plan:
            try:
                obj = cells[cell].cell_contents
            except (IndexError, ValueError):
                continue
            if fieldname:
                nd = node_dict(obj)
                obj = nd.get(fieldname) if nd is not None else getattr(obj, fieldname, None)
            if isinstance(obj, bool) or not isinstance(obj, (int, float)):
                continue
            values.append((shown, float(obj)))
            if len(values) >= MAX_VALUES:
                break
        if values:
            self.found.append((records.event_count(), tuple(values)))
