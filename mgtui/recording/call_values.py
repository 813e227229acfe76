"""What a custom op's `_backward` reads as it begins, recorded in the runner's child so
that the step can be worked out with its numbers (`s = 0.5744, out.grad = 1.0`), and
which node each of its closure variables holds (`out#` = 77: the closure was bound late
if that is not its own node).

`CallValues` is a recorder `on_backward` hook: it only reads, so the recorder runs it
on its fast path and takes nothing back after it. For each closure code it works out
once, from the bytecode, which of its closure variables it reads: a number (`s`, an int
kept an int: `i = 2`), or the data or grad of a node (`out.grad`, `out.value` for a
class that calls its data `value`; the `x.grad` that `x.grad += …` reads only to add
to is left out). At each call it reads just those, and the node id (`node_id`, the
probes' own) of every closure variable that holds a node, those only written to
included, under the variable's name and `#` (`NODE_MARK`). Ops that `mgtui.trace.explain`
works out from their formulas (`+`, `*`, `tanh`…, by their `_op`) go into its `skip`
set as they are first seen, and the recorder no longer calls it for them, which keeps
the cost of a big training run low.
"""

from __future__ import annotations

import dis
from typing import Callable

from mgtui.trace.explain import NODE_MARK, known_op
from mgtui.recording.shapes import CANDIDATES
from mgtui.recording.slots_hooks import node_dict

Reads = tuple[tuple[str, int, str], ...]  # (shown name, closure cell index, "" | "data" | "grad")
MAX_VALUES = 12  # values kept per call: a closure over a whole model shows its first ones
# a node's data or grad read by a closure, under any name a class gives it -> its key
FIELD_KEYS = {**dict.fromkeys(CANDIDATES["data"], "data"),
              **dict.fromkeys(CANDIDATES["grad"], "grad")}


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
        if nxt is not None and nxt.opname == "LOAD_ATTR" and nxt.argval in FIELD_KEYS:
            key = f"{name}.{nxt.argval}"
            found.setdefault(key, (key, cell, FIELD_KEYS[nxt.argval]))
        elif nxt is None or nxt.opname != "LOAD_ATTR":
            found.setdefault(name, (name, cell, ""))
    return tuple(found.values())


class CallValues:
    """The `on_backward` hook: `found` holds (event index, ((name, value), …))."""

    def __init__(self) -> None:
        self.records = None  # set once the recorder exists: its event count is the index
        self.node_id: Callable[[object], int | None] | None = None  # (the recorder's)
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
                plan = reads_of(code)  # (maybe none: the nodes held are still read)
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
        values = self.nodes_held(fn.__code__.co_freevars, cells)  # type: ignore[attr-defined]
        read = 0
        for shown, cell, key in plan:
            try:
                obj = cells[cell].cell_contents
            except (IndexError, ValueError):
                continue
            if key:
                nd = node_dict(obj)
                obj = nd.get(key) if nd is not None else getattr(obj, shown.partition(".")[2], None)
            if isinstance(obj, bool) or not isinstance(obj, (int, float)):
                continue
            values.append((shown, obj if type(obj) is int else float(obj)))
            read += 1
            if read >= MAX_VALUES:
                break
        if values:
            self.found.append((records.event_count(), tuple(values)))

    def nodes_held(self, names: tuple[str, ...], cells: tuple) -> list[tuple[str, int]]:
        """(`name#`, node id) for each closure variable that holds a recorded node."""
        node_id = self.node_id
        held: list[tuple[str, int]] = []
        if node_id is None:
            return held
        for name, cell in zip(names, cells):
            try:
                nid = node_id(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
            if nid is not None:
                held.append((name + NODE_MARK, nid))
                if len(held) >= MAX_VALUES:
                    break
        return held
