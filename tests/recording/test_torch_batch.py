"""A torch backward pass made into records in one batch (`BackwardRun.settle`), and
`zero_grad` recorded without the mode: the trace is the one each hook and each
`p.grad = None` recorded as it ran, and the final gradients are torch's own."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mgtui.recording import torch_backward  # noqa: E402
from mgtui.recording.recorder import Recorder, load_scenario, record  # noqa: E402
from mgtui.trace.export import to_json  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_env")

PASSES = '''
"""Grads added over passes, a leaf used twice, a fan-out, a custom Function"""
import torch


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


a = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
b = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
for k in range(3):
    h = Twice.apply(a * a)
    c = h + h * 3
    y = (c * a).sum() + (b * b).exp()
    y.backward(retain_graph=k == 0)
    if k == 0:
        y.backward()  # a second pass adds into the leaves' grads in place
    if k == 1:
        a.grad = None
grads = [a.grad.clone(), b.grad.clone()]
'''


def _plain(source: str, tmp_path) -> dict:
    scope: dict = {"__name__": "__main__"}
    exec(compile(source, str(tmp_path / "plain.py"), "exec"), scope)
    return scope


def test_steps_made_as_the_pass_runs_or_after_it_are_the_same_trace(write_scenario,
                                                                     monkeypatch):
    """Made one by one while the engine runs (`SETTLE_EVERY` 1: each hook makes its own
    step, a leaf's grad before the pass read as the hook runs) or in one batch when
    `backward()` returns: the same trace, byte for byte."""
    path = write_scenario("passes", PASSES)
    batched = to_json(record(path))
    monkeypatch.setattr(torch_backward, "SETTLE_EVERY", 1)
    one_by_one = to_json(record(path))
    assert one_by_one == batched
    writes = [w for e in batched["events"] if e["kind"] == "backward"
              for w in e.get("writes", ())]
    assert len(writes) > 20


def test_gradients_held_until_the_pass_ends_leave_the_final_grads_bit_for_bit(
        write_scenario, tmp_path):
    path = write_scenario("passes", PASSES)
    recorder = Recorder(load_scenario(path))
    recorder.run()
    want = _plain(PASSES, tmp_path)["grads"]
    got = recorder.globals["grads"]
    assert all(torch.equal(g, w) and g.dtype == w.dtype for g, w in zip(got, want))
    assert got[0].tolist() != [0.0, 0.0, 0.0]


def test_a_custom_backward_writing_into_its_gradient_leaves_the_write_before_it(
        write_scenario):
    """The steps noted before a custom Function's backward are made before it runs:
    its in-place write into the gradient it is given comes after the write that gave
    it (in the trace, the gradient as it was passed on)."""
    path = write_scenario("inplace", '''
        """A backward writing into its gradient"""
        import torch


        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1.0

            @staticmethod
            def backward(ctx, g):
                return g.mul_(10)


        a = torch.tensor([1.0, 2.0], requires_grad=True)
        s = Scale.apply(a)
        y = (s * torch.tensor([3.0, 4.0])).sum()
        y.backward()
    ''')
    j = to_json(record(path))
    label = {k: n["label"] for k, n in enumerate(j["nodes"])}
    into_s = [w["after"]["values"] for e in j["events"] if e["kind"] == "backward"
              for w in e.get("writes", ()) if label[w["node"]] == "s"]
    assert into_s == [[3.0, 4.0]]  # as the multiplication's backward gave it
    a = next(n for n in j["nodes"] if n["label"] == "a")
    assert a["final_grad"]["values"] == [30.0, 40.0]  # torch's own


ZERO_GRAD = '''
"""zero_grad, {how}"""
import torch
from torch import nn

torch.manual_seed(3)
model = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 2)
for k in range(3):
    loss = (model(x) ** 2).sum()
    {zero}
    loss.backward()
    opt.step()
    model[2].bias.grad = None  # (one grad already None at the next zero_grad)
'''


@pytest.mark.parametrize("zero", ["model.zero_grad()", "opt.zero_grad()"])
def test_zero_grad_records_what_each_p_grad_none_records(write_scenario, zero):
    """`zero_grad` (a module's, an optimizer's) records each grad it sets to None as a
    grad event, as the same `p.grad = None` written out in the scenario records it:
    the same nodes, values and order."""
    loop = "for p in [q for q in model.parameters() if q.grad is not None]: p.grad = None"
    by_hand = to_json(record(write_scenario("by_hand", ZERO_GRAD.format(how="by hand",
                                                                        zero=loop))))
    wrapped = to_json(record(write_scenario("wrapped", ZERO_GRAD.format(how=zero, zero=zero))))

    def grad_events(j):
        return [(e["node"], e["before"], e["after"]) for e in j["events"]
                if e["kind"] == "grad"]

    events = grad_events(wrapped)
    assert events == grad_events(by_hand)
    lines = [e["line"] for e in wrapped["events"] if e["kind"] == "grad" and e["after"] == 0.0]
    assert sorted(lines) == [11] * 6 + [14] * 3  # 3 grads of 4 set aside by two zero_grads
    assert all(before != 0.0 for _, before, after in events if after == 0.0)  # (the grads)


def test_zero_grad_without_set_to_none_records_no_grad_event(write_scenario):
    path = write_scenario("zeroed", ZERO_GRAD.format(
        how="zeroed in place", zero="model.zero_grad(set_to_none=False)"))
    recorder = Recorder(load_scenario(path))
    j = to_json(recorder.run())
    assert [e["line"] for e in j["events"] if e["kind"] == "grad" and e["after"] == 0.0
            ] == [14] * 3  # (the bias set aside by hand only)
    assert recorder.globals["model"][0].weight.grad is not None
