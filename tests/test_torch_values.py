"""Tensors' values taken by reference and converted in bulk (`mgtui.recording.torch_values`):
every value the trace holds is the tensor's value at the write that recorded it, as when
each was copied as it was taken (`eager`, the reference here), whatever changes the tensor
after: in-place ops, `.data`, `t[...] =`, `out=`, an optimizer's step, a second
`backward()` adding into a leaf's grad; and a run cut into chunks as it goes rebuilds the
same trace."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from mgtui.recording import array_values, torch_values  # noqa: E402
from mgtui.recording.recorder import Recorder, load_scenario, record  # noqa: E402
from mgtui.recording.store import Mark  # noqa: E402
from mgtui.trace import TraceBuilder  # noqa: E402
from mgtui.trace.export import to_json  # noqa: E402

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


def recorded(path, eager: bool = False, monkeypatch=None) -> dict:
    """The scenario's trace as JSON; `eager`: every value copied as it is taken."""
    if eager:
        init = torch_values.TensorValues.__init__

        def eager_init(self, arrays):
            init(self, arrays)
            self.eager = True

        monkeypatch.setattr(torch_values.TensorValues, "__init__", eager_init)
    trace = record(path)
    if eager:
        monkeypatch.undo()
    return to_json(trace)


def test_values_taken_by_reference_are_those_copied_as_taken(write_scenario, monkeypatch):
    path = write_scenario("changes", CHANGES)
    taken = []
    take = torch_values.TensorValues.take

    def counted(self, t, *args, **kwargs):
        value = take(self, t, *args, **kwargs)
        taken.append(type(value) is torch_values.TensorRef)
        return value

    monkeypatch.setattr(torch_values.TensorValues, "take", counted)
    deferred = recorded(path)
    assert sum(taken) > 150 and sum(taken) > len(taken) / 2  # (by reference, most)
    monkeypatch.undo()
    copied = recorded(path, True, monkeypatch)
    assert json.dumps(deferred) == json.dumps(copied)
    data = [e for e in deferred["events"] if e["kind"] == "data"]
    assert len(data) > 20


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
                       ("a", [2.0, 3.0, 4.0], [-7.0, -15.0, -23.0])]  # (after `a.data.add_(1)`;
    #                                                        a.grad = 2 * 3a * 3 = 18a)


def test_a_hook_that_writes_into_its_gradient_leaves_the_values_as_given(write_scenario):
    """A tensor hook that writes into the gradient it is given (which torch asks hooks
    not to do) would change a value taken by reference where nothing sees it: from a
    hook's registration on, values are copied as they are taken."""
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
    cut, since = [], Mark()
    original = array_values.ArraySnapshots.made

    def cut_now(store):  # (what the runner child's flusher does, in its own thread)
        nonlocal since
        upto = store.settled()
        cut.extend(store.chunks(since, upto))
        since = upto

    def made(self, nid, data, grad=None):
        if nid and not nid % 7:
            cut_now(self.records)
        return original(self, nid, data, grad)

    monkeypatch.setattr(array_values.ArraySnapshots, "made", made)
    recorder = Recorder(load_scenario(path))
    recorder.execute()
    cut_now(recorder.records)
    monkeypatch.undo()
    assert len(cut) > 20
    whole = TraceBuilder(str(path))
    for chunk in cut:
        whole.add(chunk)
    rebuilt = whole.build(None, "")
    alone = record(path)
    assert rebuilt.node_count == alone.node_count and len(rebuilt) == len(alone)
    for nid in range(alone.node_count):
        for grad in (False, True):
            a, b = rebuilt.final_value(nid, grad), alone.final_value(nid, grad)
            assert (a.same(b) if hasattr(a, "same") else a == b or a != a and b != b), nid
    for i in range(len(alone)):
        assert repr(rebuilt.change(i)) == repr(alone.change(i)), i
