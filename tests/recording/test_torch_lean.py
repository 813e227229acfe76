"""The torch adapter's lean forward path (issue 32 point 4): a built-in autograd node's
hook is registered inline by its class, a custom Function's through its own hooks, and
the names are given by `TensorNames`, the object the adapter holds."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from mgtui.recording.recorder import record  # noqa: E402
from mgtui.trace.export import to_json  # noqa: E402

SQUARE_AFTER_TANH = '''
    """A custom Function after built-in ops, in two rounds"""
    import torch


    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g


    for k in range(2):
        w = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
        h = torch.tanh(w * 3.0)
        y = Square.apply(h).sum()
        y.backward()
'''


def test_a_custom_function_after_built_in_nodes_keeps_its_own_step(write_scenario):
    """In the second round every built-in class has been seen (its hook registered
    inline); the custom Function's node is still its own step, at its backward's line,
    and w's gradient is the analytic one: d/dw sum(tanh(3w)^2) = 6 tanh(3w)(1 - tanh^2)."""
    trace = record(write_scenario("square", SQUARE_AFTER_TANH))
    backward = [p for p in trace.passes if p.kind == "backward"]
    assert len(backward) == 2
    for p in backward:
        names = [trace.closure_of(i).name for i in trace.backward_calls(p)]
        assert names == ["SumBackward0", "backward", "TanhBackward0", "MulBackward0",
                         "AccumulateGrad"]
    j = to_json(trace)
    ws = [n for n in j["nodes"] if n["label"] == "w"]
    assert len(ws) == 2
    for w in ws:
        want = [6 * math.tanh(3 * x) * (1 - math.tanh(3 * x) ** 2) for x in (0.5, -1.0)]
        assert w["final_grad"]["values"] == pytest.approx(want, rel=1e-12)
    custom_writes = [w for e in j["events"] if e["kind"] == "backward"
                     for w in e.get("writes", ()) if w.get("line") == 14]
    assert len(custom_writes) == 2  # one `+=` into h's grad in each round, at `return`


def test_names_are_given_by_the_variable_and_the_module_path(write_scenario):
    """`TensorNames`: `out` is named where it is bound in each round, the module's
    parameters by their path, a global tensor by its name."""
    trace = record(write_scenario("named", '''
        """Names"""
        import torch
        from torch import nn

        lin = nn.Linear(2, 1)
        x = torch.tensor([[1.0, 2.0]])
        for k in range(3):
            out = lin(x).sum()
            out.backward()
        scale = torch.tensor(2.0, requires_grad=True)
        z = scale * out
    '''))
    labels = [trace.label(n) for n in range(trace.node_count)]
    assert labels.count("out") == 3
    assert "weight" in labels and "bias" in labels
    assert "scale" in labels and "z" in labels


def test_the_torch_adapter_stops_at_max_nodes_through_the_probes_context(write_scenario):
    """A torch run past `--max-nodes` stops there, saying why, as a scalar one does: the
    adapter asks its typed context (`RecordingContext.over_limit`), not the recorder."""
    from mgtui.recording.recorder import Recorder
    from mgtui.recording.scenario import load_scenario

    path = write_scenario("torch_max_nodes", '''
        import torch
        w = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
        for k in range(20):
            h = torch.tanh(w * 3.0)
            y = (h * h).sum()
            y.backward()
    ''')
    recorder = Recorder(load_scenario(path), max_nodes=7)
    trace = recorder.run()
    assert trace.node_count == 7
    assert recorder.stop_reason == "more than 7 nodes (--max-nodes)"
    assert "more than 7 nodes (--max-nodes)" in trace.error.message
