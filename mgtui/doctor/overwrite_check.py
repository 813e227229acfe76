"""The `=`-for-`+=` check: a `before_backward` hook of the recorder that replays each
`_backward` closure to see whether it adds to its inputs' grads or assigns them. On
arrays (a tensor engine) it compares element by element, and also notes a contribution
whose shape is not its input's (`ShapeHit`); `ArrayWatch` notes which nodes hold arrays
as they are made."""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

from mgtui.doctor.arrays import ArrayWatch, any_array, grad_shape
from mgtui.recording.nodes import node_fields, node_id


class Overwrite(NamedTuple):
    """A `_backward` call whose closure assigned an input's grad instead of adding to it."""

    call: int  # which recorded `_backward` call, counted from 0
    node: int  # the node whose `_backward` it was
    target: int  # the input whose grad it assigned
    from_zero: float  # the grad it left when replayed from 0
    start: float  # the nonzero grad it was replayed from next
    from_start: float  # the grad it left then
    element: int = -1  # on an array grad: the flat index of the element compared


class ShapeHit(NamedTuple):
    """A `_backward` call that gave an input a grad of another shape than its data."""

    call: int
    node: int
    target: int
    grad_shape: tuple
    data_shape: tuple




REPLAYS_PER_CLOSURE = 64  # calls of one closure's code replayed, from its first


class OverwriteCheck:
    """Replays each `_backward` closure before its real call: once with its inputs' grads
    at 0 and once at a known nonzero value. An accumulating closure adds the same amount
    both times; one that assigns leaves the same value both times. Every grad and data
    the replay could have changed is put back afterwards, and the recorder forgets the
    replays' records.

    `=` or `+=` is a property of a closure's code, so only the first
    `REPLAYS_PER_CLOSURE` calls of each code are replayed: in a training run the same
    few closures run hundreds of thousands of times, and replaying each call was a
    quarter of the doctor's time. (A closure that assigns only in a branch first taken later is left to
    the `=` its source line shows: `mgtui.session.assigns`.)"""

    def __init__(self) -> None:
        self.calls = 0
        self.busy = False
        self.hits: list[Overwrite] = []
        self.replayed: dict[object, int] = {}  # closure code -> its calls replayed
        self.watch = ArrayWatch()  # its `on_create` is the recording's, for arrays
        self.shape_hits: list[ShapeHit] = []

    def __call__(self, d: dict, fn: Callable[[], object]) -> None:
        if self.busy:  # a `_backward` called from a replayed one
            return
        index = self.calls
        self.calls += 1
        code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
        n = self.replayed.get(code, 0)
        if n >= REPLAYS_PER_CLOSURE:
            return
        self.replayed[code] = n + 1
        inputs = input_dicts(d)
        if not inputs:
            return
        saved = reachable(d, inputs, fn)
        self.busy = True
        try:
            from_zero, starts, from_start = replay(inputs, fn, saved)
        except Exception:  # noqa: BLE001 - the real call will raise it again, recorded
            return
        finally:
            restore(saved)
            self.busy = False
        for cd, g0, s, gs in zip(inputs, from_zero, starts, from_start):
            if any_array(g0, gs, cd.get("data")):
                self.array_hits(index, d, cd, g0, s, gs)
            elif assigned(g0, s, gs):
                self.hits.append(Overwrite(index, node_id(d), node_id(cd),
                                           float(g0), s, float(gs)))


    def array_hits(self, index: int, d: dict, cd: dict, g0, start, gs) -> None:
        """The check's findings on one input's array grad, element by element."""
        import numpy as np

        node, target = node_id(d), node_id(cd)
        data_shape = np.shape(cd.get("data"))
        for nid, nd in ((node, d), (target, cd)):  # (a recording with no `watch`)
            self.watch.note(nid, nd.get("data"))
        if np.shape(g0) != data_shape:
            self.shape_hits.append(ShapeHit(index, node, target, np.shape(g0), data_shape))
            return
        k = assigned_element(g0, start, gs)
        if k is not None:
            self.hits.append(Overwrite(index, node, target, float(np.asarray(g0).flat[k]),
                                       float(np.asarray(start).flat[k]),
                                       float(np.asarray(gs).flat[k]), k))


def input_dicts(d: dict) -> list[dict]:
    """The node dicts of a node's inputs (see `node_fields`), each once."""
    inputs = []
    seen = set()
    for c in d.get("_prev") or ():
        cd = node_fields(c)
        if cd is not None and id(c) not in seen:
            seen.add(id(c))
            inputs.append(cd)
    return inputs


def replay(inputs: list[dict], fn: Callable[[], object], saved: list
           ) -> tuple[list, list[float], list]:
    """Run the closure from zeroed input grads, then from known nonzero ones: the grads
    it left each time, and the starting values of the second run."""
    shapes = [grad_shape(cd.get("grad"), cd.get("data")) for cd in inputs]
    for cd, shape in zip(inputs, shapes):
        cd["grad"] = 0.0 if shape is None else zeros(shape)
    fn()
    from_zero = [cd.get("grad") for cd in inputs]
    restore(saved)
    starts = []
    for cd, g, shape in zip(inputs, from_zero, shapes):
        start = 3.0 + 2.0 * abs(g) if is_finite(g) else 3.0
        if shape is not None:
            start = zeros(shape) + 3.0 + 2.0 * largest(g)
        starts.append(start)
        cd["grad"] = start
    fn()
    return from_zero, starts, [cd.get("grad") for cd in inputs]


def assigned(g0: object, start: float, gs: object) -> bool:
    """Did a closure that left `g0` from 0 leave `gs` (not `start + g0`) from `start`?"""
    if not (is_finite(g0) and is_finite(gs)):
        return False
    g0, gs = float(g0), float(gs)  # type: ignore[arg-type]
    tol = 1e-9 * (abs(start) + abs(g0) + abs(gs)) + 1e-12
    return abs(gs - (start + g0)) > tol and abs(gs - g0) <= tol


def zeros(shape: tuple):
    import numpy as np

    return np.zeros(shape, dtype=np.float64)


def largest(g: object) -> float:
    """The largest finite magnitude in `g` (0 if none)."""
    import numpy as np

    a = np.abs(np.asarray(g, dtype=np.float64))
    a = a[np.isfinite(a)]
    return float(a.max()) if a.size else 0.0


def assigned_element(g0: object, start: object, gs: object) -> int | None:
    """`assigned` element by element, on arrays: the flat index of the first element
    that a closure left at `g0` (not `start + g0`) when replayed from `start`."""
    import numpy as np

    try:
        g0, start, gs = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                               for x in (g0, start, gs)))
    except ValueError:
        return None
    tol = 1e-9 * (np.abs(start) + np.abs(g0) + np.abs(gs)) + 1e-12
    with np.errstate(invalid="ignore"):
        hit = (np.isfinite(g0) & np.isfinite(gs) & (np.abs(gs - (start + g0)) > tol)
               & (np.abs(gs - g0) <= tol))
    found = np.flatnonzero(hit)
    return int(found[0]) if found.size else None


def reachable(d: dict, inputs: list[dict], fn) -> list[tuple[dict, object, object]]:
    """The grad and data of every node the closure can reach: the node, its inputs,
    the Values in its closure cells, and the global Values it names. (Keyed by node: a
    `__slots__` node's dict is a view, made anew each time.)"""
    dicts = {node_key(d): d}
    for cd in inputs:
        dicts[node_key(cd)] = cd
    fn = getattr(fn, "__wrapped__", fn)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            obj = cell.cell_contents
        except ValueError:
            continue
        od = node_fields(obj)
        if od is not None and "grad" in od:
            dicts[node_key(od)] = od
    code = getattr(fn, "__code__", None)
    glob = getattr(fn, "__globals__", None)
    if code is not None and glob is not None:
        for name in code.co_names:
            od = node_fields(glob.get(name))
            if od is not None and "grad" in od:
                dicts[node_key(od)] = od
    missing = _MISSING
    return [(od, od.get("grad", missing), od.get("data", missing)) for od in dicts.values()]


_MISSING = object()


def node_key(od) -> int:
    """One key per node, for its instance dict or a view of it (a `SlotsNode`, a
    `MappedNode`: made anew each time) alike."""
    return id(od) if type(od) is dict else od.key


def restore(saved: list[tuple[dict, object, object]]) -> None:
    for od, grad, data in saved:
        for key, value in (("grad", grad), ("data", data)):
            if value is _MISSING:
                od.pop(key, None)
            else:
                od[key] = value


def is_finite(x: object) -> bool:
    try:
        return math.isfinite(x)  # type: ignore[arg-type]
    except TypeError:
        return False


class ArrayFacts(NamedTuple):
    """What the check's recording saw of arrays, for the checks: which nodes hold them
    (id -> shape), the check's shape hits, and the dtypes other than float64."""

    shapes: dict
    shape_hits: tuple = ()
    dtypes: tuple = ()
    constants: frozenset = frozenset()  # nodes with no gradient: integer data, no requires_grad

    @classmethod
    def of(cls, check: OverwriteCheck) -> ArrayFacts:
        return cls(dict(check.watch.shapes), tuple(check.shape_hits),
                   tuple(sorted(check.watch.dtypes)), frozenset(check.watch.constants))

    def to_json(self) -> dict:
        return {"shapes": {str(k): list(v) for k, v in self.shapes.items()},
                "shape_hits": [[c, n, t, list(g), list(s)] for c, n, t, g, s in self.shape_hits],
                "dtypes": list(self.dtypes), "constants": sorted(self.constants)}

    @classmethod
    def from_json(cls, obj: object) -> ArrayFacts:
        if not isinstance(obj, dict):
            return NO_ARRAYS
        return cls({int(k): tuple(v) for k, v in obj.get("shapes", {}).items()},
                   tuple(ShapeHit(int(c), int(n), int(t), tuple(g), tuple(s))
                         for c, n, t, g, s in obj.get("shape_hits", ())),
                   tuple(str(x) for x in obj.get("dtypes", ())),
                   frozenset(int(n) for n in obj.get("constants", ())))


NO_ARRAYS = ArrayFacts({})
