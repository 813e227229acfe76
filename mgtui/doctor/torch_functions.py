"""The doctor on a PyTorch scenario: every custom `torch.autograd.Function` whose backward
ran, checked by finite differences on the inputs it actually got.

Built-in torch ops are trusted: a torch trace is not re-run with nudged values (the
micrograd numerical check), and the trace checks of micrograd engines are not run on it.
Instead, while the scenario is recorded, each custom Function's backward call is handed
to `FunctionChecker` (the recording's `Hooks.on_function`), which runs the
Function again on float64 copies of its inputs (where they are floating point): its
own backward, through `torch.autograd.grad`, against central differences of its
forward, on every element of a small input and a sample of a big one, within a time
budget. A wrong gradient is named by the Function, the backward pass, the input and
the element, and the line of its `backward` that returned it. One finding per Function;
what was not checked is said.

torch is imported only when a check runs, so this module is safe to import without it.
"""

from __future__ import annotations

import inspect
import linecache
import math
import random
import time

from mgtui.doctor.findings import Finding, Report, one_per_line
from mgtui.doctor.jobs import ProbeJob
from mgtui.trace import Trace

BUDGET = 2.0  # seconds of checking, over the whole run
ALL_BELOW = 16  # an input of at most this many elements is checked whole
SAMPLED = 8  # else this many of its elements
ATOL, RTOL = 1e-5, 1e-3  # float64 central differences against float64 backward


class FunctionChecker:
    """Called with each custom Function's backward call (`torch_recorder.FunctionCall`);
    `found` holds what it finds, as JSON-ready dicts (the fields of a `Finding`).

    `passes` (the doctor's `--passes`): None, the calls that fit in `budget` seconds, a
    Function found wrong checked no more; "all", every call of every backward pass, or
    a list of pass numbers (from 1), every call of those: no budget, and a Function
    found wrong still checked (one finding each), so that each pass asked is checked."""

    def __init__(self, budget: float = BUDGET, seed: int = 0,
                 passes: str | list[int] | None = None) -> None:
        self.budget = budget
        self.asked = passes
        self.spent = 0.0
        self.found: list[dict] = []
        self.wrong: set[str] = set()  # Functions already found wrong
        self.calls = 0  # calls checked
        self.elements = 0
        self.unchecked = 0  # calls left out: past the budget, or inputs not float
        self.functions: set[str] = set()
        self.passes: set[int] = set()  # backward passes with a call checked
        self.rng = random.Random(seed)

    def __call__(self, call) -> None:
        name = call.cls.__name__
        self.functions.add(name)
        if self.asked is not None:  # (as asked: no budget)
            if self.asked != "all" and call.backward_pass not in self.asked:
                return
        elif name in self.wrong:
            return
        elif self.spent > self.budget:
            self.unchecked += 1
            return
        t0 = time.perf_counter()
        try:
            finding = self._check(call)
        except Exception:  # noqa: BLE001 - a Function that cannot be run again
            finding = None
            self.unchecked += 1
        finally:
            self.spent += time.perf_counter() - t0
        if finding is not None and name not in self.wrong:
            self.wrong.add(name)
            self.found.append(finding)

    def _check(self, call) -> dict | None:
        import torch

        args = list(call.args)
        where = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)
                 and a.is_floating_point() and a.requires_grad]
        if not where:
            self.unchecked += 1
            return None
        x64 = [a.detach().to(torch.float64).clone() if isinstance(a, torch.Tensor)
               and a.is_floating_point() else a for a in args]
        for i in where:
            x64[i].requires_grad_(True)
        g64 = [None if g is None else g.detach().to(torch.float64) for g in call.grad_outputs]
        with torch.enable_grad():
            out = _outputs(call.cls.apply(*x64))
            pairs = [(o, g) for o, g in zip(out, g64) if g is not None and o.requires_grad]
            if not pairs:
                self.unchecked += 1
                return None
            # Σ g·out, a number, rather than the outputs with `g` given as their grads: the
            # Function's backward gets `g` itself either way, but torch's grads given
            # explicitly import sympy (1.2 s, the first time in a process)
            total = sum((o * g).sum() for o, g in pairs)
            analytic = torch.autograd.grad(total, [x64[i] for i in where], allow_unused=True)
        self.calls += 1
        self.passes.add(call.backward_pass)
        for k, i in enumerate(where):
            a = analytic[k]
            flat = x64[i].detach().reshape(-1)
            for j in self._elements(flat.numel()):
                numerical = self._difference(call, x64, g64, i, j)
                got = 0.0 if a is None else float(a.reshape(-1)[j])
                self.elements += 1
                close = abs(got - numerical) <= ATOL + RTOL * abs(numerical)
                if not math.isfinite(numerical) or close:
                    continue
                made = None if a is None else _made_at(call, x64, g64, where, k, a)
                return self._finding(call, i, j, x64[i].shape, numerical, got, k, made)
        return None

    def _elements(self, n: int) -> list[int]:
        if n <= ALL_BELOW:
            return list(range(n))
        return sorted({0, n - 1, *self.rng.sample(range(n), SAMPLED - 2)})

    @staticmethod
    def _difference(call, x64: list, g64: list, i: int, j: int) -> float:
        """∂(Σ g·out)/∂x_i[j] by central differences, the Function run on copies."""
        import torch

        x = x64[i].detach()
        h = 1e-6 * max(1.0, abs(float(x.reshape(-1)[j])))
        sums = []
        for step in (h, -h):
            moved = x.clone()
            moved.reshape(-1)[j] += step
            xs = list(x64)
            xs[i] = moved
            with torch.no_grad():
                out = _outputs(call.cls.apply(*[a.detach() if isinstance(a, torch.Tensor) else a
                                                for a in xs]))
            sums.append(sum(float((o.to(torch.float64) * g).sum())
                            for o, g in zip(out, g64) if g is not None))
        return (sums[0] - sums[1]) / (2 * h)

    def _finding(self, call, i: int, j: int, shape, numerical: float, got: float,
                 k: int, made: tuple[str, int] | None = None) -> dict:
        code = getattr(call.cls.backward, "__code__", None)
        file = code.co_filename if code is not None else ""
        line = call.line or (code.co_firstlineno if code is not None else 0)
        returned = line
        if made is not None:
            file, line = made
        text = linecache.getline(file, line).strip() if file and line else ""
        name = _input_name(call.cls, i)
        index = _index(j, shape)
        recorded = got
        if k < len(call.grad_inputs) and call.grad_inputs[k] is not None:
            try:
                recorded = float(call.grad_inputs[k].reshape(-1)[j])
            except (IndexError, RuntimeError):
                pass
        fn = call.cls.__name__
        message = (f"{fn}.backward returned ∂L/∂{name}{index} = {recorded:.6g} in backward "
                   f"pass {call.backward_pass}, but finite differences of {fn}.forward on the "
                   f"inputs it got give {numerical:.6g} (line {line}: "
                   + ("the gradient it returned)" if line == returned else
                      f"where the gradient it returned at line {returned} was made)"))
        return {"kind": "wrong-gradient", "node": call.node, "op": fn, "step": call.event,
                "file": file, "line": line, "text": text, "message": message,
                "numerical": numerical, "recorded": recorded, "input": i}

    def report(self) -> dict:
        return {"found": self.found, "calls": self.calls, "elements": self.elements,
                "unchecked": self.unchecked, "functions": sorted(self.functions),
                "passes": sorted(self.passes), "budget": self.budget, "seconds": self.spent}


def _made_at(call, x64: list, g64: list, where: list[int], k: int, wanted
             ) -> tuple[str, int] | None:
    """Where in the Function's `backward` the gradient it returned for input `where[k]`
    was made (`mgtui.doctor.origins.made_at`): the Function run again on the float64
    copies, its backward under a line tracer (torch runs a CPU graph's backward on the
    calling thread). `grad_bias = …`, not the `return` that hands it on; None if the
    value was made on no line of the scenario's code (or the run raised)."""
    import torch

    from mgtui.doctor.origins import made_at

    wanted = wanted.detach()

    def same(x: object) -> bool:
        return (isinstance(x, torch.Tensor) and x.shape == wanted.shape
                and x.dtype == wanted.dtype and bool(torch.equal(x.detach(), wanted)))

    def run() -> None:
        xs = [a.detach().clone().requires_grad_(True) if n in where else a
              for n, a in enumerate(x64)]
        with torch.enable_grad():
            out = _outputs(call.cls.apply(*xs))
            total = sum((o * g).sum() for o, g in zip(out, g64)
                        if g is not None and o.requires_grad)
            torch.autograd.grad(total, [xs[n] for n in where], allow_unused=True)

    made = made_at(run, same)
    return (made.file, made.line) if made is not None else None


def _outputs(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _input_name(cls: type, i: int) -> str:
    try:
        params = list(inspect.signature(cls.forward).parameters)[1:]  # (after ctx)
        return params[i] if i < len(params) else f"input {i}"
    except (TypeError, ValueError):
        return f"input {i}"


def _index(j: int, shape) -> str:
    if not len(shape):
        return ""
    idx, rest = [], j
    for n in reversed(tuple(shape)):
        idx.append(rest % n)
        rest //= n
    return "[" + ", ".join(map(str, reversed(idx))) + "]"


# -- the report --------------------------------------------------------------------------


def torch_report(trace: Trace, checked: dict | None, started: float,
                 block: bool = False, asked: str | list[int] | None = None) -> Report:
    """The doctor's report on a torch trace, from what `FunctionChecker.report` gave
    (`block`: a recorded block, whose Functions were not checked as they ran; `asked`:
    the doctor's `passes`, as the checker was given them)."""
    checked = checked or {}
    found = []
    for f in checked.get("found", ()):
        node = int(f["node"])
        label = trace.label(node) if 0 <= node < trace.node_count else ""
        found.append(Finding(
            kind=f["kind"], node=node, label=label or f"#{node}", op=f["op"],
            step=int(f["step"]), file=f["file"], line=f["line"], text=f["text"],
            message=f["message"], numerical=f["numerical"], recorded=f["recorded"],
            input=f["input"]))
    functions = checked.get("functions", [])
    notes = ["PyTorch: built-in torch ops are trusted, and the checks of micrograd-style "
             "engines are not run on a torch graph; custom autograd Functions are checked "
             "by finite differences on the inputs they got"]
    if block:
        notes.append("a recorded block's custom Functions are not checked: give "
                     "mgtui.check a function that builds the graph, or run mgtui FILE --check")
    elif not functions:
        notes.append("no custom torch.autograd.Function's backward ran, so nothing was "
                     "checked numerically")
    else:
        notes.append(f"custom Functions: {', '.join(functions)}; {checked.get('calls', 0)} "
                     f"backward call(s) checked, {checked.get('elements', 0)} element(s)")
        if checked.get("unchecked"):
            notes.append(f"{checked['unchecked']} backward call(s) not checked (past the "
                         f"{checked.get('budget', BUDGET):g} s budget, or inputs that are "
                         "not floating point)")
    backward = [p for p in trace.passes if p.kind == "backward"]
    passes = [backward[n - 1] for n in checked.get("passes", []) if 0 < n <= len(backward)]
    return Report(findings=one_per_line(found), trace=trace, error=trace.error,
                  checked_passes=passes, checkable_passes=len(backward),
                  checked_calls=int(checked.get("calls", 0)), runs=1,
                  passes_asked="sampled" if asked is None else asked,
                  budget=float(checked.get("budget", BUDGET)),
                  numerical_seconds=float(checked.get("seconds", 0.0)),
                  seconds=time.perf_counter() - started, notes=notes,
                  uncovered=[f"{checked['unchecked']} custom Function backward call(s) were "
                             f"not checked numerically"] if checked.get("unchecked") else [],
                  scope="each custom autograd Function's backward (built-in torch ops "
                        "are trusted)")


# -- as a runner job ---------------------------------------------------------------------


class TorchProbeJob(ProbeJob):
    """The doctor's first recording (`ProbeJob`), with custom torch Functions checked
    as their backward runs, if the scenario has any."""

    def __init__(self, passes: str | list[int] | None = None) -> None:
        super().__init__()
        self.checker = FunctionChecker(passes=passes)
        self.hooks = self.hooks._replace(on_function=self.checker)

    def result(self) -> dict:
        out = super().result()
        out["torch"] = self.checker.report()
        return out


def probe(passes: str | list[int] | None = None) -> TorchProbeJob:
    return TorchProbeJob(passes)
