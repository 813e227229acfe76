"""Values the torch adapter takes once and uses again (issue 32): a value it takes
(its size worked out from its shape) is the tensor's, and the grad a
`zero_grad` lets go is recorded as it is then, whether the adapter reads it again or
gives the value a recorded `backward()` left (whatever changed the grad in between)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mgtui.recording import torch_backward, torch_recorder  # noqa: E402
from mgtui.recording.recorder import Recorder, load_scenario  # noqa: E402
from mgtui.trace.arrays import ArrayValue  # noqa: E402
from mgtui.trace.export import to_json  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_env")


@pytest.mark.parametrize("dtype,name", [(torch.float32, "float32"), (torch.float64, "float64")])
def test_a_value_taken_is_the_one_the_constructor_makes(dtype, name):
    t = torch.tensor([[1.5, -2.0, 3.25], [4.0, 0.0, -6.5]], dtype=dtype)
    want = ArrayValue((2, 3), name, t.numpy().tobytes())
    got = torch_backward.taken(t)
    assert type(got) is ArrayValue
    for slot in ArrayValue.__slots__:
        assert getattr(got, slot) == getattr(want, slot), slot
    assert list(got.values) == [1.5, -2.0, 3.25, 4.0, 0.0, -6.5]


SCENARIO = '''
"""Grads changed between backward and zero_grad"""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(3, 2)
x = torch.randn(4, 3)
seen = []
for k in range(5):
    loss = (model(x) ** 2).sum()
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        if k == 1:
            model.weight.grad.mul_(2)  # counted in the grad's version
        if k == 2:
            model.weight.grad.data.mul_(3)  # through .data: not counted
        if k == 3:
            model.weight.grad.numpy()[0, 0] = 7.0  # through numpy: not counted
    seen.append(model.weight.grad.clone())
model.zero_grad()
'''


def test_zero_grad_records_each_grad_as_it_is_let_go(write_scenario):
    recorder = Recorder(load_scenario(write_scenario("changed_grads", SCENARIO)))
    j = to_json(recorder.run())
    weight = getattr(recorder.globals["model"].weight, torch_recorder.ATTR)[1]
    events = [e for e in j["events"] if e["kind"] == "grad" and e["node"] == weight]
    let_go = [e["before"]["values"] for e in events if e["after"] == 0.0]
    want = [g.tolist() for g in recorder.globals["seen"]]
    assert let_go == want
    # (the two changes made through torch are grad events of their own, the one through
    # numpy's memory is not seen: tests/recording/test_torch_writes.py)
    assert [e["after"]["values"] for e in events if e["after"] != 0.0] == want[1:3]
