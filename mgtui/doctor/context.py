"""What the checks of one trace share: the probe's hits, the steps and passes a finding
already explains, and how a finding names its node and points at its source line."""

from __future__ import annotations

import linecache
import os
import re
from functools import cached_property
from pathlib import Path
from typing import Iterator, Sequence

from mgtui.doctor.findings import Finding
from mgtui.doctor.late_binding import late_text
from mgtui.doctor.order_lines import Callers, built_in_frames, chain_at, order_line
from mgtui.doctor.order_lines import walked_list  # noqa: F401 - (it lived here)
from mgtui.doctor.overwrite_check import NO_ARRAYS, ArrayFacts, Overwrite
from mgtui.safe import inert_line
from mgtui.trace import EventKind, Field, Pass, Trace, Write

Where = tuple[str, int | None, str]  # a file, a line in it, and that line's text
ASSIGNS_GRAD = re.compile(r"\.grad\s*=(?!=)")  # `x.grad = …`, not `+=` or `==`


class CheckContext:
    """Shared by the checks of one trace, in the order `diagnose()` runs them."""

    def __init__(self, trace: Trace, overwrites: Sequence[Overwrite] = (),
                 callers: Callers = (), arrays: ArrayFacts = NO_ARRAYS) -> None:
        self.trace = trace
        self.arrays = arrays  # what the probe saw of array values (a tensor engine)
        # the nodes whose data is an array (as the probe saw them, or the trace holds them)
        self.array_nodes = set(arrays.shapes) | set(trace.arrays.nodes)
        self.notes: list[str] = []  # what the checks could not look at, said in the report
        self.overwrites = overwrites  # what the `=`-for-`+=` probe saw while recording
        self.callers = callers  # where each `backward()` was called from (`order_where`)
        self.explained: set[int] = set()  # `_backward` events a finding already explains
        self.explained_passes: set[int] = set()  # backward passes a finding explains
        self.seedless: set[int] = set()  # backward passes whose root grad is 0
        self.repeated: set[int] = set()  # backward passes with a `_backward` run twice
        self._source_lines = trace.source.splitlines()

    # -- the passes and calls the checks walk ----------------------------------------------
    @cached_property
    def backward_passes(self) -> list[Pass]:
        """The backward passes with at least one `_backward` call."""
        t = self.trace
        return [p for p in t.passes if p.kind == "backward" and t.first_backward(p) is not None]

    @cached_property
    def _backward_numbers(self) -> dict[int, int]:
        passes = [p.index for p in self.trace.passes if p.kind == "backward"]
        return {index: n for n, index in enumerate(passes, 1)}

    def backward_number(self, p: Pass) -> int:
        """Pass `p`'s number among the backward passes, from 1 (as the report counts)."""
        return self._backward_numbers[p.index]

    def inputs(self, nid: int) -> tuple[int, ...]:
        """Node `nid`'s inputs, each once, in order: `x * x` with `_prev` kept as a tuple
        (or a list) has the children (x, x) but one input, and every check counts a
        `_backward`'s contributions per distinct input."""
        return distinct(self.trace.children(nid))

    def events_with_writes(self, p: Pass) -> Iterator[tuple[int, EventKind, tuple[Write, ...]]]:
        """Each event of pass `p`, in order, with its kind and writes (the pass's writes
        are fetched in one go, which is much cheaper than call by call)."""
        t = self.trace
        writes = t.writes_in(p)
        k = 0
        for i in p.steps:
            n = t.write_count_of(i)
            yield i, t.kind(i), writes[k:k + n]
            k += n

    def grad_before(self, nid: int, index: int) -> float:
        """Node `nid`'s grad just before event `index`, as the trace replays it."""
        t = self.trace
        for i in range(index - 1, (t.index.created_at(nid) or 0) - 1, -1):
            if nid not in t.grad_targets(i):
                continue
            if t.kind(i) is EventKind.GRAD:
                return t.change(i)[1]
            return next(w.after for w in reversed(t.writes(i))
                        if w.node == nid and w.field is Field.GRAD)
        return 0.0

    # -- how a finding names things ----------------------------------------------------------
    def node_text(self, nid: int) -> str:
        label = self.trace.label(nid)
        return label if label == f"#{nid}" else f"{label} (#{nid})"

    def op_text(self, nid: int) -> str:
        """`o (#9, op tanh)`: a node with its id and op."""
        label, op = self.trace.label(nid), self.trace.op(nid) or "?"
        return f"{label} (op {op})" if label == f"#{nid}" else f"{label} (#{nid}, op {op})"

    def labels(self, nids: Sequence[int]) -> str:
        return ", ".join(self.trace.label(c) for c in nids)

    def scenario_where(self, line: int | None) -> Where:
        lines = self._source_lines
        text = lines[line - 1].strip() if line and line <= len(lines) else ""
        return self.trace.scenario, line or None, text

    def order_where(self, event: int) -> Where:
        """Where the topological order walked by `_backward` event `event`'s pass is built:
        the line that appends to it (`topo.append(v)`), found from the frames the call was
        made from, in whatever file (`mgtui.doctor.order_lines`); for a trace without
        them, in the scenario's source; else the line of the call, as recorded."""
        found = built_in_frames(chain_at(self.callers, event), self._source_of)
        if found is not None:
            return self.where_in(*found)
        call = self.trace.event_line(event)
        built = order_line(self.trace.source, call) if call else None
        return self.scenario_where(built or call)

    def _source_of(self, filename: str) -> str | None:
        if self._is_scenario(filename):
            return self.trace.source
        lines = linecache.getlines(filename)
        return "".join(lines) if lines else None

    def _is_scenario(self, filename: str) -> bool:
        return os.path.abspath(filename) == str(Path(self.trace.scenario).resolve())

    def where_in(self, filename: str, line: int) -> Where:
        """Line `line` of `filename`, the scenario's or another file's."""
        if self._is_scenario(filename):
            return self.scenario_where(line)
        return filename, line, inert_line(linecache.getline(filename, line).strip())

    def built_text(self, where: Where, call: int | None) -> str:
        """`; the order is built at line 12` (or `at value.py:12` in another file) for a
        finding at `where`, unless that is the call's own line."""
        filename, line, _ = where
        if not line:
            return ""
        if not self._is_scenario(filename):
            return f"; the order is built at {os.path.basename(filename)}:{line}"
        return f"; the order is built at line {line}" if line != call else ""

    def closure_where(self, event: int, line: int | None) -> Where:
        """`line` of the `_backward` closure of event `event` (else the call's line)."""
        t = self.trace
        closure = t.closure_of(event)
        if closure is None or not line:
            return self.scenario_where(t.event_line(event))
        return self.where_in(closure.filename, line)

    def late_text(self, event: int) -> str:
        """A sentence for a finding at `_backward` event `event` whose closure was made in
        a loop and reads a variable the loop rebinds (`mgtui.doctor.late_binding`)."""
        closure = self.trace.closure_of(event)
        if closure is None or closure.default:
            return ""
        return late_text(closure.filename, closure.first_line)

    def grad_write_line(self, event: int, target: int) -> int | None:
        """The line of the first write of event `event` to `target`'s grad."""
        return next((w.line for w in self.trace.writes(event)
                     if w.node == target and w.field is Field.GRAD), None)

    def assigning_write_line(self, event: int, target: int) -> int | None:
        """The line of event `event`'s write that assigns `target`'s grad (`x.grad = …`,
        by the closure's source), else of its first write to it: when a `_backward`
        writes one input twice (`self.grad += …; other.grad = …` for `x + x`), the
        `=` is the line at fault, not the first write."""
        lines = [w.line for w in self.trace.writes(event)
                 if w.node == target and w.field is Field.GRAD]
        closure = self.trace.closure_of(event)
        if closure is not None and len(set(lines)) > 1:
            for line in lines:
                k = (line or 0) - closure.first_line
                if 0 <= k < len(closure.lines) and ASSIGNS_GRAD.search(closure.lines[k]):
                    return line
        return lines[0] if lines else None

    def finding(self, kind: str, nid: int, step: int, where: Where, message: str,
                numerical: float | None = None, recorded: float | None = None,
                input: int | None = None, local: float | None = None,
                element: tuple[int, ...] | None = None) -> Finding:
        file, line, text = where
        t = self.trace
        return Finding(kind, nid, t.label(nid), t.op(nid), step, file, line, text, message,
                       numerical, recorded, input, local, element=element)


def distinct(ids: tuple[int, ...]) -> tuple[int, ...]:
    """`ids` with repeats left out, in order (a pair of two different ids, the common
    case, is returned as it is)."""
    if len(ids) < 2 or (len(ids) == 2 and ids[0] != ids[1]):
        return ids
    return tuple(dict.fromkeys(ids))
