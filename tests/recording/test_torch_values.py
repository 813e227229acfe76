"""Tensors' values as the torch adapter records them: every value the trace holds is the
tensor's value at the write that recorded it, whatever changes the tensor after (in-place
ops, `.data`, `t[...] =`, `out=`, an optimizer's step, a second `backward()` adding into a
leaf's grad, a hook writing into the gradient it is given); and a run cut into chunks as
it goes rebuilds the same trace. (What a faster way of reading values must keep:
bench/README.md, "torch values by reference".)"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mgtui.recording import torch_recorder  # noqa: E402
from mgtui.recording.recorder import Recorder, load_scenario, record  # noqa: E402
from mgtui.trace import TraceBuilder  # noqa: E402
from mgtui.trace.export import to_json  # noqa: E402

from tests.conftest import recorded_in_chunks  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_env")

CHANGES = '''
"""Changes of every kind"""
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(1)
p = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
w = torch.tensor([[1.0, -1.0, 0.5], [2.0, 0.0, 1.0]], requires_grad=True)
for k in range(4):
    h = torch.tanh(w @ p)
    h2 = h * 2
    h2.add_(1)  # autograd's in-place op: a node
    y = (h2 * h2).sum()
    y.backward(retain_graph=k == 0)
    if k == 0:
        y.backward()  # a second pass adds into the leaves' grads in place
    with torch.no_grad():
        p -= 0.25 * p.grad
        w -= 0.1 * w.grad
        if k == 1:
            p.data.mul_(2)  # not counted in p's version
            w.data[0, 0] = 3.0
        if k == 2:
            p.data = torch.tensor([5.0, 6.0, 7.0])
        h[0] = 9.0  # a value recorded earlier in this step, written over
        torch.add(h2, 1, out=h2)
    if k % 2:
        p.grad = None
        w.grad.zero_()

model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(inplace=True), nn.Linear(5, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
xs = torch.randn(6, 3)
ys = torch.tensor([0, 1, 2, 0, 1, 2])
for k in range(4):
    logits = model(xs)
    r = F.relu(logits.clone(), inplace=True)
    loss = F.cross_entropy(logits, ys) + 0.01 * (r ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def test_each_parameter_update_records_the_values_the_parameter_had(write_scenario):
    """Every data write of an SGD step (momentum: the buffers change in place too)
    holds, before and after, the parameter's values as the scenario itself copied
    them around the step."""
    path = write_scenario("sgd", CHANGES + '''
model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
history = []
for k in range(3):
    loss = F.cross_entropy(model(xs), ys[:6] % 2)
    opt.zero_grad()
    loss.backward()
    history.append([p.detach().clone() for p in model.parameters()])
    opt.step()
    history.append([p.detach().clone() for p in model.parameters()])
''')
    recorder = Recorder(load_scenario(path))
    trace = recorder.run()
    params = list(recorder.globals["model"].parameters())
    ids = [getattr(p, torch_recorder.ATTR)[1] for p in params]  # (the node of each)
    history = recorder.globals["history"]
    j = to_json(trace)
    changes = {nid: [] for nid in ids}
    for e in j["events"]:
        if e["kind"] == "data" and e["node"] in changes:
            changes[e["node"]].append((e["before"]["values"], e["after"]["values"]))
    for k, nid in enumerate(ids):
        want = [(history[2 * s][k].flatten().tolist(), history[2 * s + 1][k].flatten().tolist())
                for s in range(3)]
        got = [(_flat(b), _flat(a)) for b, a in changes[nid]]
        assert got == want, k


def _flat(values) -> list:
    return [x for row in values for x in row] if values and isinstance(values[0], list) \
        else values


def test_a_value_changed_in_place_after_it_was_taken_is_the_value_it_had(write_scenario):
    path = write_scenario("later", '''
        """Written over after it was recorded"""
        import torch
        a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = a * 3
        v = h[1:]
        y = (h * h).sum()
        y.backward()
        with torch.no_grad():
            h.mul_(10)  # h and its view v, recorded before
            a.data.add_(1)  # a, through .data (its version does not count it)
            a -= 0.5 * a.grad
    ''')
    j = to_json(record(path))
    values = {n["label"]: n["data"]["values"] for n in j["nodes"]
              if n["label"] in ("a", "h", "v")}
    assert values == {"a": [1.0, 2.0, 3.0], "h": [3.0, 6.0, 9.0], "v": [6.0, 9.0]}  # as made
    changes = [(j["nodes"][e["node"]]["label"], e["before"]["values"], e["after"]["values"])
               for e in j["events"] if e["kind"] == "data"]
    assert changes == [("h", [3.0, 6.0, 9.0], [30.0, 60.0, 90.0]),
                       ("a", [1.0, 2.0, 3.0], [2.0, 3.0, 4.0]),  # (`a.data.add_(1)`)
                       ("a", [2.0, 3.0, 4.0], [-7.0, -15.0, -23.0])]  # (a.grad = 2 * 3a * 3
    #                                                                     = 18a)


def test_a_hook_that_writes_into_its_gradient_leaves_the_values_as_given(write_scenario):
    """A tensor hook that writes into the gradient it is given (which torch asks hooks
    not to do): the write into `h`'s grad is the gradient as the engine passed it on."""
    path = write_scenario("hooked", '''
        """A hook writing into its gradient"""
        import torch
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        h = a * 3
        g = h * a
        h.register_hook(lambda grad: grad.mul_(2))
        g.sum().backward()
    ''')
    trace = record(path)
    assert not trace.arrays.unrecorded
    j = to_json(trace)
    label = {n["id"]: n["label"] for n in j["nodes"]} if "id" in j["nodes"][0] else {
        k: n["label"] for k, n in enumerate(j["nodes"])}
    writes = {(e["node"], label[w["node"]]): w["after"]["values"]
              for e in j["events"] if e["kind"] == "backward" for w in e.get("writes", ())
              if isinstance(w.get("after"), dict)}
    assert [v for (_, to), v in writes.items() if to == "h"] == [[1.0, 2.0]]  # g's: a
    a = next(n for n in j["nodes"] if n["label"] == "a")
    assert a["final_grad"]["values"] == [9.0, 18.0]  # h + 3 * (2a): torch's own


def test_a_run_cut_into_chunks_as_it_goes_rebuilds_the_same_trace(write_scenario,
                                                                  monkeypatch):
    path = write_scenario("chunked", CHANGES)
    cut, _ = recorded_in_chunks(monkeypatch, path, 7)
    assert len(cut) > 20
    whole = TraceBuilder(str(path))
    for chunk in cut:
        whole.add(chunk)
    rebuilt = whole.build(None, "")
    alone = record(path)
    assert rebuilt.node_count == alone.node_count and len(rebuilt) == len(alone)
    for nid in range(alone.node_count):
        for grad in (False, True):
            a, b = rebuilt.values.final_value(nid, grad), alone.values.final_value(nid, grad)
            assert (a.same(b) if hasattr(a, "same") else a == b or a != a and b != b), nid
    for i in range(len(alone)):
        assert repr(rebuilt.change(i)) == repr(alone.change(i)), i


def test_the_log_softmax_inside_cross_entropy_has_its_value(write_scenario):
    """F.cross_entropy makes a LogSoftmax node the scenario never sees; its value is the
    log-softmax of the logits (worked out here with `math`), not nan (issue 33)."""
    import math

    rows = [[1.0, 2.0, 0.5], [0.25, -1.0, 3.0]]
    path = write_scenario("ce", f'''
import torch
import torch.nn.functional as F
logits = torch.tensor({rows!r}, dtype=torch.float64, requires_grad=True)
loss = F.cross_entropy(logits, torch.tensor([1, 2]))
loss.backward()
''')
    nodes = to_json(Recorder(load_scenario(path)).run())["nodes"]
    (node,) = [n for n in nodes if n["op"] == "LogSoftmax"]
    want = [[x - math.log(sum(math.exp(v) for v in row)) for x in row] for row in rows]
    assert node["data"]["shape"] == [2, 3]
    assert node["data"]["values"] == [pytest.approx(r, rel=1e-12) for r in want]


def test_values_of_autograd_nodes_inside_a_call_that_are_not_known_are_said(write_scenario):
    """`F.pairwise_distance` is a subtraction, a norm and more inside torch: some of its
    nodes' outputs are no tensor the scenario saw, and nothing of them is kept
    (`recording/torch_hidden.py` works out those it can). Their values are nan, and the
    trace says so out loud; a weight's transpose inside `F.linear` is worked out."""
    path = write_scenario("hidden", '''
        """Inside pairwise_distance"""
        import torch
        import torch.nn.functional as F
        torch.manual_seed(0)
        a = torch.randn(2, 3, 4, requires_grad=True)
        b = torch.randn(2, 3, 4, requires_grad=True)
        F.pairwise_distance(a, b).sum().backward()
        lin = torch.nn.Linear(8, 2)
        lin(torch.randn(4, 8)).sum().backward()
    ''')
    trace = record(path)
    hidden = dict(trace.arrays.unrecorded)["torch hidden"]
    nodes = to_json(trace)["nodes"]
    assert hidden == sum(1 for n in nodes if n["data"] == "nan") > 0  # (nan: not known)
    assert trace.arrays.unrecorded_note().startswith(f"{hidden} values of autograd's own")
    (t,) = [n for n in nodes if n["op"] == "T"]
    assert t["data"]["shape"] == [8, 2]  # (lin.weight's transpose, worked out)
