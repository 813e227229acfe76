"""The gradient doctor: find the node and source line behind a wrong gradient.

`diagnose()` records the scenario once, runs the checks of SPEC section 6 on the trace,
and re-runs the scenario with node values nudged to check the gradients numerically.
`run_check()` is `mgtui FILE --check`. Headless: this module never imports textual.

How the numerical check stays fast on large graphs (written here rather than taken from
a library, because every run is a re-run of a user's script, not a call of a function):
one pair of runs nudges every node of the checked graph at once, by ±h along a seeded
random direction `u`, and stops as soon as the checked backward pass is about to start.

- The output moves by `h * sum(u_i * grad_i)`: gradcheck's fast mode, a directional
  derivative of the root, compared with the recorded grads.
- Every node `N = op(c_1..c_k)` also moves, and its move must match the move of its
  inputs through the local derivative its `_backward` applied:
  `N.grad * dN = sum_k (contribution to c_k.grad) * dc_k`. Each `_backward` call is
  checked on its own, so the faulty op is found directly, with no bisection, and a wrong
  topological order (which feeds an op a partial grad) is not mistaken for a wrong
  derivative. At a kink (ReLU at 0) one one-sided difference must agree instead.

The finding's numbers then come from a few more runs that nudge one input of the faulty
op alone: its numerical gradient against the recorded one.
"""

from __future__ import annotations

import json
import linecache
import math
import os
import random
import sys
import time
from array import array
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from mgtui.recorder import (
    DEFAULT_MAX_NODES,
    ID,
    Scenario,
    ScenarioLoadError,
    StopRecording,
    load_scenario,
    record,
)
from mgtui.timeline import Timeline
from mgtui.trace import BACKWARD, CREATE, DATA, GRAD, Pass, Trace, TraceError

ATOL, RTOL = 1e-5, 1e-3  # gradcheck's tolerances
H = 1e-7  # nudge of the directional runs, relative to max(1, |data|)
H_SINGLE = 1e-6  # nudge of the one-input runs that give a finding its numbers

KINDS = {
    "wrong-derivative": "wrong local derivative",
    "overwrite": "`=` instead of `+=`",
    "missing-zero-grad": "missing zero_grad",
    "missing-seed": "missing seed",
    "topo-order": "wrong topological order",
    "foreign-write": "write to a node that is not an input",
    "no-backward": "op with no _backward",
    "non-finite": "nan or inf",
    "wrong-gradient": "gradient differs from the numerical one",
}

ProgressFn = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Finding:
    """One problem, at the node and the step the app should jump to."""

    kind: str
    node: int
    label: str
    op: str
    step: int  # the event index the finding concerns
    file: str  # the scenario file, or the file of the `_backward` closure
    line: int | None
    text: str  # that line's source text
    message: str
    numerical: float | None = None
    recorded: float | None = None

    @property
    def title(self) -> str:
        return KINDS.get(self.kind, self.kind)

    def to_json(self) -> dict:
        out = asdict(self)
        out["node"] = {"id": self.node, "label": self.label, "op": self.op}
        del out["label"], out["op"]
        for key in ("numerical", "recorded"):
            value = out[key]
            if value is not None and not math.isfinite(value):
                out[key] = str(value)
        return out


@dataclass
class Report:
    """What `diagnose()` found: the findings, the trace they refer to, and the run error."""

    findings: list[Finding]
    trace: Trace
    error: TraceError | None = None  # the scenario raised: the checks ran up to there
    checked_pass: Pass | None = None  # the backward pass checked numerically
    checked_nodes: int = 0
    checked_calls: int = 0
    runs: int = 1  # recordings made, the first one included
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.findings and self.error is None

    @property
    def nodes(self) -> set[int]:
        """The ids of the nodes with a finding, to mark them in a node table."""
        return {f.node for f in self.findings}


# -- the entry points ------------------------------------------------------------------


def diagnose(
    path_or_scenario: str | os.PathLike | Scenario,
    *,
    seed: int = 0,
    sample: int | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    timeout: float | None = None,
    on_progress: ProgressFn | None = None,
) -> Report:
    """Record the scenario, run every check, and return the findings.

    `sample` limits the non-leaf nodes nudged on their own in the numerical runs (leaves
    are always nudged; by default every node is). Raises ScenarioLoadError if the
    scenario cannot run at all.
    """
    started = time.perf_counter()
    scenario = (path_or_scenario if isinstance(path_or_scenario, Scenario)
                else load_scenario(path_or_scenario))
    progress = on_progress or (lambda done, total, phase: None)
    progress(0, 0, "recording")
    probe = OverwriteProbe()
    trace = record(scenario, seed=seed, max_nodes=max_nodes, timeout=timeout, probe=probe,
                   on_progress=lambda nid: progress(nid, 0, "recording"))
    raise_if_interrupted(trace)
    progress(0, 0, "checking the trace")
    doctor = Doctor(trace, scenario, seed=seed, max_nodes=max_nodes, timeout=timeout,
                    progress=progress)
    doctor.check_trace(probe)
    doctor.check_numerically(sample)
    report = Report(
        findings=doctor.findings(),
        trace=trace,
        error=trace.error,
        checked_pass=doctor.checked,
        checked_nodes=doctor.checked_nodes,
        checked_calls=doctor.checked_calls,
        runs=1 + doctor.runs,
        seconds=time.perf_counter() - started,
        notes=doctor.notes,
    )
    return report


def raise_if_interrupted(trace: Trace) -> None:
    """ctrl+c during a recording ends the whole check, not just that run."""
    error = trace.error
    if error is not None and error.type == "Stopped" and error.message.endswith("interrupted"):
        raise KeyboardInterrupt


def run_check(path: Path, args) -> int:
    """`mgtui FILE --check`: print the report (or JSON), return the exit code."""
    from mgtui.cli import EXIT_FAILED, EXIT_OK, fail

    progress = Progress(sys.stderr)
    try:
        report = diagnose(path, seed=args.seed, sample=getattr(args, "sample", None),
                          max_nodes=args.max_nodes, timeout=args.timeout,
                          on_progress=progress)
    except ScenarioLoadError as exc:
        progress.done()
        return fail(exc.message, exc.detail)
    progress.done()
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps([f.to_json() for f in report.findings], indent=2) + "\n")
    else:
        sys.stdout.write(format_report(report))
    sys.stdout.flush()
    if report.error is not None:
        print(f"mgtui: {path}: {report.error} (checked up to there)", file=sys.stderr)
    return EXIT_OK if report.clean else EXIT_FAILED


class Progress:
    """Progress on stderr: a live line on a terminal, else one line per phase."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.phase = ""
        self.last = 0.0

    def __call__(self, done: int, total: int, phase: str) -> None:
        if phase != self.phase:
            self.phase = phase
            if not self.tty:
                print(f"mgtui: {phase}…", file=self.stream, flush=True)
        if not self.tty:
            return
        now = time.monotonic()
        if now - self.last < 0.1 and done != total:
            return
        self.last = now
        if total:
            width = 20
            filled = int(width * done / total)
            bar = "█" * filled + "·" * (width - filled)
            text = f"{phase} {bar} {100 * done // total}%"
        else:
            text = f"{phase}… {done:,} nodes" if done else f"{phase}…"
        self.stream.write(f"\r\x1b[2K{text}")
        self.stream.flush()

    def done(self) -> None:
        if self.tty and self.phase:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


# -- the `=` instead of `+=` probe, run inside every recorded `_backward` call ----------


class OverwriteProbe:
    """Replays each `_backward` closure before its real call: once with its inputs' grads
    at 0 and once at a known nonzero value. An accumulating closure adds the same amount
    both times; one that assigns leaves the same value both times. Every grad and data
    the replay could have changed is put back afterwards."""

    def __init__(self) -> None:
        self.calls = 0
        self.busy = False
        # (call index, node id, input id, grad from 0, start value, grad from the start value)
        self.hits: list[tuple[int, int, int, float, float, float]] = []

    def __call__(self, d: dict, fn: Callable[[], object]) -> None:
        if self.busy:  # a `_backward` called from a replayed one
            return
        index = self.calls
        self.calls += 1
        prev = d.get("_prev")
        if not prev:
            return
        inputs = []
        seen = set()
        for c in prev:
            cd = getattr(c, "__dict__", None)
            if cd is not None and id(cd) not in seen:
                seen.add(id(cd))
                inputs.append(cd)
        saved = self.snapshot(d, inputs, fn)
        self.busy = True
        try:
            for cd in inputs:
                cd["grad"] = 0.0
            fn()
            from_zero = [cd.get("grad") for cd in inputs]
            restore(saved)
            starts = []
            for cd, g in zip(inputs, from_zero):
                start = 3.0 + 2.0 * abs(g) if is_finite(g) else 3.0
                starts.append(start)
                cd["grad"] = start
            fn()
            from_start = [cd.get("grad") for cd in inputs]
        except Exception:  # noqa: BLE001 - the real call will raise it again, recorded
            return
        finally:
            restore(saved)
            self.busy = False
        for cd, g0, s, gs in zip(inputs, from_zero, starts, from_start):
            if not (is_finite(g0) and is_finite(gs)):
                continue
            g0, gs = float(g0), float(gs)
            tol = 1e-9 * (abs(s) + abs(g0) + abs(gs)) + 1e-12
            if abs(gs - (s + g0)) > tol and abs(gs - g0) <= tol:
                self.hits.append((index, d.get(ID, -1), cd.get(ID, -1), g0, s, gs))

    @staticmethod
    def snapshot(d: dict, inputs: list[dict], fn) -> list[tuple[dict, object, object]]:
        """The grad and data of every node the closure can reach: the node, its inputs,
        the Values in its closure cells, and the global Values it names."""
        dicts = {id(d): d}
        for cd in inputs:
            dicts[id(cd)] = cd
        fn = getattr(fn, "__wrapped__", fn)
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                obj = cell.cell_contents
            except ValueError:
                continue
            od = getattr(obj, "__dict__", None)
            if isinstance(od, dict) and "grad" in od:
                dicts[id(od)] = od
        code = getattr(fn, "__code__", None)
        glob = getattr(fn, "__globals__", None)
        if code is not None and glob is not None:
            for name in code.co_names:
                od = getattr(glob.get(name), "__dict__", None)
                if isinstance(od, dict) and "grad" in od:
                    dicts[id(od)] = od
        missing = _MISSING
        return [(od, od.get("grad", missing), od.get("data", missing)) for od in dicts.values()]


_MISSING = object()


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


def close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= ATOL + RTOL * scale


# -- the checks ------------------------------------------------------------------------


class Doctor:
    """Runs the checks on one trace and collects candidate findings."""

    def __init__(self, trace: Trace, scenario: Scenario, *, seed: int, max_nodes: int,
                 timeout: float | None, progress: ProgressFn) -> None:
        self.trace = trace
        self.scenario = scenario
        self.seed = seed
        self.max_nodes = max_nodes
        self.timeout = timeout
        self.progress = progress
        self.found: list[Finding] = []
        self.checked: Pass | None = None
        self.checked_nodes = 0
        self.checked_calls = 0  # `_backward` calls whose local derivative was checked
        self.kinks = 0  # of them, those that only agreed on one side (ReLU at 0)
        self.runs = 0
        self.notes: list[str] = []
        self.source_lines = trace.source.splitlines()
        # nodes (and events) a trace-only check already explains
        self.explained: set[int] = set()  # event indices
        self.explained_passes: set[int] = set()
        self.seedless: set[int] = set()  # backward passes with a zero root grad

    # -- helpers ---------------------------------------------------------------------------
    def node_text(self, nid: int) -> str:
        label = self.trace.label(nid)
        return label if label == f"#{nid}" else f"{label} (#{nid})"

    def op_text(self, nid: int) -> str:
        """`o (#9, op tanh)`: a node with its id and op."""
        label, op = self.trace.label(nid), self.trace.node_op[nid] or "?"
        return f"{label} (op {op})" if label == f"#{nid}" else f"{label} (#{nid}, op {op})"

    def scenario_where(self, line: int | None) -> tuple[str, int | None, str]:
        text = self.source_lines[line - 1].strip() if line and line <= len(self.source_lines) else ""
        return self.trace.scenario, line or None, text

    def closure_where(self, event: int, line: int | None) -> tuple[str, int | None, str]:
        k = self.trace.ev_closure[event]
        if k < 0 or not line:
            return self.scenario_where(self.trace.ev_line[event])
        filename = self.trace.closures[k].filename
        if os.path.abspath(filename) == str(Path(self.trace.scenario).resolve()):
            return self.scenario_where(line)
        return filename, line, linecache.getline(filename, line).strip()

    def add(self, kind: str, nid: int, step: int, where: tuple[str, int | None, str],
            message: str, numerical: float | None = None, recorded: float | None = None) -> None:
        t = self.trace
        file, line, text = where
        self.found.append(Finding(kind, nid, t.label(nid), t.node_op[nid], step, file, line,
                                  text, message, numerical, recorded))

    def findings(self) -> list[Finding]:
        """One finding per kind and source line: the first node it happened at."""
        seen: dict[tuple, int] = {}
        out: list[Finding] = []
        for f in self.found:
            key = (f.kind, f.file, f.line, f.text if f.line is None else "")
            if key in seen:
                continue
            seen[key] = len(out)
            out.append(f)
        out.sort(key=lambda f: f.step)
        return out

    def backward_passes(self) -> list[Pass]:
        t = self.trace
        return [p for p in t.passes if p.kind == "backward"
                and any(t.ev_kind[i] == BACKWARD for i in range(p.start, p.end))]

    def first_backward(self, p: Pass) -> int:
        t = self.trace
        return next(i for i in range(p.start, p.end) if t.ev_kind[i] == BACKWARD)

    # -- trace-only checks ---------------------------------------------------------------
    def check_trace(self, probe: OverwriteProbe) -> None:
        self.check_non_finite()
        self.check_overwrite(probe)
        self.check_backward_calls()
        self.check_passes()

    def check_non_finite(self) -> None:
        """The first nan or inf in any data or grad, and the step that produced it."""
        t = self.trace
        isfinite = math.isfinite
        for i in range(len(t)):
            kind = t.ev_kind[i]
            if kind == CREATE:
                nid = t.ev_node[i]
                value = t.node_data[nid]
                if isfinite(value):
                    continue
                inputs = t.children(nid)
                if inputs:
                    shown = ", ".join(f"{t.label(c)} = {t.node_data[c]:.6g}" for c in inputs)
                    finite = all(isfinite(t.node_data[c]) for c in inputs)
                    how = "overflowed to" if finite and math.isinf(value) else "made"
                    origin = f"its op {t.node_op[nid] or '?'} {how} {value} from {shown}"
                else:
                    origin = f"it was created as {value}"
                self.add("non-finite", nid, i, self.scenario_where(t.node_line[nid]),
                         f"{self.node_text(nid)}.data is {value}: {origin}",
                         recorded=value)
                return
            if kind == BACKWARD:
                for w in range(t.ev_write_start[i], t.ev_write_start[i + 1]):
                    after = t.wr_after[w]
                    if isfinite(after):
                        continue
                    owner = t.ev_node[i]
                    target = t.wr_node[w]
                    field_name = "grad" if t.wr_field[w] == 0 else "data"
                    self.add("non-finite", owner, i, self.closure_where(i, t.wr_line[w]),
                             f"the _backward of {self.op_text(owner)} "
                             f"wrote {self.node_text(target)}.{field_name} = {after} "
                             f"(it was {t.wr_before[w]:.6g}); "
                             + self.inputs_text(owner), recorded=after)
                    return
            elif not isfinite(t.ev_after[i]):
                nid = t.ev_node[i]
                field_name = "grad" if kind == GRAD else "data"
                self.add("non-finite", nid, i, self.scenario_where(t.ev_line[i]),
                         f"{self.node_text(nid)}.{field_name} was set to {t.ev_after[i]} "
                         f"(it was {t.ev_before[i]:.6g})", recorded=t.ev_after[i])
                return

    def inputs_text(self, nid: int) -> str:
        t = self.trace
        parts = [f"{t.label(c)}.data = {t.node_data[c]:.6g}" for c in t.children(nid)]
        own = f"{t.label(nid)}.data = {t.node_data[nid]:.6g}"
        return "values at creation: " + ", ".join([own] + parts)

    def check_overwrite(self, probe: OverwriteProbe) -> None:
        """`=` instead of `+=`: the replays of the probe, tied to their recorded call."""
        t = self.trace
        if not probe.hits:
            return
        calls = [i for i in range(len(t)) if t.ev_kind[i] == BACKWARD]
        for index, nid, target, g0, start, gs in probe.hits:
            event = calls[index] if index < len(calls) and t.ev_node[calls[index]] == nid else None
            if event is None:
                event = next((i for i in calls if t.ev_node[i] == nid), None)
            if event is None or target < 0:
                continue
            line = next((t.wr_line[w] for w in range(t.ev_write_start[event],
                                                     t.ev_write_start[event + 1])
                         if t.wr_node[w] == target and t.wr_field[w] == 0), None)
            self.explained.add(event)
            self.add("overwrite", nid, event, self.closure_where(event, line),
                     f"the _backward of {self.op_text(nid)} assigns "
                     f"{self.node_text(target)}.grad instead of adding to it: replayed with "
                     f"{t.label(target)}.grad = {start:.6g} beforehand it left {gs:.6g}, "
                     f"not {start + g0:.6g} (= {start:.6g} + {g0:.6g}); a second "
                     f"contribution to {t.label(target)}.grad would be lost")

    def check_backward_calls(self) -> None:
        """Per `_backward` call: the default no-op on an op node, and writes to nodes that
        are not the op's inputs."""
        t = self.trace
        closures = t.closures
        for i in range(len(t)):
            if t.ev_kind[i] != BACKWARD:
                continue
            nid = t.ev_node[i]
            k = t.ev_closure[i]
            inputs = t.children(nid)
            if k >= 0 and closures[k].default:
                if inputs:
                    self.explained.add(i)
                    names = ", ".join(t.label(c) for c in inputs)
                    self.add("no-backward", nid, i, self.scenario_where(t.node_line[nid]),
                             f"{self.op_text(nid)} has inputs "
                             f"({names}) but its _backward is still the no-op that "
                             f"Value.__init__ sets: no gradient reaches {names}")
                continue
            for w in range(t.ev_write_start[i], t.ev_write_start[i + 1]):
                target = t.wr_node[w]
                if target in inputs:
                    continue
                self.explained.add(i)
                field_name = "grad" if t.wr_field[w] == 0 else "data"
                names = ", ".join(t.label(c) for c in inputs) or "none"
                self.add("foreign-write", nid, i, self.closure_where(i, t.wr_line[w]),
                         f"the _backward of {self.op_text(nid)} wrote "
                         f"{self.node_text(target)}.{field_name} ({t.wr_before[w]:.6g} → "
                         f"{t.wr_after[w]:.6g}), which is not one of its inputs ({names})")
                break

    def check_passes(self) -> None:
        """Seed, topological order and zero_grad, per backward pass."""
        t = self.trace
        grad = array("d", bytes(8 * t.node_count))
        last_pass: dict[int, int] = {}  # node -> backward pass that last changed its grad
        pass_end: dict[int, int] = {}
        pass_root: dict[int, int | None] = {}
        last_update = -1  # index of the last data write outside `_backward`
        for p in t.passes:
            is_backward = p.kind == "backward" and any(
                t.ev_kind[i] == BACKWARD for i in range(p.start, p.end))
            if is_backward:
                self.check_seed(p, grad)
                self.check_topo(p)
                self.check_zero_grad(p, grad, last_pass, pass_end, pass_root, last_update)
                pass_end[p.index] = p.end
                pass_root[p.index] = t.backward_root(p)
            for i in range(p.start, p.end):
                kind = t.ev_kind[i]
                if kind == GRAD:
                    grad[t.ev_node[i]] = t.ev_after[i]
                    last_pass.pop(t.ev_node[i], None)
                elif kind == DATA:
                    last_update = i
                elif kind == BACKWARD:
                    for w in range(t.ev_write_start[i], t.ev_write_start[i + 1]):
                        if t.wr_field[w] == 0:
                            grad[t.wr_node[w]] = t.wr_after[w]
                            last_pass[t.wr_node[w]] = p.index

    def check_seed(self, p: Pass, grad: array) -> None:
        t = self.trace
        first = self.first_backward(p)
        root = t.ev_node[first]
        g = grad[root]
        for i in range(p.start, first):  # a seed write just before
            if t.ev_kind[i] == GRAD and t.ev_node[i] == root:
                g = t.ev_after[i]
        if not t.children(root) or g != 0:
            return
        self.seedless.add(p.index)
        self.explained_passes.add(p.index)
        seed = next((i for i in range(p.start, first)
                     if t.ev_kind[i] == GRAD and t.ev_node[i] == root), None)
        line = t.ev_line[seed] if seed is not None else t.ev_line[first]
        what = "was set to 0" if seed is not None else "was never set to 1"
        self.add("missing-seed", root, first, self.scenario_where(line),
                 f"the backward pass starts at {self.node_text(root)}, whose grad {what}: "
                 f"every contribution is multiplied by {t.label(root)}.grad = 0, so all grads "
                 f"stay 0 (set {t.label(root)}.grad = 1.0 first)", recorded=0.0)

    def check_topo(self, p: Pass) -> None:
        t = self.trace
        first_run: dict[int, int] = {}
        for i in range(p.start, p.end):
            if t.ev_kind[i] == BACKWARD:
                first_run.setdefault(t.ev_node[i], i)
        last_user: dict[int, tuple[int, int]] = {}  # node -> (latest first call of a user, user)
        for user, i in first_run.items():
            for c in set(t.children(user)):
                if c in first_run and (c not in last_user or last_user[c][0] < i):
                    last_user[c] = (i, user)
        for nid, i in sorted(first_run.items(), key=lambda item: item[1]):
            if not t.children(nid) or nid not in last_user:
                continue
            j, user = last_user[nid]
            if j <= i:
                continue
            self.explained_passes.add(p.index)
            self.add("topo-order", nid, i, self.scenario_where(t.ev_line[i]),
                     f"the _backward of {self.node_text(nid)} ran at step {i + 1}, before the "
                     f"_backward of {self.node_text(user)} (step {j + 1}), which uses it: "
                     f"{t.label(nid)} passed on a grad that was not complete yet (the "
                     f"topological sort must add a node after all of its inputs)")
            return

    def check_zero_grad(self, p: Pass, grad: array, last_pass: dict[int, int],
                        pass_end: dict[int, int], pass_root: dict[int, int | None],
                        last_update: int) -> None:
        t = self.trace
        root = t.backward_root(p)
        stale: list[tuple[int, int]] = []  # (node, backward pass it still holds grad from)
        seen: set[int] = set()
        for w in range(t.ev_write_start[p.start], t.ev_write_start[p.end]):
            nid = t.wr_node[w]
            if nid in seen or t.wr_field[w] != 0:
                continue
            seen.add(nid)
            q = last_pass.get(nid)
            if q is None or grad[nid] == 0:
                continue
            if last_update > pass_end[q] or pass_root.get(q) == root:
                stale.append((nid, q))
        if not stale:
            return
        leaves = [s for s in stale if not t.children(s[0])] or stale
        nid, q = min(leaves)
        first = self.first_backward(p)
        step = next((i for i in range(first, p.end) if t.ev_kind[i] == BACKWARD and any(
            t.wr_node[w] == nid for w in range(t.ev_write_start[i], t.ev_write_start[i + 1]))),
            first)  # the call that adds onto the left-over grad
        self.explained_passes.add(p.index)
        why = ("the parameters were updated in between" if last_update > pass_end[q]
               else "it is the same graph again")
        self.add("missing-zero-grad", nid, step, self.scenario_where(t.ev_line[first]),
                 f"this backward pass began with {self.node_text(nid)}.grad = {grad[nid]:.6g} "
                 f"left over from backward pass {q + 1} ({why}), and {len(stale)} node(s) like "
                 f"it: the new gradients are added on top; zero the grads before backward()",
                 recorded=grad[nid])

    # -- the numerical check ---------------------------------------------------------------
    def pick_pass(self) -> Pass | None:
        """The first complete backward pass with a seeded, finite root."""
        t = self.trace
        for p in self.backward_passes():
            if p.index in self.seedless:
                continue
            if t.error is not None and t.error.after_event < p.end:
                continue
            root = t.backward_root(p)
            if root is None or not math.isfinite(t.node_data[root]) or not t.children(root):
                continue
            return p
        return None

    def run(self, nudge: dict[int, float], stop_after: int,
            on_progress: Callable[[int], None] | None = None) -> Trace:
        """Re-run the scenario with `nudge`, stopping before `_backward` call
        number `stop_after + 1`: just before the checked pass."""
        count = [0]

        def stop(d, fn):
            count[0] += 1
            if count[0] > stop_after:
                raise StopRecording("the doctor has what it needs")

        self.runs += 1
        trace = record(self.scenario, seed=self.seed, max_nodes=self.max_nodes,
                       timeout=self.timeout, nudge=nudge, probe=stop, on_progress=on_progress)
        raise_if_interrupted(trace)
        return trace

    def check_numerically(self, sample: int | None) -> None:
        t = self.trace
        p = self.pick_pass()
        if p is None:
            return
        self.checked = p
        first = self.first_backward(p)
        stop_after = sum(1 for i in range(first) if t.ev_kind[i] == BACKWARD)
        root = t.backward_root(p)
        assert root is not None
        nodes = ancestors(t, root)
        # data set by hand after creation (`p.data = ...`) may have replaced the nudge
        tampered = {t.ev_node[i] for i in range(first) if t.ev_kind[i] == DATA}
        rng = random.Random(self.seed)
        leaves = [n for n in nodes if not t.children(n)]
        inner = [n for n in nodes if t.children(n) and n not in tampered]
        if sample is not None and sample < len(inner):
            inner = sorted(rng.sample(inner, max(sample, 0)))
        u: dict[int, float] = {}
        for n in leaves + inner:
            x = t.node_data[n]
            if math.isfinite(x):
                u[n] = rng.choice((-1.0, 1.0)) * max(1.0, abs(x))
        self.checked_nodes = len(nodes)
        size = root + 1  # the nodes each run makes before it stops
        phase = "numerical check"
        self.progress(0, 2 * size, phase)
        plus = self.run({n: H * v for n, v in u.items()}, stop_after,
                        lambda nid: self.progress(nid, 2 * size, phase))
        minus = self.run({n: -H * v for n, v in u.items()}, stop_after,
                         lambda nid: self.progress(size + nid, 2 * size, phase))
        self.progress(2 * size, 2 * size, phase)
        if len(plus) != first or len(minus) != first:
            self.notes.append("the nudged runs took another path than the recorded one, "
                              "so the numerical check was skipped")
            return
        # every value as the checked pass found it
        base = Timeline(t, p.start).data
        dp, dm = plus.final_data, minus.final_data
        for n in leaves:  # a leaf moves by exactly its nudge, if it was not overwritten
            if n in u:
                u[n] = (dp[n] - dm[n]) / (2 * H)
        # recorded grads during the pass, and each `_backward` call checked on its own
        grad = array("d", Timeline(t, p.start).grad)
        start_grad = array("d", grad)
        kink = False
        suspects: list[tuple[int, int, float, dict[int, float]]] = []
        flat: set[int] = set()  # calls of a no-op `_backward` on an op that is flat anyway
        isfinite = math.isfinite
        for i in range(p.start, p.end):
            kind = t.ev_kind[i]
            if kind == GRAD:
                grad[t.ev_node[i]] = t.ev_after[i]
                continue
            if kind != BACKWARD:
                continue
            nid = t.ev_node[i]
            g = grad[nid]
            contrib: dict[int, float] = {}
            for w in range(t.ev_write_start[i], t.ev_write_start[i + 1]):
                if t.wr_field[w] == 0:
                    target = t.wr_node[w]
                    contrib[target] = contrib.get(target, 0.0) + (t.wr_after[w] - t.wr_before[w])
                    grad[target] = t.wr_after[w]
            inputs = t.children(nid)
            if not inputs or nid >= len(dp) or nid >= len(dm):
                continue
            k = t.ev_closure[i]
            if k >= 0 and t.closures[k].default and not self.depends(nid, inputs, u, dp, dm):
                flat.add(i)  # a step-like op: no `_backward` is the right derivative, 0
            if i in self.explained:
                continue
            values = [nid, *inputs]
            if not all(isfinite(base[n]) and isfinite(dp[n]) and isfinite(dm[n])
                       for n in values) or not isfinite(g):
                continue
            if not all(isfinite(contrib.get(c, 0.0)) for c in inputs):
                continue
            ok, kinked = self.local_ok(nid, inputs, g, contrib, u, base, dp, dm)
            self.checked_calls += 1
            self.kinks += kinked
            kink |= kinked
            if not ok:
                suspects.append((i, nid, g, contrib))
        if self.kinks:
            self.notes.append(f"{self.kinks} _backward call(s) sit at a kink (like ReLU at 0) "
                              f"and were checked on one side; the check of the root's "
                              f"directional derivative was left out")
        if flat:
            self.found = [f for f in self.found
                          if not (f.kind == "no-backward" and f.step in flat)]
        per_closure: dict[int, int] = {}
        for i, *_ in suspects:
            per_closure[t.ev_closure[i]] = per_closure.get(t.ev_closure[i], 0) + 1
        for i, nid, g, contrib in suspects:  # the first call of each faulty closure
            more = per_closure.pop(t.ev_closure[i], None)
            if more is not None:
                self.explain_wrong_derivative(p, i, nid, g, contrib, start_grad, stop_after,
                                              more - 1)
        # gradcheck's fast mode: the directional derivative of the root
        if p.index in self.explained_passes or suspects or any(
                f.step in range(p.start, p.end) for f in self.found) or kink:
            return
        final = Timeline(t, p.end).grad
        recorded = sum(v * (final[n] - start_grad[n]) for n, v in u.items())
        central = (dp[root] - dm[root]) / (2 * H)
        forward = (dp[root] - base[root]) / H
        backward = (base[root] - dm[root]) / H
        if not isfinite(recorded) or not isfinite(central):
            return
        if any(close(num, recorded, max(abs(num), abs(recorded)))
               for num in (central, forward, backward)):
            return
        first = self.first_backward(p)
        ran = set(t.backward_order(p))
        skipped = [n for n in nodes if t.children(n) and n not in ran
                   and final[n] - start_grad[n] != 0]
        if skipped:  # an op node that got a grad but never passed it on
            nid = skipped[-1]
            self.add("topo-order", nid, first, self.scenario_where(t.ev_line[first]),
                     f"{self.op_text(nid)} is in the graph of "
                     f"{self.node_text(root)} and got a grad ({final[nid] - start_grad[nid]:.6g}) "
                     f"but its _backward never ran in this pass: the topological order "
                     f"leaves it out ({len(skipped)} node(s) like it). Nudging the graph along "
                     f"a random direction moves {t.label(root)} at the rate numerical "
                     f"{central:.6g}, recorded {recorded:.6g}",
                     numerical=central, recorded=recorded)
            return
        self.add("wrong-gradient", root, first, self.scenario_where(t.ev_line[first]),
                 f"nudging all {len(u)} nodes of the graph of {self.node_text(root)} along a "
                 f"random direction moves it at the rate numerical {central:.6g}, recorded "
                 f"{recorded:.6g}, and no single _backward call explains it",
                 numerical=central, recorded=recorded)

    @staticmethod
    def depends(nid, inputs, u, dp, dm) -> bool:
        """Does the op's value move at all when its inputs move?"""
        rate = (dp[nid] - dm[nid]) / (2 * H) - u.get(nid, 0.0)
        moves = [abs(dp[c] - dm[c]) / (2 * H) for c in inputs]
        return not all(math.isfinite(x) for x in moves) or abs(rate) > ATOL + RTOL * max(moves)

    @staticmethod
    def local_ok(nid, inputs, g, contrib, u, base, dp, dm) -> tuple[bool, bool]:
        """Does `g * dN == sum_k contrib_k * dc_k` hold, centrally or (at a kink) on one side?
        Returns (ok, only one-sided)."""
        own = u.get(nid, 0.0)
        sides = (
            (dp, dm, 2 * H),  # central
            (dp, base, H),    # forward
            (base, dm, H),    # backward
        )
        for k, (hi, lo, step) in enumerate(sides):
            shift = own * (2 * H if k == 0 else H)
            lhs = g * (hi[nid] - lo[nid] - shift) / step
            terms = [contrib.get(c, 0.0) * (hi[c] - lo[c]) / step for c in inputs]
            rhs = sum(terms)
            scale = max(abs(lhs), sum(abs(x) for x in terms))
            if close(lhs, rhs, scale):
                return True, k > 0
        return False, False

    def explain_wrong_derivative(self, p: Pass, event: int, nid: int, g: float,
                                 contrib: dict[int, float], start_grad: array,
                                 stop_after: int, more: int = 0) -> None:
        """Nudge each input of the faulty op alone: the local derivative it should have
        applied, and the input's numerical gradient against the recorded one."""
        t = self.trace
        root = t.backward_root(p)
        inputs = list(dict.fromkeys(t.children(nid)))
        final = Timeline(t, p.end).grad
        worst = None
        inputs = inputs[:8]
        for n, c in enumerate(inputs):
            x = t.node_data[c]
            step = H_SINGLE * max(1.0, abs(x))
            self.progress(2 * n, 2 * len(inputs), "working out the numbers")
            plus = self.run({c: step}, stop_after)
            minus = self.run({c: -step}, stop_after)
            self.progress(2 * n + 2, 2 * len(inputs), "working out the numbers")
            first = self.first_backward(p)
            if len(plus) != first or len(minus) != first:
                continue
            dc = (plus.final_data[c] - minus.final_data[c])
            if dc == 0:
                continue
            local_num = (plus.final_data[nid] - minus.final_data[nid]) / dc
            local_rec = contrib.get(c, 0.0) / g if g else math.nan
            grad_num = (plus.final_data[root] - minus.final_data[root]) / dc
            grad_rec = final[c] - start_grad[c]
            applied = contrib.get(c, 0.0)
            expected = g * local_num
            if not close(applied, expected, max(abs(applied), abs(expected))):
                worst = (c, local_num, local_rec, grad_num, grad_rec, applied, expected)
                break
        also = (f" The same _backward disagrees at {more} more call{'s' if more > 1 else ''}."
                if more else "")
        if worst is None:  # no single input shows it (several inputs move together)
            c = inputs[0]
            where = self.closure_where(event, self.write_line(event, c))
            self.add("wrong-derivative", nid, event, where,
                     f"the _backward of {self.op_text(nid)} does not "
                     f"match how {t.label(nid)} changes with its inputs "
                     f"({', '.join(t.label(c) for c in inputs)}).{also}")
            return
        c, local_num, local_rec, grad_num, grad_rec, applied, expected = worst
        where = self.closure_where(event, self.write_line(event, c))
        name, out = t.label(c), t.label(nid)
        self.add("wrong-derivative", nid, event, where,
                 f"{name}.grad: numerical {grad_num:.6g}, recorded {grad_rec:.6g}. The "
                 f"_backward of {self.op_text(nid)} added "
                 f"{applied:.6g} to {name}.grad, which is {local_rec:.6g} × {out}.grad "
                 f"({g:.6g}); d{out}/d{name} is {local_num:.6g} numerically, so it should have "
                 f"added {expected:.6g}.{also}", numerical=grad_num, recorded=grad_rec)

    def write_line(self, event: int, target: int) -> int | None:
        t = self.trace
        lines = [t.wr_line[w] for w in range(t.ev_write_start[event], t.ev_write_start[event + 1])
                 if t.wr_node[w] == target and t.wr_field[w] == 0]
        if lines:
            return lines[0]
        k = t.ev_closure[event]
        return t.closures[k].first_line if k >= 0 else None


def ancestors(trace: Trace, root: int) -> list[int]:
    """The nodes `root` was computed from, itself included, by id."""
    seen = {root}
    stack = [root]
    child_start, child_ids = trace.child_start, trace.child_ids
    while stack:
        n = stack.pop()
        for j in range(child_start[n], child_start[n + 1]):
            c = child_ids[j]
            if c >= 0 and c not in seen:
                seen.add(c)
                stack.append(c)
    return sorted(seen)


# -- the text report -------------------------------------------------------------------


def display_path(file: str) -> str:
    try:
        rel = os.path.relpath(file)
    except ValueError:
        return file
    return rel if not rel.startswith("..") else file


def format_report(report: Report) -> str:
    t = report.trace
    out = [f"{t.title}", f"{display_path(t.scenario)}: {t.node_count:,} nodes, {len(t):,} steps"]
    p = report.checked_pass
    if p is not None:
        count = sum(1 for q in t.passes if q.kind == "backward")
        number = [q.index for q in t.passes if q.kind == "backward"].index(p.index) + 1
        out.append(f"checked: every backward step; numerically, backward pass {number}/{count}: "
                   f"{report.checked_nodes:,} nodes, {report.checked_calls:,} _backward calls, "
                   f"{report.runs} runs")
    else:
        out.append("checked: every backward step; no backward pass to check numerically")
    out.extend(f"note: {n}" for n in report.notes)
    out.append("")
    for f in report.findings:
        op = f" op {f.op}," if f.op else ""
        out.append(f"{f.kind}: {f.title}")
        out.append(f"  node   {f.label} (#{f.node},{op} step {f.step + 1})")
        if f.line:
            out.append(f"  at     {display_path(f.file)}:{f.line}: {f.text}")
        out.append(f"  {f.message}")
        out.append("")
    if report.error is not None:
        out.append(f"the scenario raised: {report.error} (checked up to there)")
    n = len(report.findings)
    out.append("no problems found." if n == 0 else f"{n} problem{'s' if n != 1 else ''} found.")
    out.append(f"({report.seconds:.1f} s)")
    return "\n".join(out) + "\n"
