"""The corpus's cases as data, and how one is run and judged (no tests here).

Each engine module in this directory is correct and runs a small scenario as a script.
A planted bug is that module with one line changed (`old` becomes `new`, marked
`# BUG`), written to a temporary file; what the doctor must say about it is in its
`Planted` row. `tests/doctor/test_corpus.py` runs the rows that pass today; the others are in
`pending.py`, with what mgtui says today. `measure.py` times them all. Each case goes
through the doctor twice: on the file (`check`, as `mgtui FILE --check`) and in this
process on its `train` function (`check(fn)`, as `mgtui.check(train)`).
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

# engine module -> its torch twin (a tensor engine), or None (a scalar engine)
ENGINES = {
    "scalar_value_field": None,
    "scalar_inputs_backward_fn": None,
    "scalar_grad_rebind": None,
    "tensor_unbroadcast": "tensor_unbroadcast_torch",
    "tensor_grad_elements": "tensor_grad_elements_torch",
    "tensor_function_ctx": "tensor_function_ctx_torch",
    "tensor_grad_none": "tensor_grad_none_torch",
}

BUG = "# BUG"
OFF_DIAGONAL = "off-diagonal"  # an element (i, j) with i != j: a transposed gradient


@dataclass(frozen=True)
class Planted:
    """One planted bug and the one finding the doctor must give for it."""

    engine: str
    name: str
    old: str  # the correct text, exactly once in the engine
    new: str  # what it becomes
    kind: str
    ops: tuple[str, ...]  # the finding's op, one of these
    at: str = BUG  # the text of the line the finding must name
    labels: tuple[str, ...] = ()  # the finding's node label, one of these (() = any)
    input: str | None = None  # the label of the input whose grad is off
    element: tuple[int, ...] | str | None = None  # that input's element (or OFF_DIAGONAL)
    says: str | None = None  # a phrase the finding's message must hold

    @property
    def id(self) -> str:
        return f"{self.engine}:{self.name}"

    def source(self) -> str:
        text = (HERE / f"{self.engine}.py").read_text()
        assert text.count(self.old) == 1, (self.id, self.old)
        start = text.index(self.old)
        text = text[:start] + self.new + text[start + len(self.old):]
        line_end = text.index("\n", start)  # the mark goes on the new text's first line
        return text[:line_end] + f"  {BUG}" + text[line_end:]

    def write(self, folder: Path) -> Path:
        path = folder / f"{self.engine}__{self.name}.py"
        path.write_text(self.source())
        return path


def line_of(path: Path, text: str) -> int:
    found = [i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s]
    assert len(found) == 1, (path.name, text, found)
    return found[0]


S1, S2, S3 = "scalar_value_field", "scalar_inputs_backward_fn", "scalar_grad_rebind"
T1, T2, T3 = "tensor_unbroadcast", "tensor_grad_elements", "tensor_function_ctx"
T4 = "tensor_grad_none"
BACKWARD_CALL = "loss.backward()"

PLANTED = [
    # -- Value(value, _children set, _op), recursive sort, `+=`, Neuron.zero_grad
    Planted(S1, "tanh_derivative", "self.grad += (1 - t * t) * out.grad",
            "self.grad += (1 - t) * out.grad", "wrong-derivative", ("tanh",)),
    Planted(S1, "add_overwrite", "            self.grad += out.grad\n            other.grad += out.grad",
            "            self.grad = out.grad\n            other.grad += out.grad",
            "overwrite", ("+",), at="self.grad = out.grad"),
    Planted(S1, "no_zero_grad", "        model.zero_grad()", "        pass", "missing-zero-grad",
            ("",), at=BACKWARD_CALL, labels=("w0", "w1", "b")),
    # -- Scalar(val, inputs tuple, op words), backward_fn, popped post-order list
    Planted(S2, "queue_twice", "                order.append(s)", "            order.append(s)",
            "repeated-backward", ("exp", "relu", "add", "mul", "pow-1")),
    Planted(S2, "exp_derivative", "self.grad += out.val * out.grad",
            "self.grad += self.val * out.grad", "wrong-derivative", ("exp",)),
    Planted(S2, "late_bound_relu", "def fn(x=x, out=out):", "def fn():", "foreign-write",
            ("relu",), at="x.grad += (out.val > 0) * out.grad", says="bound late"),
    # -- Node(data, parents list, op words), `grad = grad + …`, Kahn's sort
    Planted(S3, "sigmoid_derivative", "self.grad = self.grad + s * (1 - s) * out.grad",
            "self.grad = self.grad + (1 - s) * out.grad", "wrong-derivative", ("sigmoid",)),
    Planted(S3, "mul_overwrite", "self.grad = self.grad + other.data * out.grad",
            "self.grad = other.data * out.grad", "overwrite", ("mul",)),
    Planted(S3, "kahn_counts_once", "consumers[p] = consumers.get(p, 0) + 1",
            "consumers[p] = 1", "topo-order", ("sigmoid",)),
    Planted(S3, "no_zero_grad", "            q.grad = 0.0", "            pass",
            "missing-zero-grad", ("",), at=BACKWARD_CALL, labels=("w1", "w2", "bias")),
    # -- numpy Tensor, unbroadcast, Tensor(1), integer labels in the graph
    Planted(T1, "unbroadcast_mean", "grad = grad.sum(axis=axis, keepdims=True)",
            "grad = grad.mean(axis=axis, keepdims=True)", "wrong-derivative", ("+",),
            input="b", element=(0, 0)),
    Planted(T1, "matmul_transposed", "other.grad += self.data.T @ out.grad",
            "other.grad += out.grad.T @ self.data", "wrong-derivative", ("@",),
            input="V", element=OFF_DIAGONAL),
    Planted(T1, "sigmoid_derivative", "self.grad += s * (1 - s) * out.grad",
            "self.grad += (1 - s) * out.grad", "wrong-derivative", ("sigmoid",),
            labels=("z",), element=(0, 0)),
    Planted(T1, "mul_overwrite", "self.grad += unbroadcast(other.data * out.grad, self.data.shape)",
            "self.grad = unbroadcast(other.data * out.grad, self.data.shape)", "overwrite",
            ("*",), element=(0, 0)),
    Planted(T1, "no_zero_grad", "        model.zero_grad()", "        pass",
            "missing-zero-grad", ("",), at=BACKWARD_CALL, labels=("W", "b", "Wz", "V")),
    # -- numpy Tensor on a tape: np.add.at, grad[:, lo:hi] +=, grad[rows, labels] -=
    Planted(T2, "index_add_drops_repeats", "np.add.at(self.grad, tokens, out.grad)",
            "self.grad[tokens] += out.grad", "wrong-derivative", ("embedding",),
            labels=("h",), input="E", element=(1, 0)),
    Planted(T2, "late_bound_split", "def _backward(part=part, lo=lo, hi=hi):",
            "def _backward():", "wrong-derivative", ("split",),
            at="self.grad[:, lo:hi] += part.grad", input="h", says="bound late"),
    Planted(T2, "cross_entropy_unscaled", "self.grad[np.arange(n), labels] -= out.grad / n",
            "self.grad[np.arange(n), labels] -= out.grad", "wrong-derivative",
            ("cross_entropy",), labels=("loss",), element=(0, 2)),
    Planted(T2, "no_zero_grad", "            p.grad = np.zeros_like(p.data)", "            pass",
            "missing-zero-grad", ("",), at=BACKWARD_CALL, labels=("E", "W1", "W2")),
    # -- Function classes with ctx, op = class name, Kahn's sort with a deque
    Planted(T3, "mean_not_dim", "n = np.prod(shape) if dim is None else shape[dim]",
            "n = np.prod(shape) if not dim else shape[dim]", "wrong-derivative", ("Mean",),
            input="err", element=(0, 0)),
    Planted(T3, "matmul_transposed", "grad_w = x.T @ grad", "grad_w = grad.T @ x",
            "wrong-derivative", ("MatMul",), input="W", element=OFF_DIAGONAL),
    Planted(T3, "tanh_derivative", "return ((1 - t * t) * grad,)", "return ((1 - t) * grad,)",
            "wrong-derivative", ("Tanh",), labels=("h",), element=(0, 0)),
    Planted(T3, "no_zero_grad", "        opt.zero_grad()", "        pass", "missing-zero-grad",
            ("",), at=BACKWARD_CALL, labels=("W", "b")),
    # -- numpy Tensor, grad None until written, requires_grad, op words, explicit stack
    Planted(T4, "relu_unmasked", "self._accumulate(out.grad * (self.data > 0))",
            "self._accumulate(out.grad)", "wrong-derivative", ("relu",), labels=("h",),
            element=(0, 0)),
    Planted(T4, "accumulate_overwrites", "self.grad = g if self.grad is None else self.grad + g",
            "self.grad = g", "overwrite", ("add", "sub", "matmul", "relu", "square", "mean")),
    Planted(T4, "mean_over_rows", "np.full(self.data.shape, out.grad / self.data.size)",
            "np.full(self.data.shape, out.grad / self.data.shape[0])", "wrong-derivative",
            ("mean",), labels=("penalty",), element=(0, 0)),
    Planted(T4, "no_zero_grad", "            p.grad = None", "            pass",
            "missing-zero-grad", ("",), at=BACKWARD_CALL, labels=("W1", "b1", "W2")),
]

# the planted bugs `mgtui diff` must name against the engine's torch twin, at the line
DIFFED = [p for p in PLANTED if ENGINES[p.engine] and p.kind == "wrong-derivative"]


def load_module(path: Path, name: str):
    """An engine file imported as a module (its scenario runs only as a script), kept in
    `sys.modules`, where the in-process recorder looks for Value classes."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def check_in_process(path: Path, name: str):
    """`mgtui.check(train)` on the engine file's training function: the doctor's report,
    or the error it raised."""
    import mgtui

    try:
        return mgtui.check(load_module(path, name).train).report
    except Exception as error:  # noqa: BLE001 - what it raised is the verdict
        return error


def summary(report) -> str:
    """What the doctor said, in one line: each finding's kind, node, op, line, element."""
    if isinstance(report, Exception):
        return f"raised {type(report).__name__}: {report}"
    if not report.findings:
        verdict = "no finding"
        if report.unchecked:
            verdict += f" ({report.unchecked})"
        return verdict
    parts = []
    for f in report.findings:
        where = f"{Path(f.file).name}:{f.line}" if f.line else "no line"
        element = f" element {f.element}" if f.element is not None else ""
        parts.append(f"{f.kind} on {f.label} (op {f.op or '-'}) at {where} `{f.text.strip()}`"
                     f"{element}")
    return "; ".join(parts)


def judge_clean(report) -> list[str]:
    """What is wrong with the doctor's verdict on a correct twin ([] if it is right)."""
    if isinstance(report, Exception):
        return [f"raised {type(report).__name__}"]
    wrong = [f"finding: {f.kind} on {f.label} at line {f.line}" for f in report.findings]
    if report.error is not None:
        wrong.append(f"the scenario raised: {report.error}")
    if report.checked_pass is None or report.unchecked:
        wrong.append(f"not checked numerically: {report.unchecked}")
    return wrong


def is_parameter(trace, node: int) -> bool:
    """Whether the scenario changed the node's data outside a backward pass (an update)."""
    return any(trace.kind(i) == "data" and trace.event_node(i) == node
               for i in range(len(trace)))


def judge_planted(case: Planted, path: Path, report, by_name: bool = True) -> list[str]:
    """What is wrong with the doctor's verdict on a planted bug ([] if it is right).
    `by_name`: check the node's label too (in-process, nodes without a `label` field
    are not named by the variables of the function that made them)."""
    if isinstance(report, Exception):
        return [f"raised {type(report).__name__}"]
    if len(report.findings) != 1:
        return [f"{len(report.findings)} findings, not 1"]
    f = report.findings[0]
    t = report.trace
    wrong = []
    if f.kind != case.kind:
        wrong.append(f"kind {f.kind}, not {case.kind}")
    if case.ops != ("",) and f.op not in case.ops:
        wrong.append(f"op {f.op}, not one of {case.ops}")
    if by_name and case.labels and f.label not in case.labels:
        wrong.append(f"node {f.label}, not one of {case.labels}")
    if f.kind == "missing-zero-grad" and not is_parameter(t, f.node):
        wrong.append(f"node {f.label} is not a parameter (its data is never updated)")
    if Path(f.file).resolve() != path.resolve() or f.line != line_of(path, case.at):
        wrong.append(f"line {Path(f.file).name}:{f.line}, not {line_of(path, case.at)}")
    if case.input is not None and (f.input is None or t.label(f.input) != case.input) and (
            by_name or f.input not in t.children(f.node)):
        # (by label; in-process, where an unlabelled input goes by `#n`, one of the
        # node's inputs)
        wrong.append(f"input {None if f.input is None else t.label(f.input)}, not {case.input}")
    if case.element == OFF_DIAGONAL:
        if f.element is None or len(f.element) != 2 or f.element[0] == f.element[1]:
            wrong.append(f"element {f.element}, not off the diagonal")
    elif case.element is not None and f.element != case.element:
        wrong.append(f"element {f.element}, not {case.element}")
    if case.says and case.says not in f.message:
        wrong.append(f"the message does not say {case.says!r}")
    return wrong


def judge_diff_clean(code: int, doc: dict) -> list[str]:
    """What is wrong with `mgtui diff --json` of a correct engine against its torch twin."""
    wrong = []
    if code != 0 or not doc.get("agree") or doc.get("partial"):
        wrong.append(f"exit {code}, agree {doc.get('agree')}, partial {doc.get('partial')}")
    if doc.get("difference") is not None:
        wrong.append(f"a difference: {doc['difference'].get('message')}")
    return wrong


def judge_diff_planted(case: Planted, path: Path, code: int, doc: dict) -> list[str]:
    """What is wrong with `mgtui diff --json` of a planted bug against the torch twin."""
    d = doc.get("difference")
    if code != 1 or d is None:
        return [f"exit {code}, no difference named"]
    a = d["a"]
    wrong = []
    if d["kind"] != "grad" or d["backward_pass"] != 1:
        wrong.append(f"a {d['kind']} difference in backward pass {d['backward_pass']}")
    if a.get("writer_op") not in case.ops:
        wrong.append(f"written by {a.get('writer_label')} (op {a.get('writer_op')}), "
                     f"not an op in {case.ops}")
    place = a.get("place") or ""
    if not place.endswith(f"{path.name}:{line_of(path, case.at)}"):
        wrong.append(f"place {place or None}, not line {line_of(path, case.at)}")
    return wrong


def diff_summary(doc: dict) -> str:
    d = doc.get("difference")
    if d is None:
        return (f"no difference; agree {doc.get('agree')}, partial {doc.get('partial')}, "
                f"{doc.get('aligned')} aligned")
    a = d["a"]
    return (f"{d['kind']} difference in pass {d['backward_pass']} on {a.get('label')} written by "
            f"{a.get('writer_label')} (op {a.get('writer_op')}) at {a.get('place')}")
