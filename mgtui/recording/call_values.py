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
import re
import sys
from typing import Callable

from mgtui.trace.explain import KNOWN_OPS, NODE_MARK
from mgtui.recording.array_values import RULED_OPS
from mgtui.recording.probes import _VIEW_OF
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
    for name, nxt in _cell_loads(code):
        if name not in free:
            continue
        cell = free.index(name)
        if nxt is not None and nxt[0] == "COPY":
            continue  # `x.grad += …`: read only to add to it
        if nxt is not None and nxt[0] == "LOAD_ATTR" and nxt[1] in FIELD_KEYS:
            key = f"{name}.{nxt[1]}"
            found.setdefault(key, (key, cell, FIELD_KEYS[nxt[1]]))
        elif nxt is None or nxt[0] != "LOAD_ATTR":
            found.setdefault(name, (name, cell, ""))
    return tuple(found.values())


_OPNAME, _CACHE = dis.opname, dis.opmap.get("CACHE", -1)
_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
_BY_NAME = frozenset(dis.opmap[n] for n in ("LOAD_DEREF", "LOAD_CLOSURE") if n in dis.opmap)
_LOAD_ATTR = dis.opmap["LOAD_ATTR"]
_RAW = sys.version_info[:2] == (3, 11)  # (the bytecode `_instructions` reads itself)
_CELL_LOAD = re.compile(b"[" + b"".join(re.escape(bytes([op])) for op in sorted(_BY_NAME)) + b"]")


def _instructions(code) -> list[tuple[str, object]]:
    """(opname, argval) of each instruction of `code` as `dis.get_instructions` gives
    them, where `reads_of` looks: the names of `LOAD_DEREF`, `LOAD_CLOSURE` and
    `LOAD_ATTR`; `EXTENDED_ARG`s left out (a closure of over 256 names reads `out.grad`
    with one between `out` and `.grad`). On Python 3.11 read from the bytecode itself, without `dis`'s objects
    (a recording reads each closure's code as it starts: `dis` took 0.7 ms of the
    tensor lesson's 11)."""
    varname = getattr(code, "_varname_from_oparg", None)
    if not _RAW or varname is None:
        return [(i.opname, i.argval) for i in dis.get_instructions(code)
                if i.opcode != _EXTENDED_ARG]
    raw, names = code.co_code, code.co_names
    found: list[tuple[str, object]] = []
    extended = 0
    for k in range(0, len(raw), 2):
        op = raw[k]
        if op == _CACHE:
            continue
        arg = raw[k + 1] | extended
        if op == _EXTENDED_ARG:  # (part of the next one's argument, not a step of its own)
            extended = arg << 8
            continue
        extended = 0
        if op in _BY_NAME:
            found.append((_OPNAME[op], varname(arg)))
        elif op == _LOAD_ATTR:
            found.append(("LOAD_ATTR", names[arg]))
        else:
            found.append((_OPNAME[op], None))
    return found


def _cell_loads(code) -> list[tuple[object, tuple[str, object] | None]]:
    """For each `LOAD_DEREF` and `LOAD_CLOSURE` of `code`, in order: the name it loads,
    and the instruction after it as `_instructions` gives it (None at the end). On
    Python 3.11 the loads are found in the bytecode by a regular expression and only
    the instructions around them are read: a rewritten `_backward` closure has a few
    hundred instructions and a handful of loads (a loop over every instruction was most
    of what a recording's first custom op cost)."""
    varname = getattr(code, "_varname_from_oparg", None)
    if not _RAW or varname is None:
        ins = _instructions(code)
        return [(argval, ins[k + 1] if k + 1 < len(ins) else None)
                for k, (opname, argval) in enumerate(ins)
                if opname in ("LOAD_DEREF", "LOAD_CLOSURE")]
    raw = code.co_code
    n = len(raw)
    found: list[tuple[object, tuple[str, object] | None]] = []
    for match in _CELL_LOAD.finditer(raw):
        k = match.start()
        if k & 1:  # (an argument's byte, not an instruction)
            continue
        j = k + 2  # the next instruction: past caches and its own EXTENDED_ARGs
        while j < n and (raw[j] == _CACHE or raw[j] == _EXTENDED_ARG):
            j += 2
        nxt: tuple[str, object] | None = None
        if j < n:
            op = raw[j]
            if op in _BY_NAME:
                nxt = (_OPNAME[op], varname(_arg_at(raw, j)))
            elif op == _LOAD_ATTR:
                nxt = ("LOAD_ATTR", code.co_names[_arg_at(raw, j)])
            else:
                nxt = (_OPNAME[op], None)
        found.append((varname(_arg_at(raw, k)), nxt))
    return found


def _arg_at(raw: bytes, k: int) -> int:
    """The argument of the instruction at `k`, with the EXTENDED_ARGs before it."""
    arg, shift, j = raw[k + 1], 8, k - 2
    while j >= 0 and raw[j] == _EXTENDED_ARG:
        arg |= raw[j + 1] << shift
        shift, j = shift + 8, j - 2
    return arg


class CallValues:
    """The `on_backward` hook: `found` holds (event index, ((name, value), …))."""

    def __init__(self) -> None:
        self.records = None  # set once the recorder exists: its event count is the index
        self.node_id: Callable[[object], int | None] | None = None  # (the recorder's)
        self.found: list[tuple[int, tuple[tuple[str, float], ...]]] = []
        self.skip: set = set()  # the `_op`s of known ops: the recorder leaves them out
        # by the code's id (a code object hashes all its constants, every time), with
        # the code kept alive beside its plan: (code, each closure variable's name and
        # `#`, the plan), or None for a code without closure variables
        self.plans: dict[int, tuple[object, tuple[str, ...], Reads] | None] = {}

    def plan(self, fn) -> Reads | None:
        found = self._plan_of(getattr(fn, "__code__", None))
        return found[2] if found is not None else None

    def _plan_of(self, code) -> tuple[object, tuple[str, ...], Reads] | None:
        found = None
        if code is not None and code.co_freevars:  # (maybe no reads: the nodes held are)
            found = (code, tuple(name + NODE_MARK for name in code.co_freevars),
                     reads_of(code))
        if code is not None:
            self.plans[id(code)] = found
        return found

    def __call__(self, op: object, fn: Callable[[], object]) -> None:
        records = self.records
        if records is None:
            return
        if op in KNOWN_OPS or (isinstance(op, str) and op.startswith("**")):  # (`known_op`)
            self.skip.add(op)  # (a known op is a string)
            return
        code = getattr(fn, "__code__", None)
        found = self.plans.get(id(code), _UNSEEN)
        first = found is _UNSEEN
        if first:
            found = self._plan_of(code)
        if found is None:  # (a leaf's `lambda: None`)
            return
        _, marked, plan = found
        cells = fn.__closure__ or ()  # type: ignore[attr-defined]
        if first and plan:
            plan = self._numbers_only(op, code, found, cells)
            if plan is None:  # (an array engine's op the explainer works out: no reads)
                return
        values = self.nodes_held(marked, cells)
        read = 0
        for shown, cell, key in plan:
            try:
                obj = cells[cell].cell_contents
            except (IndexError, ValueError):
                continue
            if key:
                if _VIEW_OF.get(type(obj), _UNSEEN) is None:  # (`node_dict`, inline: a
                    nd = getattr(obj, "__dict__", None)  # class read through its dict)
                    if not isinstance(nd, dict):
                        nd = None
                else:
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

    def _numbers_only(self, op: object, code, found: tuple[object, tuple[str, ...], Reads],
                      cells: tuple) -> Reads | None:
        """`found`'s plan as the code's first call finds it, kept as its plan: without
        the node fields that hold an array engine's arrays (`ArraySnapshots.unread`);
        None (nothing read, at this call or later) for an op whose step the array
        engine's explainer works out from its rule (`array_values.RULED_OPS`). Both
        the array engine's decisions."""
        arrays = self.records.arrays
        plan = found[2]
        kept = tuple(r for r in plan if not (r[2] and arrays.unread(_field(cells, r))))
        if len(kept) != len(plan) and op in RULED_OPS:
            self.plans[id(code)] = None
            return None
        if len(kept) != len(plan):
            self.plans[id(code)] = (code, found[1], kept)
        return kept

    def nodes_held(self, marked: tuple[str, ...], cells: tuple) -> list[tuple[str, int]]:
        """(`name#`, node id) for each closure variable that holds a recorded node
        (`marked`: each closure variable's name and `#`)."""
        node_id = self.node_id
        held: list[tuple[str, int]] = []
        if node_id is None:
            return held
        for name, cell in zip(marked, cells):
            try:
                nid = node_id(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
            if nid is not None:
                held.append((name, nid))
                if len(held) >= MAX_VALUES:
                    break
        return held


_UNSEEN = object()


def _field(cells: tuple, read: tuple[str, int, str]) -> object:
    """The field `read` names, of the node its closure cell holds (None if none)."""
    shown, cell, key = read
    try:
        obj = cells[cell].cell_contents
    except (IndexError, ValueError):
        return None
    nd = node_dict(obj)
    return nd.get(key) if nd is not None else getattr(obj, shown.partition(".")[2], None)
