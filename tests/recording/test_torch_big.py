"""Tensors over `WHOLE_LIMIT` elements as the lean torch adapter records them (issue 32,
point 4): a leaf changed in place takes its before from its last summary where its
version says it still holds it, a transpose and a grad set aside reuse the summary of the
memory they share, and a big gradient is summarised where it lies. Each summary must
still be that of the values the scenario itself held at that moment (min and max exact,
computed here by numpy from the scenario's own copies), through changes the version does
not count (`.data`, numpy writes), and the final gradients bit for bit the plain run's."""

from __future__ import annotations

import math
import textwrap

import pytest

torch = pytest.importorskip("torch")

from mgtui.recording import torch_recorder  # noqa: E402
from mgtui.recording.recorder import Recorder, load_scenario  # noqa: E402
from mgtui.trace.arrays import WHOLE_LIMIT  # noqa: E402
from mgtui.trace.export import to_json  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_env")

BIG = '''
"""A layer big enough to be summarised, changed behind its version's back"""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(784, 128)
w = model.weight
opt = torch.optim.SGD(model.parameters(), lr=0.5)
x = torch.randn(4, 784)
held = []  # (the weight before the step, its grad, the weight after), as the scenario saw them
for k in range(5):
    forward = w.detach().clone()
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    if k == 3:
        w.grad.data.mul_(2)  # the grad changed through .data (its version does not count it)
    held.append((forward, w.grad.clone(), None))
    opt.step()
    held[-1] = (forward, w.grad.clone(), w.detach().clone())
    if k == 1:
        w.data.mul_(0.5)  # through .data: not counted in w's version
    if k == 2:
        w.detach().numpy()[0, :3] = 0.25  # numpy writes into w's memory
'''


def summary(t) -> tuple[float, float, float, float]:
    a = t.detach().double().flatten()
    return (float(a.min()), float(a.max()), float(a.mean()), math.sqrt(float((a * a).sum())))


def assert_summarises(value: dict, t, where: str) -> None:
    assert "summary" in value, where  # (summarised, not kept whole)
    low, high, mean, norm, bad = value["summary"]
    want = summary(t)
    assert (low, high, bad) == (want[0], want[1], 0), where
    assert mean == pytest.approx(want[2], rel=1e-4, abs=1e-9), where
    assert norm == pytest.approx(want[3], rel=1e-5), where


def test_big_values_are_those_the_scenario_held(write_scenario):
    path = write_scenario("big", BIG)
    recorder = Recorder(load_scenario(path))
    j = to_json(recorder.run())
    w = recorder.globals["w"]
    assert w.numel() > WHOLE_LIMIT
    nid = getattr(w, torch_recorder.ATTR)[1]
    held = recorder.globals["held"]
    lines = textwrap.dedent(BIG).lstrip().splitlines()
    step_line = lines.index("    opt.step()") + 1
    changes = [e for e in j["events"] if e["kind"] == "data" and e["node"] == nid]
    updates = [e for e in changes if e["line"] == step_line]
    assert len(updates) == 5
    (halved,) = [e for e in changes if e["line"] != step_line]  # `w.data.mul_(0.5)`
    assert halved["line"] == lines.index("        w.data.mul_(0.5)  # through .data: not "
                                         "counted in w's version") + 1
    assert_summarises(halved["before"], held[1][2], "before w.data.mul_(0.5)")
    assert_summarises(halved["after"], held[1][2] * 0.5, "after w.data.mul_(0.5)")
    for k, (e, (forward, _, after)) in enumerate(zip(updates, held)):
        assert_summarises(e["before"], forward, f"step {k}: before")
        assert_summarises(e["after"], after, f"step {k}: after")
    set_aside = [e for e in j["events"] if e["kind"] == "grad" and e["node"] == nid
                 and e["after"] == 0.0]  # (zero_grad: the grad the step before left)
    assert len(set_aside) == 4
    for k, e in enumerate(set_aside):
        assert_summarises(e["before"], held[k][1], f"zero_grad of step {k + 1}")
    transposes = [n for n in j["nodes"] if n["op"] == "T" and n["children"] == [nid]]
    assert len(transposes) == 5
    for k, n in enumerate(transposes):
        assert n["data"]["shape"] == [784, 128]
        assert_summarises(n["data"], held[k][0], f"the transpose in step {k}")
        assert n["data"]["first"] == held[k][0].t().flatten()[:len(n["data"]["first"])].tolist()
    into_w = [wr for e in j["events"] if e["kind"] == "backward"
              for wr in e["writes"] if wr["node"] == nid]
    assert len(into_w) == 5
    for k, wr in enumerate(into_w):  # (step 3's doubled after the backward: not yet here)
        g = held[k][1] / 2 if k == 3 else held[k][1]
        assert_summarises(wr["after"], g, f"the backward's write into w.grad in step {k}")


def test_big_gradients_are_bit_for_bit_the_plain_runs(write_scenario):
    path = write_scenario("big", BIG)
    scope = {"__name__": "__main__"}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    recorder = Recorder(load_scenario(path))
    recorder.run()
    for (name, want), got in zip(scope["model"].named_parameters(),
                                 recorder.globals["model"].parameters()):
        assert torch.equal(got.grad, want.grad), name
        assert torch.equal(got.detach(), want.detach()), name


FUNCTION = '''
"""A custom Function on a big tensor, its grad summed over two passes"""
import torch


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


torch.manual_seed(0)
x = torch.randn(300, 300, requires_grad=True)
grads = []
for k in range(2):
    y = Twice.apply(x)
    loss = (y * y).sum()
    loss.backward()  # x.grad += 8x, onto the last pass's
    grads.append(x.grad.clone())
    with torch.no_grad():
        x.data.mul_(0.5)  # through .data
'''


def test_a_custom_functions_big_step_is_recorded_and_explained(write_scenario):
    from mgtui.session.timeline import Timeline
    from mgtui.trace import EventKind
    from mgtui.trace.engines import explain

    path = write_scenario("twice", FUNCTION)
    recorder = Recorder(load_scenario(path))
    trace = recorder.run()
    x = recorder.globals["x"]
    nid = getattr(x, torch_recorder.ATTR)[1]
    steps = [i for i in range(len(trace)) if trace.kind(i) is EventKind.BACKWARD
             and trace.op(trace.event_node(i)) == "Twice"]
    assert len(steps) == 2
    for k, index in enumerate(steps):
        assert trace.closure_of(index).name == "backward"  # (Twice.backward, its source)
        line = Timeline(trace)
        line.seek(index + 1)
        e = explain(trace, line.data, line.grad, index)
        assert e.kind == "backward" and e.node == trace.event_node(index)
        (into_x,) = [c for c in e.contributions if c.target == nid]
        assert into_x.line == 12  # `return g * 2`
        assert_summarises(_json_value(into_x.after), recorder.globals["grads"][k],
                          f"pass {k}")


def _json_value(value) -> dict:
    low, high, mean, norm, bad = value.summary
    return {"summary": [low, high, mean, norm, bad]} if not value.whole else {}
