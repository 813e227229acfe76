"""`engine.tensor`, the lesson's numpy engine: every op's gradient against central
finite differences, and the tensor neuron against the lecture's figures."""

import runpy
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")

from engine.tensor import Tensor, unbroadcast  # noqa: E402

SCENARIOS = Path(__file__).resolve().parent.parent.parent / "scenarios"


def numeric_grad(f, arrays, i, eps=1e-6):
    """d f(*arrays) / d arrays[i], element by element, by central differences."""
    base = [a.copy() for a in arrays]
    grad = np.zeros_like(base[i])
    for idx in np.ndindex(base[i].shape):
        plus = [a.copy() for a in base]
        minus = [a.copy() for a in base]
        plus[i][idx] += eps
        minus[i][idx] -= eps
        grad[idx] = (f(*plus) - f(*minus)) / (2 * eps)
    return grad


def tensor_grads(build, arrays):
    ts = [Tensor(a) for a in arrays]
    build(*ts).sum().backward()
    return [t.grad for t in ts]


rng = np.random.default_rng(7)
A = rng.uniform(0.5, 2.0, (3, 4))
B = rng.uniform(0.5, 2.0, (4, 2))
ROW = rng.uniform(0.5, 2.0, (1, 4))
COL = rng.uniform(0.5, 2.0, (3, 1))

CASES = {
    "add broadcast row": (lambda a, b: a + b, [A, ROW]),
    "add broadcast col": (lambda a, b: a + b, [A, COL]),
    "mul broadcast": (lambda a, b: a * b, [A, ROW]),
    "matmul": (lambda a, b: a @ b, [A, B]),
    "pow": (lambda a: a ** 3, [A]),
    "mean": (lambda a: a.mean() * a, [A]),
    "relu": (lambda a, b: (a - b).relu(), [A, ROW]),
    "tanh": (lambda a: a.tanh(), [A]),
    "exp": (lambda a: a.exp(), [A]),
    "log": (lambda a: a.log(), [A]),
    "div sub": (lambda a, b: (a - 1) / b, [A, COL]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_gradients_match_finite_differences(name):
    build, arrays = CASES[name]
    got = tensor_grads(build, arrays)

    def plain(*xs):
        return float(build(*[Tensor(x) for x in xs]).sum().data)

    for i, array in enumerate(arrays):
        want = numeric_grad(plain, arrays, i)
        assert got[i].shape == array.shape
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-7)


def test_unbroadcast_sums_added_and_stretched_axes():
    g = np.ones((2, 3, 4))
    assert unbroadcast(g, (3, 1)).tolist() == [[8.0]] * 3  # 2 × 4 elements each
    assert unbroadcast(g, (4,)).tolist() == [6.0] * 4


def test_tensor_neuron_gives_the_lecture_gradients():
    ns = runpy.run_path(str(SCENARIOS / "tensor_neuron.py"))
    assert ns["o"].data.item() == pytest.approx(0.7071, abs=1e-4)
    np.testing.assert_allclose(ns["x"].grad, [[-1.5, 0.5]])
    np.testing.assert_allclose(ns["w"].grad, [[1.0], [0.0]], atol=1e-12)
    assert ns["b"].grad.item() == pytest.approx(0.5)


@pytest.mark.parametrize("bug", ["unbroadcast_mean", "matmul_transposed", "tensor_overwrite"])
def test_the_bug_scenarios_do_compute_wrong_gradients(bug):
    """Each bug is real: its input's gradient differs from finite differences."""
    ns = runpy.run_path(str(SCENARIOS / "bugs" / f"{bug}.py"))
    name = {"unbroadcast_mean": "b", "matmul_transposed": "W", "tensor_overwrite": "x"}[bug]
    node = ns[name]
    want = numeric_grad(lambda v: _rerun_loss(ns, name, v), [node.data], 0)
    assert not np.allclose(node.grad, want, rtol=1e-4)


def _rerun_loss(ns, name, value):
    """The bug scenario's loss with `name`'s data replaced, computed in plain numpy."""
    d = {k: ns[k].data for k in ("X", "W", "b", "x", "c") if k in ns and hasattr(ns[k], "data")}
    d[name] = value
    if "c" in d:
        return float((d["x"] * d["x"] + d["x"] * d["c"]).sum())
    if "b" in d:
        return float(np.tanh(d["X"] @ d["W"] + d["b"]).sum())
    y = d["X"] @ d["W"]
    return float((y * y).mean())


def test_no_broadcast_sum_leaves_a_grad_of_the_wrong_shape():
    ns = runpy.run_path(str(SCENARIOS / "bugs" / "no_broadcast_sum.py"))
    assert ns["b"].grad.shape != ns["b"].data.shape
