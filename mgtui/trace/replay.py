"""Moving a state (every node's data and grad, as per-node arrays) through a trace's
events: one event forward or back (`apply`, `undo`, what a `Timeline` steps with), or
many in bulk (`between`, `state_at`, the final state). What `Trace.replay` hands out."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from functools import cached_property
from typing import Iterator

from mgtui.trace.records import _CREATE, _DATA, _GRAD

REPLAY_BLOCK = 1 << 16  # writes merged in a dict before they go into the arrays
SPARSE_FINAL = 1 << 18  # nodes from which the final data is a `Layer` over `node_data`

_MISSING = object()


class Layer:
    """Every node's data or grad, by id: `base` (a trace's array, shared, never written;
    None for all zeros) with `changes` ({id: value}) over it. It reads and writes as an
    array does. What a `Timeline` holds while its changes are few, and a big trace's
    final data where few nodes' data was written (a training loop's parameters)."""

    __slots__ = ("base", "changes", "_len")

    def __init__(self, base: array | None, n: int, changes: dict | None = None) -> None:
        self.base, self.changes, self._len = base, {} if changes is None else changes, n

    @classmethod
    def over(cls, values: array | Layer, n: int) -> Layer:
        """A layer of no changes over `values` (over the same base, with a copy of its
        changes, if it is a layer itself)."""
        if isinstance(values, Layer):
            return cls(values.base, n, dict(values.changes))
        return cls(values, n)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, nid: int) -> float:
        if nid < 0:
            nid += self._len
        value = self.changes.get(nid, _MISSING)
        if value is not _MISSING:
            return value  # type: ignore[return-value]
        if self.base is not None:
            return self.base[nid]
        if not 0 <= nid < self._len:
            raise IndexError(nid)
        return 0.0

    def __setitem__(self, nid: int, value: float) -> None:
        self.changes[nid] = value

    def __iter__(self) -> Iterator[float]:
        return iter(self.array())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Layer):
            other = other.array()
        return self.array() == other if isinstance(other, array) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def array(self) -> array:
        """The values as an array of their own ('d')."""
        out = array("d", self.base) if self.base is not None else array("d", bytes(8 * self._len))
        for nid, value in self.changes.items():
            out[nid] = value
        return out


class Replay:
    """A trace's events applied to a state and taken back out of it (`trace.replay`).
    It holds the trace's event and write columns (not the trace), and keeps what it
    works out once: the final state, whether every `_backward` write is a grad."""

    def __init__(self, node_data: array, ev_kind: array, ev_node: array,
                 ev_write_start: array, lone: tuple[array, array, array],
                 writes: tuple[array, array, array, array]) -> None:
        self._node_data, self._ev_kind, self._ev_node = node_data, ev_kind, ev_node
        self._ev_write_start = ev_write_start
        self._lone_at, self._lone_before, self._lone_after = lone
        self._wr_node, self._wr_field, self._wr_before, self._wr_after = writes

    @property
    def final_data(self) -> array:
        """Every node's data at the end of the run ('d', by id)."""
        return self._final[0]

    @property
    def final_grad(self) -> array:
        """Every node's grad at the end of the run ('d', by id)."""
        return self._final[1]

    @cached_property
    def grad_writes_only(self) -> bool:
        """No `_backward` wrote a `data` (the usual case: its writes are all grads)."""
        return self._wr_field.tobytes().find(b"\x01") < 0

    @cached_property
    def _final(self) -> tuple[array | Layer, array]:
        """The final state. In a big trace where few nodes' data was written (a training
        loop updates its parameters alone), the data is those writes over `node_data`
        (a `Layer`), not a copy of it: 8 bytes a node less."""
        n, events = len(self._node_data), len(self._ev_kind)
        if n < SPARSE_FINAL or self._data_writes() > n >> 3:  # (a dict at most the array's size)
            return self.state_at(events)
        changes: dict[int, float] = {}
        grad = array("d", bytes(8 * n))
        self.between(0, events, changes, grad)  # type: ignore[arg-type]
        return Layer(self._node_data, n, changes), grad

    def _data_writes(self) -> int:
        """How many writes of data there are (lone ones and inside `_backward` calls)."""
        lone = self._ev_kind.tobytes().count(bytes((_DATA,)))
        return lone + self._wr_field.tobytes().count(1)

    def _lone(self, index: int) -> int:
        """Where the lone write of event `index` is among the lone writes."""
        return bisect_left(self._lone_at, index)

    def apply(self, index: int, data: array, grad: array) -> int:
        """Write event `index`'s effects into `data` and `grad` (per-node arrays).
        Returns how many nodes it made (0 or 1)."""
        kind = self._ev_kind[index]
        if kind == _GRAD:
            grad[self._ev_node[index]] = self._lone_after[self._lone(index)]
        elif kind == _DATA:
            data[self._ev_node[index]] = self._lone_after[self._lone(index)]
        node, fld, after = self._wr_node, self._wr_field, self._wr_after
        for w in range(self._ev_write_start[index], self._ev_write_start[index + 1]):
            (grad if fld[w] == 0 else data)[node[w]] = after[w]
        return 1 if kind == _CREATE else 0

    def undo(self, index: int, data: array, grad: array) -> int:
        """Take event `index`'s effects back out of `data` and `grad`.
        Returns how many nodes it had made (0 or 1)."""
        kind = self._ev_kind[index]
        node, fld, before = self._wr_node, self._wr_field, self._wr_before
        for w in range(self._ev_write_start[index + 1] - 1, self._ev_write_start[index] - 1, -1):
            (grad if fld[w] == 0 else data)[node[w]] = before[w]
        if kind == _GRAD:
            grad[self._ev_node[index]] = self._lone_before[self._lone(index)]
        elif kind == _DATA:
            data[self._ev_node[index]] = self._lone_before[self._lone(index)]
        return 1 if kind == _CREATE else 0

    def state_at(self, position: int) -> tuple[array, array]:
        """Every node's data and grad after the first `position` events (a `Timeline`
        at `position`), replayed in bulk: much faster than stepping there."""
        data = array("d", self._node_data)
        grad = array("d", bytes(8 * len(self._node_data)))
        self.between(0, position, data, grad)
        return data, grad

    def between(self, start: int, end: int, data: array, grad: array) -> None:
        """Write the effects of events [start, end) into `data` and `grad`, as `apply`
        would one by one, in bulk."""
        n = len(self._ev_kind)
        start, end = max(0, min(start, n)), max(0, min(end, n))
        if start < end:
            replay_into(self._ev_kind, self._ev_node, self._lone_after,
                        bisect_left(self._lone_at, start), self._ev_write_start,
                        self._wr_node, self._wr_field, self._wr_after, self.grad_writes_only,
                        start, end, data, grad)


def replay_into(ev_kind: array, ev_node: array, lone_after: array, lone: int,
                write_start: array, wr_node: array, wr_field: array, wr_after: array,
                only_grads: bool, start: int, end: int, data: array, grad: array) -> None:
    """Write the effects of events [start, end) into `data` and `grad` (per-node arrays),
    each write replayed once, in order. Writes inside `_backward` calls are merged a run
    at a time with `dict.update`, and only the few writes outside them (the lone writes,
    whose values are `lone_after` from `lone` on) are visited one by one. The merged
    values go into the arrays every `REPLAY_BLOCK` writes, so that the dicts stay small
    (a 3M-node replay's would hold a few hundred MB)."""
    grads: dict[int, float] = {}
    datas: dict[int, float] = {}
    w = write_start[start]

    def apply(stop: int) -> None:
        for a in range(w, stop, REPLAY_BLOCK):
            b = min(a + REPLAY_BLOCK, stop)
            if only_grads:
                grads.update(zip(wr_node[a:b], wr_after[a:b]))
            else:
                for k in range(a, b):
                    (grads if wr_field[k] == 0 else datas)[wr_node[k]] = wr_after[k]
            if len(grads) + len(datas) >= REPLAY_BLOCK:
                flush()

    def flush() -> None:
        for nid, value in grads.items():
            grad[nid] = value
        for nid, value in datas.items():
            data[nid] = value
        grads.clear()
        datas.clear()

    kinds = ev_kind.tobytes()[start:end]
    for match in re.finditer(bytes((ord("["), _GRAD, _DATA, ord("]"))), kinds):
        i = start + match.start()
        stop = write_start[i]
        apply(stop)
        w = stop
        (grads if ev_kind[i] == _GRAD else datas)[ev_node[i]] = lone_after[lone]
        lone += 1
    apply(write_start[end])
    flush()
