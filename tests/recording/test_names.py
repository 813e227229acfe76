"""Names for nodes without a label (`mgtui.recording.naming`): the variable an assignment bound a
node to when it was made, else a parameter's path from a global object, else `#id`.
Expected names are read off the scenario's own text; parameter paths are checked against
the engine's `MLP` built independently here with the scenario's seed."""

import io
import json
import random
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from mgtui.trace import export

from mgtui.trace import binary as tracefile
from mgtui.cli import main
from mgtui.recording.naming import assignment_values, loop_names
from mgtui.trace.names import shorten
from mgtui.trace import Texts
from mgtui.recording.recorder import record
from mgtui.run.runner import run

ROOT = Path(__file__).resolve().parent.parent.parent
SCENARIOS = ROOT / "scenarios"
sys.path.insert(0, str(ROOT))


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def without_labels(source: str) -> str:
    """A scenario's text with every `label=...` and `x.label = ...` taken out."""
    source = re.sub(r"; *\w+\.label = '[^']*'", "", source)
    source = re.sub(r"^\w+\.label = '[^']*'\n", "", source, flags=re.M)
    return re.sub(r", label='[^']*'", "", source)


def named(trace) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for nid in range(trace.node_count):
        out.setdefault(trace.label(nid), []).append(nid)
    return out


# -- the bundled scenarios ----------------------------------------------------------------


@pytest.fixture(scope="module")
def mlp_trace():
    return run(SCENARIOS / "mlp.py").trace  # as the app and the command line record it


def test_the_mlp_loss_is_loss_at_every_one_of_its_20_backward_passes(mlp_trace):
    t = mlp_trace
    backwards = [p for p in t.passes if p.kind == "backward"]
    assert len(backwards) == 20
    assert [t.label(t.backward_root(p)) for p in backwards] == ["loss"] * 20
    # and only the node each `loss = sum(...)` bound: not the partial sums before it
    assert len(named(t)["loss"]) == 20


def test_mlp_parameters_are_named_by_their_path_from_the_model(mlp_trace):
    from engine.nn import MLP

    random.seed(0)  # as mlp.py does, then the same model
    model = MLP(3, [4, 4, 1], activation='tanh')
    expected = {}
    for i, layer in enumerate(model.layers):
        for j, neuron in enumerate(layer.neurons):
            for k, w in enumerate(neuron.w):
                expected[f"n.layers[{i}].neurons[{j}].w[{k}]"] = w.data
            expected[f"n.layers[{i}].neurons[{j}].b"] = neuron.b.data
    assert len(expected) == 41
    t = mlp_trace
    by_name = named(t)
    for path, data in expected.items():
        (nid,) = by_name[path]
        assert t.node_data[nid] == data and t.is_leaf(nid)


def test_neuron_exp_keeps_its_labels_and_its_e(tmp_path):
    t = record(SCENARIOS / "neuron_exp.py")
    (e,) = named(t)["e"]
    assert t.op(e) == "exp"


def test_neuron_exp_without_its_labels_is_named_by_its_assignments(tmp_path):
    path = write(tmp_path, "neuron_exp_bare.py",
                 without_labels((SCENARIOS / "neuron_exp.py").read_text()))
    assert "label" not in path.read_text().split('"""')[2].replace("node.label", "")
    t = run(path).trace
    by_name = named(t)
    (e,) = by_name["e"]  # e = (2*n).exp()
    assert t.op(e) == "exp" and t.label(t.children(e)[0]).startswith("#")  # 2*n has none
    (n,) = by_name["n"]  # n = x1w1x2w2 + b
    assert t.op(n) == "+" and [t.label(c) for c in t.children(n)] == ["x1w1x2w2", "b"]
    (o,) = by_name["o"]  # o = (e - 1) / (e + 1): the division, not its parts
    assert t.op(o) == "*" and t.backward_root(t.passes[1]) == o
    for leaf in ("x1", "x2", "w1", "w2", "b"):
        assert t.is_leaf(by_name[leaf][0])
    assert "node" not in by_name  # `for node in [...]`, a loop variable


def test_a_small_moons_leaves_no_loop_variable_names(tmp_path):
    source = (SCENARIOS / "moons.py").read_text()
    for big, small in (("make_moons(n_samples=100", "make_moons(n_samples=12"),
                       ("MLP(2, [16, 16, 1])", "MLP(2, [4, 4, 1])"), ("range(3)", "range(2)")):
        assert big in source, "moons.py changed: update this test"
        source = source.replace(big, small)
    t = run(write(tmp_path, "moons_small.py", source)).trace
    by_name = named(t)
    assert "p" not in by_name and "k" not in by_name  # `for p in model.parameters()`
    backwards = [p for p in t.passes if p.kind == "backward"]
    assert [t.label(t.backward_root(p)) for p in backwards] == ["total_loss"] * 2
    params = [name for name in by_name if name.startswith("model.layers[")]
    assert len(params) == 2 * 4 + 4 + 4 * 4 + 4 + 4 * 1 + 1  # (2+1)*4 + (4+1)*4 + (4+1)*1


# -- how assignments are found --------------------------------------------------------------


def test_sum_in_a_function_names_only_the_total_by_its_caller_and_tuples_pair_up(tmp_path):
    path = write(tmp_path, "s.py", """
        from engine import Value

        def total(xs):
            acc = sum(xs)
            return acc

        a, b = Value(1.0), Value(2.0)
        c = a * b
        c += a
        for _ in range(3):
            s = total([a, b, c])
        x = total([a, b])
    """)
    t = record(path)
    by_name = named(t)
    assert len(by_name["a"]) == len(by_name["b"]) == 1
    (a,), (b,) = by_name["a"], by_name["b"]
    assert t.node_data[a] == 1.0 and t.node_data[b] == 2.0
    c_first, c_second = by_name["c"]  # c = a * b, then c += a (a new node, also c)
    assert t.op(c_first) == "*" and t.op(c_second) == "+"
    # every sum's final node is named by the caller's variable that binds it (s, then
    # x), not the function's local `acc`; the partial sums are not named
    assert [t.node_data[n] for n in by_name["s"]] == [6.0, 6.0, 6.0]
    assert [t.node_data[n] for n in by_name["x"]] == [3.0]
    assert "acc" not in by_name


def test_a_node_made_by_a_library_call_takes_the_global_that_holds_it(tmp_path):
    path = write(tmp_path, "lib.py", """
        import random
        from engine.nn import Neuron
        from engine import Value

        random.seed(0)
        neuron = Neuron(2)
        out = neuron([Value(1.0), Value(2.0)])
        for w in neuron.w:
            w.data += 0.0
    """)
    t = record(path)
    by_name = named(t)
    assert t.op(by_name["out"][0]) == "ReLU"
    assert {"neuron.w[0]", "neuron.w[1]", "neuron.b"} <= set(by_name)
    assert "w" not in by_name


def test_the_ast_side_of_the_search():
    import ast

    tree = ast.parse("x = a * b\np, q = f(), g()\ny += 1\nfor i in r:\n    j = i\n")
    targets = sorted(name for name, _ in assignment_values(tree).values())
    assert targets == ["j", "p", "q", "x", "y"]
    assert loop_names(tree) == {"i"}


def test_shorten_keeps_the_end_of_a_path():
    path = "model.layers[0].neurons[1].w[0]"
    assert shorten(path, 40) == path
    assert shorten(path, 20) == "model.l[0].n[1].w[0]"
    assert shorten(path, 16) == "…l[0].n[1].w[0]"
    assert shorten(path, 12) == "…n[1].w[0]"
    assert shorten(path, 6) == "…w[0]"
    assert shorten("a.b.c.long_name", 5) == "…name"
    assert shorten("total_loss", 6) == "…_loss"


# -- names go everywhere labels go ------------------------------------------------------------


@pytest.fixture
def bare_neuron(tmp_path):
    return write(tmp_path, "bare.py", without_labels((SCENARIOS / "neuron_exp.py").read_text()))


def test_names_in_print_json_dot_and_saved_files(bare_neuron, capsys, tmp_path):
    assert main([str(bare_neuron), "--print"]) == 0
    out = capsys.readouterr().out
    assert "e = exp(#10)" in out and "seed: o.grad = 1.0" in out

    assert main([str(bare_neuron), "--export", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    node = {n["label"]: n for n in doc["nodes"]}
    assert node["e"]["name"] == "e" and node["e"]["op"] == "exp"
    assert "name" not in node["#9"]
    loaded = export.from_json(doc)
    assert loaded.label(node["e"]["id"]) == "e" and loaded.derived_name(node["e"]["id"]) == "e"

    assert main([str(bare_neuron), "--export", "dot"]) == 0
    dot = capsys.readouterr().out
    assert '{ e | data 5.8284' in dot and '{ o | data 0.7071' in dot

    trace = run(bare_neuron).trace
    again = tracefile.loadb(tracefile.dumpb(trace))
    assert [again.label(n) for n in range(again.node_count)] == \
        [trace.label(n) for n in range(trace.node_count)]
    assert again.derived_name(node["x1"]["id"]) == "x1"


def test_a_saved_file_without_names_still_loads(bare_neuron):
    from dataclasses import replace

    trace = run(bare_neuron).trace
    old = replace(trace, _name=Texts(("",) * trace.node_count))  # as files were written before
    data = tracefile.dumpb(old)
    chunks = [tracefile.decode_chunk(tag, payload)
              for tag, payload in tracefile.records(io.BytesIO(data)) if tag == "N"]
    assert chunks and all(c.names == () for c in chunks)  # [labels, ops], the old record
    loaded = tracefile.loadb(data)
    assert loaded.label(0) == "#0" and loaded.derived_name(0) == ""
    doc = export.to_json(old)
    assert all("name" not in n for n in doc["nodes"])
    assert export.from_json(doc).label(0) == "#0"


def test_the_doctor_names_an_unlabelled_op_by_its_assignment(tmp_path, capsys):
    source = without_labels((SCENARIOS / "bugs" / "wrong_derivative.py").read_text())
    path = write(tmp_path, "wd.py", source.replace("{node.label:>3}", "{node.data}"))
    assert main([str(path), "--check"]) == 1
    out = capsys.readouterr().out
    # `out = Value(s, (x,), 'sigmoid')` in the scenario's own op made the node, and
    # `o = sigmoid(n)` bound it: the caller's name; `n = xw + b` its input
    assert "node   o (#5, op sigmoid" in out and "to n.grad" in out


def test_a_path_reads_in_a_formula_without_brackets():
    from mgtui.trace.explain import name

    assert name("n.layers[0].neurons[1].w[0]") == "n.layers[0].neurons[1].w[0]"
    assert name("params['w']") == "params['w']"
    assert name("x1*w1 + x2*w2") == "(x1*w1 + x2*w2)"
    assert name("a.b + c") == "(a.b + c)"


# -- nodes made by helpers and wrappers, and parameters in mgtui.show -------------------------

WRAPPERS = """
    from engine import Value

    def mul(a, b):
        out = a * b
        return out

    def shifted(a):
        out = a * 2
        return out + 1

    x = Value(1.5)
    w = Value(-2.0)
    c = mul(x, w)
    y = shifted(x)
    print(mul(c, y))
    y.backward()
"""


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "hooks"])
def test_a_wrappers_result_is_named_by_the_callers_variable(tmp_path, inline):
    t = record(write(tmp_path, "wrappers.py", WRAPPERS), inline=inline)
    by_name = named(t)
    (c,), (y,) = by_name["c"], by_name["y"]
    assert t.node_data[c] == 1.5 * -2.0 and t.op(c) == "*"  # c = mul(x, w): not `out`
    assert t.node_data[y] == 1.5 * 2 + 1 and t.op(y) == "+"  # y = shifted(x)
    # `out` where no caller's variable holds the node: shifted's own, and mul(c, y)'s
    outs = sorted(t.node_data[n] for n in by_name["out"])
    assert outs == sorted([1.5 * 2, (1.5 * -2.0) * (1.5 * 2 + 1)])


def test_a_node_made_by_a_helper_module_is_named_by_the_scenarios_variable(tmp_path):
    home = tmp_path / "project"
    shutil.copytree(ROOT / "tests" / "data" / "myad_project", home,
                    ignore=shutil.ignore_patterns("__pycache__"))
    t = run(home / "train.py").trace
    by_name = named(t)
    # p = ops.sigmoid(z) and loss = ops.square_error(p, y), in each of three steps
    assert len(by_name["p"]) == 3 and all(t.op(n) == "sigmoid" for n in by_name["p"])
    assert len(by_name["loss"]) == 3 and all(t.op(n) == "*" for n in by_name["loss"])
    assert [t.label(c) for c in t.children(by_name["p"][0])] == ["z"]
    assert not any(label.startswith("#") for label in (t.label(n) for n in by_name["p"]))


def test_show_names_parameters_by_their_path_from_a_global():
    from engine import Value
    from engine.nn import MLP
    from mgtui.api import _trace_of

    random.seed(1)
    model = MLP(2, [3, 1])
    loss = (model([Value(1.0), Value(-2.0)]) - 1.0) ** 2
    t = _trace_of(loss, sys._getframe(), None)
    by_name = named(t)
    assert {f"model.layers[0].neurons[{k}].w[{j}]" for k in range(3) for j in range(2)} \
        <= set(by_name)
    assert "model.layers[1].neurons[0].b" in by_name
    assert "loss" in by_name and len(by_name["loss"]) == 1
    (w,) = by_name["model.layers[0].neurons[0].w[0]"]
    assert t.node_data[w] == model.layers[0].neurons[0].w[0].data


def test_the_quick_walk_visits_what_ast_walk_visits_in_its_order():
    """`naming._walk` (the walk that finds assignments as a recording starts) yields
    `ast.walk`'s nodes in `ast.walk`'s order, less the contexts and operators, on every
    bundled scenario and a tree with every kind of assignment."""
    import ast

    from mgtui.recording import naming

    sources = [p.read_text() for p in sorted(SCENARIOS.glob("*.py"))]
    sources.append("a, (b, c) = 1, (2, 3)\nd: int = (e := 4) + -a\nf += g[1:2] if h else not i\n"
                   "def k(*args, l=lambda m: m ** 2, **kw):\n    n = [o for o in args if o > 0]\n")
    for source in sources:
        tree = ast.parse(source)
        want = [n for n in ast.walk(tree) if not isinstance(n, naming._LEAF_NODES)]
        assert list(naming._walk(tree)) == want
    bound = naming.assignment_values(ast.parse(sources[-1]))
    assert sorted(name for name, _ in bound.values()) == ["a", "b", "c", "d", "e", "f", "n"]
