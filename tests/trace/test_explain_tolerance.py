"""The working's "differs from what @'s rule gives" note fits the dtype it compares: a
float32 matrix product that torch (or numpy) rounded in float32 is not reported, even
where an element cancels near zero, while a wrong rule planted in a tensor engine (a
doubled gradient, a missing transpose, a flipped sign) is reported, in float32 and in
float64, at the first element it got wrong.

The elements a planted rule gets wrong are worked out here with numpy in float64 from
the recorded inputs (the right rule, Xᵀ·g and g·Wᵀ, against the planted one); never
from mgtui's own output.
"""

from __future__ import annotations

import numpy as np
import pytest

from mgtui.recording.recorder import record
from mgtui.session import Session
from mgtui.trace import EventKind
from mgtui.trace.engines import explain
from mgtui.trace.tolerance import allowed

# A makemore-like float32 step: two matrix products with inner dimensions of a few dozen
# (30 and 36, in the backward pass 27 and 36 too), a tanh between them and a
# cross-entropy loss; h is used twice, so that its second contribution is added to the
# first (rounded to float32 at the size of the sum). Row 3 of V is one number repeated: as each row of the loss's
# gradient sums to 0, column 3 of h.grad = g · Vᵀ is 0 in exact arithmetic, and what
# float32 leaves there is its rounding only.
TORCH_F32 = '''
    """float32 products that cancel"""
    import torch
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(7)
    X = (3 * torch.randn((36, 32), generator=g)).requires_grad_()
    W = (3 * torch.randn((32, 30), generator=g)).requires_grad_()
    V = torch.randn((30, 27), generator=g)
    V[3] = 2.5
    V.requires_grad_()
    U = torch.randn((30, 27), generator=g).requires_grad_()
    Y = torch.randint(0, 27, (36,), generator=g)
    h = torch.tanh(X @ W / 40)
    loss = F.cross_entropy(h @ V + h @ U, Y)
    loss.backward()
'''

# A tensor engine's `@` with a planted wrong rule, in a given dtype: `{bug}` is the
# statement that writes W.grad (X.grad's is right). X: (6, 24), W: (24, 24) square, so
# that a missing transpose runs. X[:, 0] is made orthogonal to g[:, 0], so that the right
# W.grad[0, 0] is (near) 0: a doubled or negated gradient is wrong there by nothing.
PLANTED = '''
    """a planted matmul bug in {dtype}"""
    import numpy as np

    from engine.tensor import Tensor

    def cast(t):
        t.data = t.data.astype(np.{dtype})
        t.grad = np.zeros_like(t.data)
        return t

    def matmul(X, W):
        out = cast(Tensor(X.data @ W.data, (X, W), '@'))

        def _backward():
            X.grad += out.grad @ W.data.T
            {bug}
        out._backward = _backward
        return out

    rng = np.random.default_rng(3)
    C = rng.normal(size=(6, 24))
    x = rng.normal(size=(6, 24))
    x[-1, 0] = -(x[:-1, 0] @ C[:-1, 0]) / C[-1, 0]
    X = cast(Tensor(x, label='X'))
    W = cast(Tensor(rng.normal(size=(24, 24)), label='W'))
    out = matmul(X, W); out.label = 'out'
    loss = (out * Tensor(C)).sum(); loss.label = 'loss'
    loss.backward()
'''
BUGS = {
    "doubled": ("W.grad += 2 * (X.data.T @ out.grad)", lambda x, g: 2 * (x.T @ g)),
    "transposed": ("W.grad += out.grad.T @ X.data", lambda x, g: g.T @ x),
    "negated": ("W.grad -= X.data.T @ out.grad", lambda x, g: -(x.T @ g)),
}


def backward_workings(trace):
    """Every backward step's working, in order."""
    session = Session(trace)
    for i in trace.events_of(EventKind.BACKWARD):
        session.goto(i + 1)
        yield i, explain(trace, session.timeline.data, session.timeline.grad, i)


def matmul_contributions(trace):
    return [(i, ex, c) for i, ex in backward_workings(trace)
            for c in ex.contributions if "·" in c.formula]


def test_float32_products_rounded_by_torch_are_not_reported(write_scenario):
    trace = record(write_scenario("f32_cancel", TORCH_F32))
    for i, ex in backward_workings(trace):
        assert not [n for n in ex.notes if "differs" in n], (i, ex.title, ex.notes)
        assert not any(c.mismatch for c in ex.contributions), (i, ex.title)
    worked = matmul_contributions(trace)
    # all six of the three products' gradients were worked out, in float32, with sums of
    # the inner dimensions asked for, one of them added to a grad already there
    assert len(worked) == 6 and all(c.expected is not None for _, _, c in worked)
    assert {c.after.dtype for _, _, c in worked} == {"float32"}
    assert {c.terms for _, _, c in worked} == {27, 30, 36}
    (second,) = [c for _, _, c in worked if c.label == "h" and c.nth == 2]
    assert any(second.before.values)
    rounded = cancelled = 0
    for _, _, c in worked:
        e = np.array(c.expected.values)
        d = np.array(c.delta.values)
        big = np.abs(e).max()
        rounded += bool(np.any(d != e))  # (float32 did round: the check is not trivial)
        cancelled += bool(np.any((np.abs(e) < 1e-5 * big) & (d != e)))
    assert rounded == 6 and cancelled >= 1


def planted_inputs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """`PLANTED`'s X and out.grad (C, rounded to `dtype`), made as it makes them."""
    rng = np.random.default_rng(3)
    C = rng.normal(size=(6, 24))
    x = rng.normal(size=(6, 24))
    x[-1, 0] = -(x[:-1, 0] @ C[:-1, 0]) / C[-1, 0]
    return (x.astype(dtype).astype(np.float64), C.astype(dtype).astype(np.float64))


def first_wrong(right: np.ndarray, planted: np.ndarray) -> tuple[int, ...]:
    """The first element (C order) where the planted rule is wrong by more than a
    thousandth of the array's largest: no rounding comes near that."""
    wrong = np.abs(planted - right) > 1e-3 * np.abs(right).max()
    return tuple(int(k) for k in np.unravel_index(int(np.flatnonzero(wrong)[0]), right.shape))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bug", sorted(BUGS))
def test_a_planted_wrong_matmul_rule_is_reported_at_its_first_wrong_element(
        write_scenario, dtype, bug):
    statement, rule = BUGS[bug]
    trace = record(write_scenario(f"{bug}_{dtype}", PLANTED.format(dtype=dtype, bug=statement)))
    (found,) = [(ex, {c.label: c for c in ex.contributions})
                for _, ex, c in matmul_contributions(trace) if c.label == "W"]
    ex, by_label = found
    w, x = by_label["W"], by_label["X"]
    assert w.after.dtype == x.after.dtype == dtype
    xs, g = planted_inputs(dtype)
    right, planted = xs.T @ g, rule(xs, g)
    where = first_wrong(right, planted)
    assert where != (0, 0)  # (the right W.grad[0, 0] is 0: wrong there by nothing)
    assert f"the recorded change to W.grad differs from what @'s rule gives at element {where}" \
        in ex.notes
    assert w.differs_at == where and not x.mismatch  # (X.grad's rule is right)


def test_the_tolerance_is_the_dtypes():
    """float32 allows what float32 rounding of a sum does, float64 far less, float16 and
    bfloat16 more; an unknown dtype is compared as float64."""
    f64, f32 = allowed("float64", 30, 1.0), allowed("float32", 30, 1.0)
    assert f64 == (1e-6, 1e-9)  # (what the working always allowed, at scale 1)
    assert f32[1] == pytest.approx(2 * 30 * 2.0 ** -24)
    assert allowed("float32", 30, 100.0)[1] == pytest.approx(100 * f32[1])
    assert f32[1] < allowed("torch.float16", 30, 1.0)[1] < allowed("bfloat16", 30, 1.0)[1]
    assert allowed("int64", 30, 1.0) == f64
