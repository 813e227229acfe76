"""The scenario line of what torch makes inside a library's code (issue 32): a node an op
makes inside `nn.Linear.forward`, under the module's `__call__`, is at the scenario line
that called the module; a backward pass's steps at the line of `loss.backward()`."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mgtui.recording.recorder import Recorder, load_scenario  # noqa: E402
from mgtui.trace.export import to_json  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_env")

NET = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        return torch.tanh(self.lin(x))


torch.manual_seed(0)
net = Net()
x = torch.randn(4, 3)
for step in range(3):
    out = net(x)
    loss = out.sum()
    net.zero_grad()
    loss.backward()
'''


def _line_of(source: str, text: str) -> int:
    (line,) = [k for k, s in enumerate(source.splitlines(), 1) if text in s]
    return line


def test_what_a_module_makes_is_at_the_scenario_line_that_called_it(write_scenario):
    path = write_scenario("net_lines", NET)
    source = path.read_text()
    j = to_json(Recorder(load_scenario(path)).run())
    assert j["error"] is None
    forward = _line_of(source, "self.lin(x)")
    made_inside = [n for n in j["nodes"] if n["op"] in ("Addmm", "T")]
    assert len(made_inside) == 6  # (each of three steps: the weight's transpose, addmm)
    assert {n["line"] for n in made_inside} == {forward}
    steps = [e for e in j["events"] if e["kind"] == "backward"]
    assert steps and {e["line"] for e in steps} == {_line_of(source, "loss.backward()")}
