"""How the torch adapter records (`mgtui.recording.torch_recorder`), where its shortcuts
could show: its backward hooks stay on the graph (once per node, not per `backward()`),
torch's `_register_hook` is swapped for the probe's own while it records, and a leaf
changed in place takes its before from the last snapshot when it still holds it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import mgtui  # noqa: E402
from mgtui.run.runner import run  # noqa: E402
from mgtui.trace.export import to_json  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_env")


def by_label(trace) -> dict[str, int]:
    return {trace.label(n): n for n in range(trace.node_count)}


def kinds(trace, kind: str) -> list[int]:
    return [i for i in range(len(trace)) if trace.kind(i).value == kind]


def test_an_update_sees_changes_no_probe_saw(write_scenario):
    path = write_scenario("unseen", '''
        """An update after changes no probe sees"""
        import torch
        p = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        for k in range(3):
            (p * p).sum().backward()  # p.grad = 2p
            with torch.no_grad():
                p -= 0.25 * p.grad  # p / 2
                if k == 0:
                    p.detach().numpy()[0] = 7.0  # numpy writes into p's memory
                if k == 1:
                    p.data.mul_(2)  # not counted in p._version
            p.grad = None
        p.data = torch.tensor([5.0, 6.0, 7.0])  # p's memory replaced
        with torch.no_grad():
            p += 1
    ''')
    events = to_json(run(path).trace)["events"]
    changes = [(tuple(e["before"]["values"]), tuple(e["after"]["values"]))
               for e in events if e["kind"] == "data"]
    assert changes == [
        ((1.0, 2.0, 3.0), (0.5, 1.0, 1.5)),
        ((7.0, 1.0, 1.5), (3.5, 0.5, 0.75)),  # the numpy write seen in its before
        ((3.5, 0.5, 0.75), (7.0, 1.0, 1.5)),  # p.data.mul_(2): an update of its own
        ((7.0, 1.0, 1.5), (3.5, 0.5, 0.75)),
        ((3.5, 0.5, 0.75), (5.0, 6.0, 7.0)),  # p.data = ...: one too
        ((5.0, 6.0, 7.0), (6.0, 7.0, 8.0)),
    ]


def test_a_graph_kept_after_the_recording_backpropagates_as_torchs_own():
    def graph():
        torch.manual_seed(0)
        x = torch.randn(3, requires_grad=True)
        w = torch.randn(3, requires_grad=True)
        return x, w, torch.tanh(x * w).sum()

    x0, w0, y0 = graph()  # torch alone
    y0.backward()
    with mgtui.record() as r:
        x, w, y = graph()  # recorded, not backpropagated
        seen = []
        handle = y.grad_fn.register_hook(lambda gi, go: seen.append("removed"))
        handle.remove()  # (a hook of the scenario's own: torch's handle, as without mgtui)
        y.grad_fn.register_hook(lambda gi, go: seen.append("kept"))
    steps = len(r.trace)
    y.backward()  # after the recording: the probe's hooks are still on the graph
    assert seen == ["kept"]
    assert torch.equal(x.grad, x0.grad) and torch.equal(w.grad, w0.grad)
    assert len(r.trace) == steps and not kinds(r.trace, "backward")


def test_a_graph_backpropagated_twice_is_two_passes_of_the_same_steps(write_scenario):
    path = write_scenario("twice", '''
        """retain_graph"""
        import torch
        a = torch.tensor([1.0, -2.0], requires_grad=True)
        b = torch.tensor([3.0, 0.5], requires_grad=True)
        y = (a * b).sum()
        y.backward(retain_graph=True)
        y.backward()
    ''')
    t = run(path).trace
    ids = by_label(t)
    steps = kinds(t, "backward")
    assert len(steps) == 2 * 4  # sum, *, a's and b's AccumulateGrad, in each pass
    assert [t.event_node(i) for i in steps[:4]] == [t.event_node(i) for i in steps[4:]]
    final = {n["label"]: n["final_grad"]["values"] for n in to_json(t)["nodes"]
             if n["label"] in ("a", "b")}
    assert final["a"] == [6.0, 1.0] and final["b"] == [2.0, -4.0]  # 2b and 2a, summed by torch
