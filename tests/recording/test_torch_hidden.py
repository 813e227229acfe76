"""The values of autograd's own nodes inside one torch call (`recording/torch_hidden.py`):
an `nn.Linear` on a batch of sequences is `view`, `addmm` and `view` inside torch, a
product of 3-D tensors `expand`, `view`, `bmm` and `_unsafe_view`, `F.normalize` a norm,
a `clamp_min` and an `expand`. Each such node's value is the one torch computed there,
worked out here again with torch's own ops on the scenario's tensors; a node whose value
cannot be had is nan, and counted among the values the trace says were not recorded."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from mgtui.recording.recorder import Recorder, load_scenario  # noqa: E402
from mgtui.recording.torch_hidden import hidden_value  # noqa: E402
from mgtui.trace.export import to_json  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_env")

SCENARIO = '''
"""Inside torch's calls: a linear layer on sequences, attention's product, a normalize"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(2, 4, 8, requires_grad=True)
lin = torch.nn.Linear(8, 6)
h = lin(x)
q, k = h[..., :3], h[..., 3:]
att = q @ k.transpose(-2, -1)
z = F.normalize(att, dim=-1)
z.sum().backward()
'''


def by_op(j: dict) -> dict[str, list]:
    ops: dict[str, list] = {}
    for n in j["nodes"]:
        ops.setdefault(n["op"], []).append(n["data"])
    return ops


def as_tensor(data) -> torch.Tensor:
    return torch.tensor(data["values"], dtype=torch.float32)


def test_values_inside_torch_calls_are_those_torch_computed(write_scenario):
    recorder = Recorder(load_scenario(write_scenario("inside", SCENARIO)))
    trace = recorder.run()
    j = to_json(trace)
    assert j["error"] is None
    g = recorder.globals
    x, lin, att = g["x"].detach(), g["lin"], g["att"].detach()
    w, b = lin.weight.detach(), lin.bias.detach()
    ops = by_op(j)
    with torch.no_grad():
        want = {
            "Addmm": [torch.addmm(b, x.reshape(8, 8), w.t())],
            "Bmm": [att],  # (its UnsafeView is `att`, the same shape here)
            "ClampMin": [att.norm(dim=-1, keepdim=True).clamp_min(1e-12)],
        }
    for op, values in want.items():
        got = [as_tensor(d) for d in ops[op]]
        assert len(got) == len(values), op
        for a, e in zip(got, values):
            assert a.shape == e.shape and torch.equal(a, e), op
    views = [as_tensor(d) for d in ops["View"]]
    assert any(v.shape == (8, 8) and torch.equal(v, x.reshape(8, 8)) for v in views)
    assert not any(d == "nan" for data in ops.values() for d in data)
    assert "torch hidden" not in dict(trace.arrays.unrecorded)


def test_a_value_that_cannot_be_had_is_nan_and_counted():
    a = torch.ones(3, requires_grad=True)
    fn = (a + 1).grad_fn  # (AddBackward: keeps neither its output nor its inputs)
    views = SimpleNamespace(arrays=SimpleNamespace(unrecorded={}))
    assert math.isnan(hidden_value(fn, 0, views, [(0, a)]))
    assert views.arrays.unrecorded == {"torch hidden": 1}
