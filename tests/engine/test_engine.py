"""Tests for engine/: every op against central finite differences and against PyPI micrograd.

Expected numbers come from finite differences, from micrograd 0.1.0 running the same
expressions, or from micrograd's own test file, never from this engine's output.
"""

import math
import random

import micrograd.engine
import micrograd.nn
import pytest

from engine import Value
from engine.nn import MLP, Layer, Neuron


# --- every op against central finite differences -------------------------------------

def relu(x):
    return x.relu() if isinstance(x, Value) else max(0.0, x)


def tanh(x):
    return x.tanh() if isinstance(x, Value) else math.tanh(x)


def exp(x):
    return x.exp() if isinstance(x, Value) else math.exp(x)


# Each expression runs on plain floats (for finite differences) and on Values.
OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow2": lambda a, b: a ** 2,
    "pow3": lambda a, b: a ** 3,
    "pow-1": lambda a, b: a ** -1,
    "pow0.5": lambda a, b: b ** 0.5,
    "pow-2.5": lambda a, b: b ** -2.5,
    "neg": lambda a, b: -a,
    "radd": lambda a, b: 2 + a,
    "rsub": lambda a, b: 1 - a,
    "rmul": lambda a, b: 2 * a,
    "rtruediv": lambda a, b: 1 / a,
    "add_const": lambda a, b: a + 2,
    "sub_const": lambda a, b: a - 1,
    "mul_const": lambda a, b: a * 3,
    "div_const": lambda a, b: a / 4,
    "relu_pos": lambda a, b: relu(b),
    "relu_neg": lambda a, b: relu(a),
    "tanh": lambda a, b: tanh(a),
    "exp": lambda a, b: exp(a),
    "same_input_twice": lambda a, b: a * a + a,
    "composite": lambda a, b: tanh(a * b + exp(b) / (1 - a)) ** 2 - relu(b - a),
}

A, B = -1.3, 0.8  # a is negative (relu_neg is dead there), b is positive


def central_difference(f, args, i, h=1e-6):
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    return (f(*up) - f(*down)) / (2 * h)


@pytest.mark.parametrize("name", OPS)
def test_op_matches_finite_differences(name):
    f = OPS[name]
    a, b = Value(A), Value(B)
    out = f(a, b)
    out.backward()
    assert out.data == pytest.approx(f(A, B), rel=1e-12)
    assert a.grad == pytest.approx(central_difference(f, (A, B), 0), rel=1e-6, abs=1e-8)
    assert b.grad == pytest.approx(central_difference(f, (A, B), 1), rel=1e-6, abs=1e-8)


def test_relu_passes_no_gradient_when_dead():
    a = Value(-2.0)
    out = a.relu()
    out.backward()
    assert out.data == 0
    assert a.grad == 0


# --- reflected ops and op labels -----------------------------------------------------

@pytest.mark.parametrize("expr, data, a_grad", [
    (lambda a: 2 + a, 5.0, 1.0),
    (lambda a: 1 - a, -2.0, -1.0),
    (lambda a: 2 * a, 6.0, 2.0),
    (lambda a: 1 / a, 1 / 3, -1 / 9),
])
def test_reflected_ops(expr, data, a_grad):
    a = Value(3.0)
    out = expr(a)
    assert isinstance(out, Value)
    out.backward()
    assert out.data == pytest.approx(data)
    assert a.grad == pytest.approx(a_grad)


def test_constants_are_wrapped_in_values():
    a = Value(3.0)
    out = 2 * a
    assert out._prev[0] is a
    assert isinstance(out._prev[1], Value) and out._prev[1].data == 2


@pytest.mark.parametrize("exponent, label", [(2, "**2"), (3, "**3"), (-1, "**-1"), (0.5, "**0.5")])
def test_pow_label_holds_the_exponent(exponent, label):
    assert (Value(2.0) ** exponent)._op == label


def test_pow_needs_a_number_exponent():
    with pytest.raises(AssertionError):
        Value(2.0) ** Value(3.0)


def test_op_labels():
    a, b = Value(2.0), Value(3.0)
    assert (a + b)._op == "+"
    assert (a * b)._op == "*"
    assert (a - b)._op == "+"  # a + (-b)
    assert (-a)._op == "*"  # a * -1
    assert (a / b)._op == "*"  # a * b**-1
    assert a.relu()._op == "ReLU"
    assert a.tanh()._op == "tanh"
    assert a.exp()._op == "exp"
    assert a._op == ""


def test_fields_and_repr():
    a = Value(2.0, label="a")
    assert (a.data, a.grad, a._prev, a._op, a.label) == (2.0, 0, (), "", "a")
    assert a._backward() is None
    assert repr(a) == "Value(data=2.0, grad=0)"
    assert Value(1.0).label == ""


def test_tanh_matches_the_lecture_formula():
    for x in (-3.0, -0.5, 0.0, 0.8813735870195432, 2.0):
        expected = (math.exp(2 * x) - 1) / (math.exp(2 * x) + 1)
        assert Value(x).tanh().data == pytest.approx(expected, rel=1e-12, abs=1e-15)


# --- against PyPI micrograd ----------------------------------------------------------

def random_expression(rng, cls, n_leaves=4, n_ops=40):
    """A random graph with fan-out and repeated inputs, built from a seeded rng.

    Building it twice with the same seed, once per Value class, gives the same graph,
    since the rng draws do not depend on the class.
    """
    nodes = [cls(rng.uniform(-2, 2)) for _ in range(n_leaves)]
    leaves = list(nodes)
    for _ in range(n_ops):
        op = rng.choice(["+", "-", "*", "/", "r+", "r-", "r*", "r/", "neg", "relu", "**2", "**3", "**-1"])
        a, b, c = rng.choice(nodes), rng.choice(nodes), rng.uniform(-2, 2)
        if op in ("/", "r/", "**-1") and abs((b if op == "/" else a).data) < 0.3:
            continue
        out = {
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
            "r+": lambda: c + a, "r-": lambda: c - a, "r*": lambda: c * a, "r/": lambda: c / a,
            "neg": lambda: -a, "relu": lambda: a.relu(),
            "**2": lambda: a ** 2, "**3": lambda: a ** 3, "**-1": lambda: a ** -1,
        }[op]()
        if abs(out.data) < 1e3:
            nodes.append(out)
    root = sum(nodes[-5:], cls(0.0))
    return root, leaves, nodes


@pytest.mark.parametrize("seed", range(30))
def test_random_expressions_match_micrograd(seed):
    ours, our_leaves, our_nodes = random_expression(random.Random(seed), Value)
    theirs, their_leaves, their_nodes = random_expression(random.Random(seed), micrograd.engine.Value)
    ours.backward()
    theirs.backward()
    assert len(our_nodes) == len(their_nodes)
    assert ours.data == pytest.approx(theirs.data, rel=1e-12, abs=1e-12)
    for mine, ref in zip(our_nodes, their_nodes):
        assert mine.data == pytest.approx(ref.data, rel=1e-12, abs=1e-12)
        assert mine.grad == pytest.approx(ref.grad, rel=1e-9, abs=1e-9)


def sanity_check(cls):
    """micrograd's test/test_engine.py: test_sanity_check."""
    x = cls(-4.0)
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    return x, y


def more_ops(cls):
    """micrograd's test/test_engine.py: test_more_ops."""
    a = cls(-4.0)
    b = cls(2.0)
    c = a + b
    d = a * b + b**3
    c += c + 1
    c += 1 + c + (-a)
    d += d * 2 + (b + a).relu()
    d += 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    g += 10.0 / f
    g.backward()
    return a, b, g


def test_micrograd_sanity_check():
    x, y = sanity_check(Value)
    ref_x, ref_y = sanity_check(micrograd.engine.Value)
    assert y.data == -20.0 == ref_y.data
    assert x.grad == 46.0 == ref_x.grad


def test_micrograd_more_ops():
    a, b, g = more_ops(Value)
    ref_a, ref_b, ref_g = more_ops(micrograd.engine.Value)
    assert g.data == pytest.approx(24.7041, abs=1e-4)
    assert a.grad == pytest.approx(138.8338, abs=1e-4)
    assert b.grad == pytest.approx(645.5773, abs=1e-4)
    assert g.data == pytest.approx(ref_g.data, rel=1e-12)
    assert a.grad == pytest.approx(ref_a.grad, rel=1e-12)
    assert b.grad == pytest.approx(ref_b.grad, rel=1e-12)


# --- backward: topological order, insertion order, depth -----------------------------

def recursive_topo(root):
    """micrograd's recursive build_topo, as the reference order."""
    topo, visited = [], set()

    def build_topo(v):
        if v not in visited:
            visited.add(v)
            for child in v._prev:
                build_topo(child)
            topo.append(v)
    build_topo(root)
    return topo


def backward_call_order(root):
    """Run root.backward() and return the nodes in the order their _backward ran."""
    calls = []
    for v in recursive_topo(root):
        def spy(v=v, inner=v._backward):
            calls.append(v)
            inner()
        v._backward = spy
    root.backward()
    return calls


def test_backward_walks_the_recursive_postorder_in_reverse():
    a, b, c = Value(2.0, label="a"), Value(-3.0, label="b"), Value(10.0, label="c")
    e = a * b
    d = e + c + e * a  # fan-out from e and a
    L = d * d + b
    assert backward_call_order(L) == list(reversed(recursive_topo(L)))


def test_backward_order_on_a_bigger_graph():
    _, _, g = more_ops(Value)
    assert backward_call_order(g) == list(reversed(recursive_topo(g)))


def test_prev_keeps_insertion_order_without_duplicates():
    a, b = Value(2.0), Value(3.0)
    assert (a * b)._prev == (a, b)
    assert (b * a)._prev == (b, a)
    assert (a + b)._prev == (a, b)
    assert (a * a)._prev == (a,)
    assert list((a + a)._prev) == [a]


def test_a_node_used_twice_gets_both_contributions():
    a = Value(3.0)
    b = a + a
    b.backward()
    assert a.grad == 2.0
    a2 = Value(3.0)
    sq = a2 * a2
    sq.backward()
    assert a2.grad == 6.0  # d(a²)/da = 2a


def test_backward_seeds_the_root_and_accumulates():
    a = Value(2.0)
    out = a * 3
    out.backward()
    out.backward()  # no zero_grad in between: grads add up, as in micrograd
    assert out.grad == 1
    assert a.grad == 6.0


def test_a_chain_100000_deep():
    depth = 100_000
    x = Value(0.5)
    y = x
    for _ in range(depth):
        y = y * 1.00001
    y.backward()
    assert y.data == pytest.approx(0.5 * 1.00001 ** depth, rel=1e-9)
    assert x.grad == pytest.approx(1.00001 ** depth, rel=1e-9)


# --- nn ------------------------------------------------------------------------------

@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_parameter_counts(activation):
    assert len(MLP(3, [4, 4, 1], activation=activation).parameters()) == 41
    assert len(MLP(2, [16, 16, 1], activation=activation).parameters()) == 337
    assert len(Layer(3, 4, activation=activation).parameters()) == 16
    assert len(Neuron(3, activation=activation).parameters()) == 4


def test_default_is_micrograds_relu_mlp():
    model = MLP(2, [16, 16, 1])
    assert [layer.neurons[0].nonlin for layer in model.layers] == [True, True, False]
    assert all(n.activation == "relu" for layer in model.layers for n in layer.neurons)
    assert all(n.b.data == 0 for layer in model.layers for n in layer.neurons)


def layer_outputs(model, x):
    outs = []
    for layer in model.layers:
        x = layer(x)
        outs.append(x if isinstance(x, list) else [x])
    return outs


def test_relu_mlp_has_relu_hidden_layers_and_a_linear_last_layer():
    model = MLP(3, [4, 4, 1])
    hidden1, hidden2, last = layer_outputs(model, [2.0, 3.0, -1.0])
    assert {v._op for v in hidden1 + hidden2} == {"ReLU"}
    assert [v._op for v in last] == ["+"]


def test_tanh_mlp_uses_tanh_everywhere():
    model = MLP(3, [4, 4, 1], activation="tanh")
    hidden1, hidden2, last = layer_outputs(model, [2.0, 3.0, -1.0])
    assert {v._op for v in hidden1 + hidden2 + last} == {"tanh"}


def test_tanh_neuron_computes_tanh_of_weighted_sum():
    random.seed(1)
    n = Neuron(3, activation="tanh")
    x = [2.0, 3.0, -1.0]
    expected = math.tanh(sum(w.data * xi for w, xi in zip(n.w, x)) + n.b.data)
    assert n(x).data == pytest.approx(expected, rel=1e-12)


def test_relu_mlp_matches_micrograds_mlp():
    # Same seed, same draws: micrograd's MLP is the reference for forward and backward.
    random.seed(7)
    ours = MLP(3, [4, 4, 1])
    random.seed(7)
    theirs = micrograd.nn.MLP(3, [4, 4, 1])
    x = [2.0, 3.0, -1.0]
    out, ref = ours(x), theirs(x)
    out.backward()
    ref.backward()
    assert out.data == pytest.approx(ref.data, rel=1e-12)
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert p.data == q.data
        assert p.grad == pytest.approx(q.grad, rel=1e-12, abs=1e-15)


def test_zero_grad():
    model = MLP(3, [4, 4, 1], activation="tanh")
    loss = (model([2.0, 3.0, -1.0]) - 1.0) ** 2
    loss.backward()
    assert any(p.grad != 0 for p in model.parameters())
    model.zero_grad()
    assert all(p.grad == 0 for p in model.parameters())
