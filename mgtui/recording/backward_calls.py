"""`_backward` calls, as the hook probes and the inlined one's slow path record them
(`BackwardCalls`), and where each `backward()` was called from (`Callers`). One
`BackwardCalls` serves every probe of a run: the recording's context hands it out
(`mgtui.recording.context.RecordingContext.calls`)."""

from __future__ import annotations

import os
import sys
from typing import Callable, Protocol

from mgtui.recording.inplace_grads import note_inplace
from mgtui.recording.probes import Hooks, LineFinder
from mgtui.recording.store import BACKWARD, CREATE, ID, Records


class CallContext(Protocol):
    """What recording a `_backward` call reads of the recording
    (`mgtui.recording.context.RecordingContext` is one)."""

    records: Records
    hooks: Hooks
    lines: LineFinder
    stop_reason: str | None  # set once the run is to stop: calls are then made unrecorded


# -- where `backward()` was called from ---------------------------------------------------------

MAX_CALLER_FRAMES = 16
MGTUI_FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


class Callers:
    """`note(frame)`, as a `_backward` call is about to be recorded from `frame`: if that
    is not the frame the last call came from, the chain of frames from it out to the
    scenario's (innermost first: file, line, function) goes into `records.callers` at
    the call's event, unless it is the chain noted last. That is one entry per
    `backward()` run (per call made by hand), from which the doctor finds the line that
    builds the order, in whatever file it is (`mgtui.doctor.context`). The last frame is
    held, so no new frame can take its address."""

    def __init__(self, records: Records, scenario_path: str) -> None:
        self.records = records
        self.scenario_path = scenario_path
        self.last: list = [None]  # the frame the last call came from (a hot path reads it)
        self.last_chain: tuple = ()

    def note(self, frame) -> None:
        if frame is self.last[0]:
            return
        self.last[0] = frame
        chain = []
        f, path = frame, self.scenario_path
        while f is not None and len(chain) < MAX_CALLER_FRAMES:
            code = f.f_code
            if not code.co_filename.startswith(MGTUI_FILES):  # (not the recorder's own)
                chain.append((code.co_filename, f.f_lineno, code.co_name))
            if code.co_filename == path:
                break
            f = f.f_back
        found = tuple(chain)
        if found != self.last_chain:
            self.last_chain = found
            self.records.callers.append((self.records.event_count(), found))


# -- `_backward` calls, as the hook probes and the inlined one's slow path record them -------


class BackwardCalls:
    """`record_call(nid, d, fn, frame)` records the call of `fn`, the `_backward` of node
    `nid` (its dict, or `SlotsNode`, `d`), made from `frame`, and makes it: runs
    `before_backward` first (its records taken back), and `on_backward`, then the
    call (noting where it came from: `Callers`). `run_backward(d, fn)` is the same from
    the node's dict, as the hooks bind it.
    """

    def __init__(self, context: CallContext, scenario_line) -> None:
        self.callers = Callers(context.records, context.lines.scenario_path)
        self.run_backward, self.record_call = self._make(context, scenario_line, self.callers)

    @staticmethod
    def _make(context: CallContext, scenario_line, callers: Callers):
        records: Records = context.records
        before, watch = context.hooks.before_backward, context.hooks.on_backward
        skip = watch.skip if watch is not None else ()
        add_event, writes, stack = records.add_event, records.writes, records.stack
        made_inside, closure_index = records.made_inside, records.closure_index
        arrays = records.arrays
        getframe = sys._getframe
        note_caller, last_caller = callers.note, callers.last

        def run_backward(d: dict, fn: Callable[[], object]):
            nid = d.get(ID)
            if nid is None:
                return fn()
            return record_call(nid, d, fn, getframe(1))

        def record_call(nid: int, d, fn: Callable[[], object], frame):
            if context.stop_reason:
                return fn()
            if before is not None:  # whatever the hook records is taken back
                records.replay(before, d, fn)
            if watch is not None and not records.replays & 1:  # (not a call a replay made)
                op = d.get("_op") if d is not None else None
                try:
                    watched = op not in skip
                except TypeError:  # an `_op` that cannot be hashed
                    watched = True
                if watched:
                    watch(op, fn)
            ci = closure_index(getattr(fn, "__code__", None))
            if frame is not last_caller[0]:
                note_caller(frame)
            add_event((BACKWARD, nid, 0.0, 0.0, scenario_line(frame), ci, len(writes)))
            stack.append(nid)
            try:
                return fn()
            finally:
                if arrays.last:  # writes into parts of an array grad (`grad[i] += ...`)
                    note_inplace(records, fn)
                stack.pop()
                if made_inside and not stack:
                    for made in made_inside:
                        add_event((CREATE, made, 0.0, 0.0, 0, -1, len(writes)))
                    made_inside.clear()

        return run_backward, record_call
