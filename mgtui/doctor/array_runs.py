"""The doctor's re-runs of a tensor engine: live array values read as the run goes (the
trace keeps no array's values for the doctor), as a runner job (`array_rerun`) or a
function's re-run in this process (`mgtui.doctor.reruns.CallReruns.start_jobs`).

One `ArrayCapture` is both hooks of a run:
- `on_create` nudges the data of the nodes asked for as they are made (a whole array
  along its `pattern`, one element alone, or a range of its flat elements along the
  pattern) and keeps hold of the nodes whose values
  are wanted later;
- `before_backward` counts the `_backward` calls; before call `k` it copies the data
  (and, if asked, the grads) of the nodes `snaps[k]` names, and for the calls in
  `capture` it replays the closure from zeroed input grads to read what it adds to each
  input, with the node's grad as the call found it; it ends the run before call
  `stop_after + 1`;
- `origin` names a call and an input: the closure is replayed under a line tracer to
  find the line of the scenario's code where the value added to that input's grad was
  made (`unbroadcast`'s `grad.mean(…)`, not the `b.grad += unbroadcast(…)` calling it).

What it reports (`result`) is JSON: arrays through `mgtui.doctor.arrays.encode`.
"""

from __future__ import annotations

from mgtui.doctor.arrays import decode, encode, is_array, nudged, pattern, scale_of
from mgtui.doctor.overwrite_check import input_dicts, reachable, restore, zeros
from mgtui.recording.probes import Hooks, StopRecording
from mgtui.recording.store import ID


class ArrayCapture:
    """The hooks of one array re-run (see the module's docstring)."""

    def __init__(self, nudge: dict[int, float], element: dict[int, int | tuple[int, int]],
                 stop_after: int | None, snaps: dict[int, list[int]],
                 capture: list[tuple[int, int]], grads: bool = False,
                 origin: tuple | None = None) -> None:
        self.nudge = nudge
        self.element = element
        self.stop_after = stop_after
        self.snaps = snaps
        self.keep = {n for nids in snaps.values() for n in nids}
        self.capture = capture
        self.grads = grads
        self.origin_call = origin
        self.dicts: dict[int, object] = {}
        self.scales: dict[int, float] = {}
        self.snapshots: dict[int, dict] = {}
        self.calls: list = []
        self.origin: list | None = None
        self.count = 0
        self.busy = False  # replaying a closure: a `_backward` it calls is not counted

    def on_create(self, nid: int, d) -> None:
        amount = self.nudge.get(nid)
        if amount is not None:
            data = d["data"]
            element = self.element.get(nid)
            if type(data) is float or not is_array(data):  # a number among arrays
                scale = max(1.0, abs(data)) if element is not None else scale_of(data)
                if element is None:
                    self.scales[nid] = scale
                d["data"] = data + amount * scale * (
                    1.0 if element is not None else float(pattern(nid, ())))
            else:
                if element is None:
                    self.scales[nid] = scale_of(data)
                d["data"] = nudged(data, nid, amount, element)
        if nid in self.keep:
            self.dicts[nid] = d

    def before_backward(self, d, fn) -> None:
        if self.busy:
            return
        k = self.count
        self.count += 1
        nids = self.snaps.get(k)
        if nids is not None:
            values = ((n, self.values(n)) for n in nids if n in self.dicts)
            self.snapshots[k] = {n: v for n, v in values if v is not None}
        self.busy = True
        try:
            if any(lo <= k < hi for lo, hi in self.capture):
                self.capture_call(k, d, fn)
            if self.origin_call is not None and self.origin_call[0] == k:
                self.origin = origin_line(d, fn, *self.origin_call[1:])
        finally:
            self.busy = False
        if self.stop_after is not None and self.count > self.stop_after:
            raise StopRecording("the doctor has what it needs")

    def values(self, nid: int) -> dict | None:
        d = self.dicts[nid]
        if too_big(d.get("data")):  # type: ignore[attr-defined]
            return None
        out = {"d": encode(d.get("data"))}  # type: ignore[attr-defined]
        if self.grads:
            out["g"] = encode(d.get("grad"))  # type: ignore[attr-defined]
        return out

    def capture_call(self, k: int, d, fn) -> None:
        """Call `k`: its node, the node's grad, and what it adds to each input's grad."""
        if too_big(d.get("grad")):
            return
        contributions = from_zero(d, fn)
        if contributions is None or any(too_big(g) for _, g, _ in contributions):
            return
        try:
            row = [k, d.get(ID, -1), encode(d.get("grad")),
                   [[c, encode(g)] for c, g, _ in contributions]]
        except (TypeError, ValueError):  # a grad that is not a number or an array
            return
        self.calls.append(row)

    def result(self) -> dict:
        return {"scales": {str(k): v for k, v in self.scales.items()},
                "snaps": {str(k): {str(n): v for n, v in snap.items()}
                          for k, snap in self.snapshots.items()},
                "calls": self.calls, "origin": self.origin}


MAX_ELEMENTS = 1 << 20  # an array bigger than this is not copied out: its calls go unchecked


def too_big(x: object) -> bool:
    return is_array(x) and x.size > MAX_ELEMENTS  # type: ignore[attr-defined]


def from_zero(d, fn) -> list[tuple[int, object, object]] | None:
    """Replay `fn` from zeroed input grads: (input id, what it left in the input's grad,
    the input's dict), every grad and data put back after; None if it raised."""
    inputs = input_dicts(d)
    saved = reachable(d, inputs, fn)
    try:
        for cd in inputs:
            grad, data = cd.get("grad"), cd.get("data")
            shape = (grad if is_array(grad) else data).shape if (
                is_array(grad) or is_array(data)) else None
            cd["grad"] = 0.0 if shape is None else zeros(shape)
        fn()
        return [(cd.get(ID, -1), cd.get("grad"), cd) for cd in inputs]
    except Exception:  # noqa: BLE001 - the real call raises it again, recorded
        return None
    finally:
        restore(saved)


def origin_line(d, fn, target: int, measured: dict | None = None) -> list | None:
    """[file, line, culprit, suspects] of the scenario's code (not numpy's, nor the standard
    library's) where the value `fn` adds to input `target`'s grad was made
    (`mgtui.doctor.origins.made_at`); None if no such line (it was made in a library).
    With `measured` (`Target`'s fields, as JSON), `culprit` is the earlier number that
    statement reads which, changed alone, makes the value right (`origins.culprits`):
    {"name", "line", "was", "should", "others"}, or None. Without `measured`, `suspects`
    says whether that statement reads any value `culprits` could try."""
    import numpy as np

    from mgtui.doctor import origins

    first = from_zero(d, fn)
    wanted = next((g for c, g, _ in first or () if c == target), None)
    if wanted is None or not is_array(wanted):
        return None
    wanted = np.asarray(wanted)

    def same(x: object) -> bool:
        return (is_array(x) and x.shape == wanted.shape  # type: ignore[attr-defined]
                and bool(np.array_equal(x, wanted, equal_nan=True)))

    inputs = input_dicts(d)
    kept = reachable(d, inputs, fn)

    def run() -> None:
        for cd in inputs:
            grad = cd.get("grad")
            cd["grad"] = zeros(grad.shape) if is_array(grad) else 0.0
        fn()

    try:
        made = origins.made_at(run, same)
    finally:
        restore(kept)
    if made is None:
        return None
    found = []
    if measured is None:  # (a later run, given what was measured, tries them)
        return [made.file, made.line, None, bool(origins.suspects(made))]
    if measured is not None:
        goal = origins.Target(int(measured["j"]), float(measured["expected"]),
                              {int(k): float(v) for k, v in measured["right"].items()},
                              decode(measured["dc"]), float(measured["total"]))
        found = origins.culprits(made, same, goal)
    culprit = None
    named, others = origins.named(found)
    if named is not None:
        culprit = {"name": named.name, "line": named.line, "was": named.was,
                   "should": named.should, "others": [[o.name, o.line] for o in others]}
    return [made.file, made.line, culprit, True]


class ArrayRerunJob:
    """An array re-run as a runner job: only its `result` is read, not its trace."""

    reads_values = False

    def __init__(self, capture: ArrayCapture) -> None:
        self.capture = capture
        self.hooks = Hooks(on_create=capture.on_create, before_backward=capture.before_backward)

    def result(self) -> dict:
        return self.capture.result()


def array_rerun(nudge: dict, element: dict, stop_after: int | None, snaps: dict,
                capture: list, grads: bool = False, origin: list | None = None,
                seed: int = 0) -> ArrayRerunJob:
    """`ArrayRerunJob` from a job's arguments (JSON: keys back to ints here). numpy's
    global random state is seeded with `seed`, as the runner seeds `random`: every
    re-run draws the same numbers (a `default_rng()` with no seed does not: the check
    sees its values move and says so)."""
    import numpy as np

    np.random.seed(seed)
    return ArrayRerunJob(ArrayCapture(
        {int(k): float(v) for k, v in nudge.items()},
        {int(k): (int(v) if isinstance(v, int) else tuple(map(int, v))) for k, v in element.items()},
        stop_after, {int(k): [int(n) for n in v] for k, v in snaps.items()},
        [(int(lo), int(hi)) for lo, hi in capture], bool(grads),
        (int(origin[0]), int(origin[1]), *origin[2:]) if origin else None))


def array_args(nudge: dict[int, float], element: dict[int, int], stop_after: int | None,
               snaps: dict[int, list[int]], capture: list[tuple[int, int]] = (),
               grads: bool = False, origin: tuple | None = None,
               seed: int = 0) -> dict:
    """`array_rerun`'s arguments, as they travel to the child (as JSON)."""
    return {"nudge": {str(k): v for k, v in nudge.items()},
            "element": {str(k): v for k, v in element.items()}, "stop_after": stop_after,
            "snaps": {str(k): v for k, v in snaps.items()},
            "capture": [list(c) for c in capture], "grads": grads,
            "origin": list(origin) if origin else None, "seed": seed}
