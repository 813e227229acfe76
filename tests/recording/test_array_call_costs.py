"""What recording a tensor engine's step costs in the runner's child, kept down without
changing what is recorded (issue 32): a custom op's closure reads only the numbers a
call's values can show (an array engine's `out.grad` is an array: read at the code's
first call only, and no more), and a closure's comment is not taken for an in-place
write into a grad (which would compare the grads it holds after every call)."""

from __future__ import annotations

import textwrap

from mgtui.recording.inplace_grads import may_write
from mgtui.recording.recorder import load_scenario
from mgtui.run.child import child_recorder
from mgtui.run.runner import run

TENSOR_OP = '''
import numpy as np
from engine.tensor import Tensor


def scaled_mean(t, k):
    """A custom op: its closure reads `n` and `k` (numbers) and out.grad (an array)."""
    n = t.data.size
    out = Tensor(t.data.mean() * k, (t,), 'scaled_mean')

    def _backward():
        t.grad += np.ones_like(t.data) * out.grad * k / n
    out._backward = _backward
    return out


W = Tensor(np.arange(6.0).reshape(2, 3), label='W')
for step in range(3):
    loss = scaled_mean(W * W, 2)
    W.grad = np.zeros_like(W.data)
    loss.backward()
    W.data -= 0.1 * W.grad
'''

SCALAR_OP = '''
from engine import Value


def halved(x):
    out = Value(x.data / 2, (x,), 'halved')

    def _backward():
        x.grad += 0.5 * out.grad
    out._backward = _backward
    return out


a = Value(3.0, label='a')
for step in range(3):
    loss = halved(a * a)
    a.grad = 0.0
    loss.backward()
    a.data -= 0.1 * a.grad
'''


def calls_of(trace, op: str) -> list[dict]:
    return [dict(trace.values_at(i)) for i in range(len(trace))
            if trace.kind(i) == "backward" and trace.op(trace.event_node(i)) == op]


def test_an_array_engines_op_shows_its_numbers_and_nodes_at_every_call(tmp_path):
    path = tmp_path / "tensor_op.py"
    path.write_text(TENSOR_OP)
    trace = run(path).trace
    calls = calls_of(trace, "scaled_mean")
    assert len(calls) == 3
    (w,) = trace.find("W")
    for values in calls:
        assert values["n"] == 6 and type(values["n"]) is int and values["k"] == 2
        assert {"t#", "out#"} <= set(values) and "out.grad" not in values
    assert len({values["out#"] for values in calls}) == 3  # each step's own node


def test_an_array_field_is_read_at_the_first_call_only_and_a_number_at_each(tmp_path):
    """The plan of a closure code that read an array field at its first call no longer
    reads it; a scalar engine's `out.grad` (a float) is read at every call."""
    for name, source, field, kept in (("tensor_op.py", TENSOR_OP, "out.grad", False),
                                      ("scalar_op.py", SCALAR_OP, "out.grad", True)):
        path = tmp_path / name
        path.write_text(source)
        recorder, values = child_recorder(load_scenario(path))
        error, output = recorder.execute()
        recorder.finish(error, output)
        assert error is None
        plans = [plan for _, _, plan in filter(None, values.plans.values())]
        reads = {shown for plan in plans for shown, _, _ in plan}
        assert (field in reads) is kept, (name, reads)
        assert kept or {"n", "k"} <= reads  # (the numbers: read at every call)
    trace = run(tmp_path / "scalar_op.py").trace
    calls = calls_of(trace, "halved")
    assert len(calls) == 3 and all(values["out.grad"] == 1.0 for values in calls)


CLOSURES = textwrap.dedent('''
    import numpy as np

    def matmul(a, b, out):
        def _backward():
            # out = A @ B: dL/dA = dL/dout @ Bt
            a.grad += out.grad @ b.data.T
        return _backward

    def sliced(a, out):
        def _backward():
            a.grad[:, 1:] += out.grad  # out = a[:, 1:]
        return _backward

    def into(a, out):
        def _backward():
            np.add(a.grad, out.grad, out=a.grad)  # "#" in a string: out = ...
        return _backward
''')


def test_a_comment_is_not_an_in_place_write(tmp_path):
    """The tensor engine's `@` closure says `# out = A @ B`: not an `out=` write (its
    grads were compared with their snapshots after every call); real writes still are."""
    path = tmp_path / "closures.py"
    path.write_text(CLOSURES)
    scope: dict = {}
    exec(compile(CLOSURES, str(path), "exec"), scope)
    assert not may_write(scope["matmul"](None, None, None).__code__)
    assert may_write(scope["sliced"](None, None).__code__)
    assert may_write(scope["into"](None, None).__code__)


SCALAR_SUM = '''
from engine import Value


def total(xs):
    out = Value(sum(x.data for x in xs), tuple(xs), 'sum')

    def _backward():
        for x in xs:
            x.grad += out.grad
    out._backward = _backward
    return out


a, b = Value(1.0, label='a'), Value(2.0, label='b')
loss = total([a, b])
loss.backward()
'''


def test_ops_the_array_explainer_works_out_read_nothing_on_arrays_only(tmp_path):
    """The tensor engine's `@`, `sum` and `mean` (`RULED_OPS`: the array explainer has a
    rule for each) read nothing at their calls, as the known ops `+` and `*` do; a
    scalar engine's custom op named `sum` still shows its values."""
    from mgtui.recording.array_values import RULED_OPS
    from mgtui.trace.explain_arrays import local_rule

    assert all(local_rule(op, "out", ["x", "y"]) for op in RULED_OPS)
    path = tmp_path / "lesson.py"
    path.write_text(TENSOR_OP.replace("loss = scaled_mean(W * W, 2)",
                                      "loss = scaled_mean(((W @ Tensor(np.ones((3, 3)))).sum() + W.mean()) * W, 2)"))
    trace = run(path).trace
    for op in ("@", "sum", "mean"):
        assert calls_of(trace, op) and not any(calls_of(trace, op)), op
    assert all(values["n"] == 6 for values in calls_of(trace, "scaled_mean"))
    path = tmp_path / "scalar_sum.py"
    path.write_text(SCALAR_SUM)
    trace = run(path).trace
    (values,) = calls_of(trace, "sum")
    assert values["out.grad"] == 1.0 and "out#" in values
