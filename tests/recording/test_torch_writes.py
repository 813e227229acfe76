"""Writes torch training loops make outside autograd's graph and outside `p -= lr * g`:
an in-place op on a leaf's grad (the PyTorch tutorial's `a.grad.zero_()`,
`clip_grad_norm_`, `zero_grad(set_to_none=False)`, `p.grad.data.clamp_`), and the
in-place ops on lists that optimizers run with `foreach=True` or `fused=True`. Each is an
event of the trace at the scenario's line, its after the value torch left (each scenario
keeps clones of what torch computed, for the test to compare with), and in-place ops on
anything else (an optimizer's state) are none."""

from __future__ import annotations

import textwrap

import pytest

torch = pytest.importorskip("torch")

from mgtui.recording import torch_recorder  # noqa: E402
from mgtui.recording.recorder import Recorder, load_scenario  # noqa: E402
from mgtui.trace.export import to_json  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_env")


def recorded(write_scenario, name: str, source: str):
    """(the trace as JSON, the run's globals, node of each tensor named in `model`)."""
    recorder = Recorder(load_scenario(write_scenario(name, source)))
    j = to_json(recorder.run())
    assert j["error"] is None, j["error"]
    return j, recorder.globals


def node_of(t) -> int:
    return getattr(t, torch_recorder.ATTR)[1]


def values(v):
    """An event's value as a plain number or nested list."""
    return v["values"] if isinstance(v, dict) else v


def flat(v) -> list:
    """An event's value as a flat list of numbers (a one-element tensor is a number)."""
    v = values(v)
    return torch.tensor(v, dtype=torch.float64).flatten().tolist()


def events(j, kind: str, nid: int, line: int | None = None) -> list:
    return [e for e in j["events"] if e["kind"] == kind and e["node"] == nid
            and (line is None or e["line"] == line)]


def line_of(source: str, text: str) -> int:
    """The line of the first line holding `text`, in the file `write_scenario` writes."""
    lines = textwrap.dedent(source).lstrip().splitlines()
    return next(k for k, line in enumerate(lines, 1) if text in line)


TUTORIAL = '''
"""The PyTorch tutorial's loop: grads zeroed in place"""
import torch

torch.manual_seed(0)
x = torch.linspace(-1.0, 1.0, 8)
y = torch.sin(x)
a = torch.randn((), requires_grad=True)
b = torch.randn(2, requires_grad=True)
grads = []
for t in range(3):
    loss = (a + b[0] * x + b[1] * x ** 2 - y).pow(2).sum()
    loss.backward()
    with torch.no_grad():
        a -= 0.1 * a.grad
        b -= 0.1 * b.grad
        grads.append((a.grad.clone(), b.grad.clone()))
        a.grad.zero_()
        b.grad.data.zero_()
'''


def test_a_grad_zeroed_in_place_is_a_zero_grad_event(write_scenario):
    j, g = recorded(write_scenario, "tutorial", TUTORIAL)
    for name, field, at in (("a", 0, "a.grad.zero_()"), ("b", 1, "b.grad.data.zero_()")):
        zeroed = events(j, "grad", node_of(g[name]), line_of(TUTORIAL, at))
        assert len(zeroed) == 3, name
        assert [values(e["before"]) for e in zeroed] == [k[field].tolist() for k in g["grads"]]
        assert all(values(e["after"]) in (0.0, [0.0, 0.0]) for e in zeroed)
    kinds = [p["kind"] for p in j["passes"]]
    assert kinds == ["forward", "backward", "update", "zero_grad"] * 3


CLIP = '''
"""SGD with its gradients clipped"""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(3, 2)
xs = torch.tensor([[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0]])
ys = torch.tensor([[1.0, 0.0], [-1.0, 0.5], [-1.0, 1.0]])
clipped = []
for k in range(2):
    loss = ((model(xs) - ys) ** 2).sum()
    model.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1, foreach=FOREACH)
    clipped.append([p.grad.clone() for p in model.parameters()])
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad
'''


@pytest.mark.parametrize("foreach", [False, True])
def test_clipped_grads_are_grad_events_at_the_clip(write_scenario, foreach):
    source = CLIP.replace("FOREACH", str(foreach))
    j, g = recorded(write_scenario, "clip", source)
    at = line_of(source, "clip_grad_norm_")
    for k, p in enumerate(g["model"].parameters()):
        writes = events(j, "grad", node_of(p), at)
        assert [values(e["after"]) for e in writes] == [c[k].tolist() for c in g["clipped"]]
        assert all(values(e["before"]) != values(e["after"]) for e in writes)  # (it clipped)
    # and the update after it subtracts 0.1 times the clipped grad, as the trace has it
    assert [p["kind"] for p in j["passes"]][:4] == ["forward", "backward", "other", "update"]


OPTIMIZER = '''
"""A model trained by an optimizer of torch's"""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
opt = OPTIMIZER
xs = torch.randn(5, 3)
ys = torch.randn(5, 1)
after = []
for k in range(3):
    loss = ((model(xs) - ys) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    after.append([p.detach().clone() for p in model.parameters()])
'''
OPTIMIZERS = {
    "sgd foreach": "torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)",
    "sgd one by one": "torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=False)",
    "adam foreach": "torch.optim.Adam(model.parameters(), lr=0.01, foreach=True)",
    "adam fused": "torch.optim.Adam(model.parameters(), lr=0.01, fused=True)",
    "adamw foreach": "torch.optim.AdamW(model.parameters(), lr=0.01, foreach=True)",
}


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_each_optimizer_step_is_an_update_of_each_parameter(write_scenario, optimizer):
    source = OPTIMIZER.replace("OPTIMIZER", OPTIMIZERS[optimizer])
    j, g = recorded(write_scenario, "optimizer", source)
    at = line_of(source, "opt.step()")
    params = list(g["model"].parameters())
    for k, p in enumerate(params):
        updates = events(j, "data", node_of(p))
        each = len(updates) // 3  # (AdamW's: its weight decay, then its step)
        assert each == (2 if optimizer == "adamw foreach" else 1)
        assert [e["line"] for e in updates] == [at] * 3 * each, optimizer
        assert ([flat(e["after"]) for e in updates[each - 1::each]]
                == [a[k].double().flatten().tolist() for a in g["after"]])
    # nothing else written: the optimizer's state (momentum, Adam's averages) is no node
    nodes = {node_of(p) for p in params}
    assert {e["node"] for e in j["events"] if e["kind"] == "data"} == nodes
    assert [p["kind"] for p in j["passes"]] == (  # (the first zero_grad finds no grads)
        ["forward", "backward", "update"] + ["forward", "zero_grad", "backward", "update"] * 2)


KEPT = '''
"""Grads kept and zeroed in place, then changed through a view and through .data"""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(2, 2)
x = torch.randn(3, 2)
seen = []
for k in range(2):
    loss = (model(x) ** 2).sum()
    model.zero_grad(set_to_none=False)
    loss.backward()
    with torch.no_grad():
        model.weight.grad[0].mul_(0.5)
        seen.append(model.weight.grad.clone())
        model.bias.grad.data.clamp_(-0.25, 0.25)
        seen.append(model.bias.grad.clone())
'''


def test_grads_kept_zeroed_and_changed_through_views(write_scenario):
    j, g = recorded(write_scenario, "kept", KEPT)
    weight, bias = node_of(g["model"].weight), node_of(g["model"].bias)
    zeroed = line_of(KEPT, "zero_grad(set_to_none=False)")
    # the first zero_grad finds no grads; the second zeroes both, in place
    for nid in (weight, bias):
        (z,) = events(j, "grad", nid, zeroed)
        assert set(map(float, torch.tensor(values(z["after"])).flatten())) == {0.0}
    halved = events(j, "grad", weight, line_of(KEPT, "grad[0].mul_"))
    clamped = events(j, "grad", bias, line_of(KEPT, "clamp_"))
    assert [values(e["after"]) for e in halved] == [s.tolist() for s in g["seen"][0::2]]
    assert [values(e["after"]) for e in clamped] == [s.tolist() for s in g["seen"][1::2]]


MAKEMORE = '''
"""makemore's loop: parameters in a list, grads set to None, updates through .data"""
import torch
import torch.nn.functional as F

g = torch.Generator().manual_seed(2147483647)
C = torch.randn((27, 2), generator=g)
W = torch.randn((6, 27), generator=g)
b = torch.randn(27, generator=g)
parameters = [C, W, b]
for p in parameters:
    p.requires_grad = True
X = torch.randint(0, 27, (5, 3), generator=g)
Y = torch.randint(0, 27, (5,), generator=g)
after = []
for i in range(3):
    logits = C[X].view(-1, 6) @ W + b
    loss = F.cross_entropy(logits, Y)
    for p in parameters:
        p.grad = None
    loss.backward()
    for p in parameters:
        p.data += -0.1 * p.grad
    after.append([p.detach().clone() for p in parameters])
W.detach().mul_(2)
after.append(W.detach().clone())
b.data = b.data - 1
after.append(b.detach().clone())
'''


def test_updates_through_data_are_updates(write_scenario):
    j, g = recorded(write_scenario, "makemore", MAKEMORE)
    at = line_of(MAKEMORE, "p.data += -0.1 * p.grad")
    for k, name in enumerate(("C", "W", "b")):
        updates = events(j, "data", node_of(g[name]), at)
        assert [flat(e["after"]) for e in updates] == [
            a[k].double().flatten().tolist() for a in g["after"][:3]], name
    # `p.grad = None` over no grad (the first step) writes nothing: no zero_grad pass then
    assert [p["kind"] for p in j["passes"]][:4] == ["forward", "backward", "update", "forward"]
    (doubled,) = events(j, "data", node_of(g["W"]), line_of(MAKEMORE, "W.detach().mul_(2)"))
    assert flat(doubled["after"]) == g["after"][3].double().flatten().tolist()
    assert flat(doubled["before"]) == g["after"][2][1].double().flatten().tolist()
    (given,) = events(j, "data", node_of(g["b"]), line_of(MAKEMORE, "b.data = b.data - 1"))
    assert flat(given["after"]) == g["after"][4].double().flatten().tolist()


MOVED = '''
"""A leaf given other memory in place, its old memory written after"""
import torch

p = torch.ones(3, requires_grad=True)
(p * 2).sum().backward()
old = p.detach()  # (p's first memory, still held)
torch.ones(2).mul_(2)  # (an in-place op on no leaf: the adapter looks p's memory up)
with torch.no_grad():
    p.set_(torch.zeros(3))
    old.mul_(5)  # p's old memory, no longer p's
    p.add_(1)
'''


def test_a_leafs_old_memory_is_not_the_leaf_once_it_moved(write_scenario):
    # (`set_` goes past torch's function modes, unseen: `p.add_(1)`'s before shows it)
    j, g = recorded(write_scenario, "moved", MOVED)
    changes = [(e["line"], flat(e["before"]), flat(e["after"]))
               for e in events(j, "data", node_of(g["p"]))]
    assert changes == [(line_of(MOVED, "p.add_(1)"), [0.0] * 3, [1.0] * 3)]
    assert g["old"].tolist() == [5.0] * 3  # (written, and not as p)
