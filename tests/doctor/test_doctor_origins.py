"""The line that computes the wrong value (issue 33, point 3): where in a faulty backward
the value was made (`mgtui.doctor.origins`), the line that builds a worklist order or
Kahn's count (`mgtui.doctor.order_lines`), and closures bound late
(`mgtui.doctor.late_binding`). Expected values come from the sources written here: the
line numbers are those of the statements named, counted in the text."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

from mgtui.doctor import origins
from mgtui.doctor.late_binding import late_names, late_text
from mgtui.doctor.order_lines import order_line


def load(tmp_path, name: str, source: str):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, str(path)


def line_of(path: str, text: str) -> int:
    lines = open(path).read().splitlines()
    (k,) = [i for i, s in enumerate(lines, 1) if text in s]
    return k


BACKWARDS = """
import numpy as np

def mean_backward(grad, shape, dim):
    n = np.prod(shape) if not dim else shape[dim]
    spread = np.expand_dims(grad, dim)
    return (np.broadcast_to(spread, shape) / n,)

def tanh_backward(t, grad):
    return ((1 - t) * grad,)

def accumulate(box, g):
    if box[0] is None:
        box[0] = g
    else:
        box[0] = box[0] + g

def relu_backward(box, grad):
    accumulate(box, grad * 2)

def local_backward(t, grad):
    d = 1 - t * t
    out = d * grad
    return out
"""


def equal_to(value):
    return lambda x: isinstance(x, np.ndarray) and x.shape == value.shape and bool(
        np.array_equal(x, value))


def test_the_value_is_found_where_a_return_holds_it_in_a_tuple(tmp_path):
    m, path = load(tmp_path, "origins_tuple", BACKWARDS)
    t, g = np.array([0.1, 0.5]), np.array([1.0, 2.0])
    made = origins.made_at(lambda: m.tanh_backward(t, g), equal_to((1 - t) * g))
    assert made is not None and made.line == line_of(path, "return ((1 - t) * grad,)")


def test_a_value_handed_to_a_helper_was_made_by_the_line_calling_it(tmp_path):
    m, path = load(tmp_path, "origins_helper", BACKWARDS)
    g = np.array([1.0, -2.0])
    made = origins.made_at(lambda: m.relu_backward([None], g), equal_to(g * 2))
    assert made is not None and made.line == line_of(path, "accumulate(box, grad * 2)")


def test_a_local_is_named_at_the_line_that_bound_it_not_the_return(tmp_path):
    m, path = load(tmp_path, "origins_local", BACKWARDS)
    t, g = np.array([0.1, 0.5]), np.array([1.0, 2.0])
    made = origins.made_at(lambda: m.local_backward(t, g), equal_to((1 - t * t) * g))
    assert made is not None and made.line == line_of(path, "out = d * grad")


def mean_target(grad, shape, dim, j=0, right=()):
    """What a numerical check would have measured of the right mean gradient
    (worked out by hand here: the mean over `dim` spreads grad / shape[dim])."""
    right_value = np.broadcast_to(np.expand_dims(grad, dim), shape) / shape[dim]
    dc = np.random.default_rng(3).uniform(-1, 1, size=shape) * 2e-6
    flat = right_value.reshape(-1)
    return origins.Target(j, float(flat[j]), {k: float(flat[k]) for k in right}, dc,
                          float(np.sum(right_value * dc)))


def test_a_count_off_by_a_factor_is_named_and_the_array_beside_it_said(tmp_path):
    m, path = load(tmp_path, "origins_mean", BACKWARDS)
    grad, shape = np.array([0.3, -0.6, 0.9]), (5, 3)
    wrong = m.mean_backward(grad, shape, 0)[0]
    same = equal_to(wrong)
    made = origins.made_at(lambda: m.mean_backward(grad, shape, 0), same)
    assert made.line == line_of(path, "return (np.broadcast_to(spread, shape) / n,)")
    found = origins.culprits(made, same, mean_target(grad, shape, 0))
    assert [c.name for c in found] == ["n", "spread"]
    assert origins.named(found) == (found[0], [found[1]])
    assert found[0].line == line_of(path, "n = np.prod(shape)")
    assert found[0].was == 15 and found[0].should == pytest.approx(5, rel=1e-6)
    assert found[1].was is None and found[1].should == pytest.approx(3, rel=1e-6)


def test_an_array_that_fits_scaled_is_not_named_on_its_own(tmp_path):
    m, path = load(tmp_path, "origins_sum_mean", """
        import numpy as np

        def unbroadcast(grad):
            g = grad.sum(axis=0, keepdims=True)
            g = g.mean(axis=1, keepdims=True)
            return g
        """)
    grad = np.array([[0.5, -1.0], [2.0, 0.25], [1.5, 1.0]])
    wrong = m.unbroadcast(grad)
    right = grad.sum(axis=0, keepdims=True).sum(axis=1, keepdims=True)  # the sum it needs
    dc = np.array([[1.3e-6]])
    target = origins.Target(0, float(right[0, 0]), {}, dc, float(np.sum(right * dc)))
    made = origins.made_at(lambda: m.unbroadcast(grad), equal_to(wrong))
    assert made.line == line_of(path, "g = g.mean(axis=1, keepdims=True)")
    found = origins.culprits(made, equal_to(wrong), target)
    assert [(c.name, c.was) for c in found] == [("g", None)]  # g scaled by 2 would fit
    assert origins.named(found) == (None, [])  # but the line named stays the mean's


def test_no_number_is_blamed_for_a_derivative_that_no_single_change_explains(tmp_path):
    m, path = load(tmp_path, "origins_tanh_local", """
        import numpy as np

        def backward(t, grad):
            scale = 1.0
            d = 1 - t
            return (scale * d * grad,)
        """)
    t, g = np.array([0.1, 0.5, -0.4]), np.array([1.0, 2.0, -1.0])
    wrong = m.backward(t, g)[0]
    right = (1 - t * t) * g
    dc = np.array([1e-6, -2e-6, 1.5e-6])
    target = origins.Target(0, float(right[0]), {}, dc, float(np.sum(right * dc)))
    made = origins.made_at(lambda: m.backward(t, g), equal_to(wrong))
    assert made.line == line_of(path, "return (scale * d * grad,)")
    assert origins.culprits(made, equal_to(wrong), target) == []


KAHN = """
from collections import deque

class Node:
    def backward(self):
        consumers, seen, stack = {}, {self}, [self]
        while stack:
            node = stack.pop()
            for p in node.parents:
                consumers[p] = consumers.get(p, 0) + 1
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        ready = deque([self])
        while ready:
            node = ready.popleft()
            node._backward()
            for p in node.parents:
                consumers[p] -= 1
                if consumers[p] == 0:
                    ready.append(p)
"""

WORKLIST = """
class Scalar:
    def backprop(self):
        order = self.ordered()
        while order:
            order.pop().backward_fn()

    def ordered(self):
        seen, order = set(), []
        def walk(s):
            if s not in seen:
                seen.add(s)
                for i in s.inputs:
                    walk(i)
                order.append(s)
        walk(self)
        return order
"""

BREADTH = """
from collections import deque

def backprop(root):
    queue = deque([root])
    while queue:
        node = queue.popleft()
        node.back()
        for c in node.children:
            queue.append(c)
"""


@pytest.mark.parametrize("source, call, built", [
    (KAHN, "node._backward()", "consumers[p] = consumers.get(p, 0) + 1"),
    (WORKLIST, "order.pop().backward_fn()", "order.append(s)"),
    (BREADTH, "node.back()", "queue.append(c)"),
], ids=["kahn-count", "popped-worklist", "breadth-first-queue"])
def test_a_worklist_order_is_named_where_it_is_built(source, call, built):
    text = textwrap.dedent(source)
    lines = text.splitlines()
    at = next(i for i, s in enumerate(lines, 1) if call in s)
    want = next(i for i, s in enumerate(lines, 1) if built in s)
    assert order_line(text, at, by_name=False) == want


LOOPS = """
def relu_all(xs):
    outs = []
    for x in xs:
        out = object()
        def late():
            return x, out
        def bound(x=x, out=out):
            return x, out
        outs.append((late, bound))
    return outs

def split(self, parts):
    for k in range(parts):
        lo, hi = k, k + 1
        f = lambda: self[lo:hi]
    return f
"""


def test_a_closure_made_in_a_loop_reading_its_variables_is_bound_late(tmp_path):
    _, path = load(tmp_path, "late_loops", LOOPS)
    assert late_names(path, line_of(path, "def late():")) == ["out", "x"]
    assert late_names(path, line_of(path, "def bound(x=x, out=out):")) == []
    assert late_names(path, line_of(path, "f = lambda: self[lo:hi]")) == ["hi", "lo"]
    assert "bound late" in late_text(path, line_of(path, "def late():"))
    assert late_text(path, line_of(path, "def bound(x=x, out=out):")) == ""


LINEAR = '''
import torch


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias):
        ctx.save_for_backward(input, weight, bias)
        return input.mm(weight.t()) + bias.unsqueeze(0).expand(input.size(0), -1)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if ctx.needs_input_grad[2]:
            grad_bias = BIAS
        return RETURN


def run():
    torch.manual_seed(0)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, dtype=torch.float64, requires_grad=True)
    (LinearFunction.apply(x, w, b) ** 2).sum().backward()
'''


@pytest.mark.parametrize("bias, returned, at", [
    ("grad_output.mean(0)", "grad_input, grad_weight, grad_bias", "grad_bias = grad_output.mean(0)"),
    ("grad_output.sum(0)", "grad_input, grad_weight, grad_bias * 2", "return grad_input"),
], ids=["wrong-local", "wrong-return"])
def test_a_torch_functions_wrong_gradient_is_named_where_it_was_made(tmp_path, bias, returned, at):
    pytest.importorskip("torch")
    import mgtui

    source = LINEAR.replace("BIAS", bias).replace("RETURN", returned)
    m, path = load(tmp_path, f"linear_{len(returned)}", source)
    (f,) = mgtui.check(m.run)
    assert (f.kind, f.op, f.file, f.line) == ("wrong-gradient", "LinearFunction", path,
                                              line_of(path, at))
