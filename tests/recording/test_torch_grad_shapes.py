"""What the torch adapter reads of a tensor, and what it no longer reads (issue 32): a
gradient a backward pass gives an op's node is taken with the shape and dtype of that
node's value as the op made it (the engine has checked it against them), the hooks the
adapter gives autograd nodes leave the scenario's own node hooks removable, and a tensor
given other memory (`t.data = u`) is read again rather than through the array kept of it."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from mgtui.recording import torch_recorder  # noqa: E402
from mgtui.recording.recorder import Recorder, load_scenario  # noqa: E402
from mgtui.trace.export import to_json  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_env")

LAYERS = '''
"""Two layers, by hand"""
import torch

torch.manual_seed(3)
x = torch.randn(4, 3, dtype=DTYPE)
W1 = torch.randn(3, 5, dtype=DTYPE, requires_grad=True)
b1 = torch.randn(5, dtype=DTYPE, requires_grad=True)
W2 = torch.randn(5, 2, dtype=DTYPE, requires_grad=True)
h = x @ W1 + b1
a = torch.tanh(h)
out = a @ W2
loss = (out ** 2).sum()
'''


def _node(recorder: Recorder, name: str) -> int:
    return getattr(recorder.globals[name], torch_recorder.ATTR)[1]


def _grad_writes(j: dict, node: int) -> list:
    return [w for e in j["events"] for w in e.get("writes", ())
            if w["node"] == node and w["field"] == "grad"]


def _recorded_against_torch(write_scenario, name: str, source: str, dtype: str,
                            tensors: tuple[str, ...]) -> None:
    """Record `source` (its loss's backward appended), and check the one gradient each of
    `tensors` is given against torch's own (`autograd.grad` over the same forward, run
    again here): its shape, dtype and values."""
    source = source.replace("DTYPE", f"torch.{dtype}")
    path = write_scenario(f"{name}_{dtype}", source + "loss.backward()\n")
    recorder = Recorder(load_scenario(path))
    j = to_json(recorder.run())
    assert j["error"] is None
    scope: dict = {}
    exec(compile(source, name, "exec"), scope)
    want = torch.autograd.grad(scope["loss"], [scope[n] for n in tensors])
    for tensor, grad in zip(tensors, want):
        writes = _grad_writes(j, _node(recorder, tensor))
        assert len(writes) == 1, tensor  # (one op takes each: one gradient, its first write)
        after = writes[0]["after"]
        assert after["shape"] == list(grad.shape), tensor
        assert after["dtype"] == dtype, tensor
        assert after["values"] == grad.tolist(), tensor


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_each_gradient_an_op_node_is_given_is_the_engines(write_scenario, dtype):
    _recorded_against_torch(write_scenario, "layers", LAYERS, dtype, ("h", "a", "out"))


TRANSPOSED = '''
"""A gradient passed on transposed"""
import torch

torch.manual_seed(4)
x = torch.randn(4, 3, dtype=DTYPE)
W = torch.randn(3, 5, dtype=DTYPE, requires_grad=True)
c = torch.randn(5, 4, dtype=DTYPE)
h = torch.tanh(x @ W)
loss = (h.t() * c).sum()
'''


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_gradient_an_op_node_is_given_out_of_c_order_is_the_engines(write_scenario, dtype):
    # (`h.t()`'s backward gives `h` its gradient transposed: a view, not in C order)
    _recorded_against_torch(write_scenario, "transposed", TRANSPOSED, dtype, ("h",))


NODE_HOOKS = '''
"""A node hook of the scenario's own, registered on a node the adapter has hooked"""
import torch

x = torch.randn(3, requires_grad=True)
y = (x * 2).sum()
calls = []
removed = y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: calls.append("removed"))
removed.remove()
kept = y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: calls.append("kept"))
y.backward()
'''


def test_a_node_hook_of_the_scenarios_own_is_removed_by_its_handle(write_scenario):
    recorder = Recorder(load_scenario(write_scenario("node_hooks", NODE_HOOKS)))
    j = to_json(recorder.run())
    assert j["error"] is None
    assert recorder.globals["calls"] == ["kept"]
    y = _node(recorder, "y")
    assert [e["node"] for e in j["events"] if e["kind"] == "backward"][0] == y


OTHER_MEMORY = '''
"""A parameter given the same memory in another shape"""
import torch

p = torch.arange(16.0, requires_grad=True)
(p * 2).sum().backward()
with torch.no_grad():
    p -= 1.0
same = p.detach()  # (its memory, no `.data`)
p.data = same.view(4, 4)  # what changes `p` so is not counted in its version
with torch.no_grad():
    p -= 1.0
'''


def test_a_tensor_given_its_memory_in_another_shape_is_recorded_in_it(write_scenario):
    recorder = Recorder(load_scenario(write_scenario("other_memory", OTHER_MEMORY)))
    j = to_json(recorder.run())
    assert j["error"] is None
    p = _node(recorder, "p")
    changes = [e for e in j["events"] if e["kind"] == "data" and e["node"] == p]
    assert len(changes) == 3
    first, given, last = changes
    assert first["after"]["shape"] == [16]
    assert given["before"]["shape"] == [16] and given["after"]["shape"] == [4, 4]  # `p.data =`
    assert given["after"]["values"] == last["before"]["values"]
    assert last["before"]["shape"] == last["after"]["shape"] == [4, 4]
    assert last["before"]["values"] == [[4.0 * r + c - 1.0 for c in range(4)] for r in range(4)]
    assert last["after"]["values"] == [[4.0 * r + c - 2.0 for c in range(4)] for r in range(4)]


def test_a_zero_tensor_without_memory_is_not_read():
    # (autograd's `_efficientzerotensor` has no memory: its data pointer is 0, which
    # read would end the process; in a process of its own, so that it is seen)
    code = ("import torch\nfrom mgtui.recording.torch_backward import taken\n"
            "print(taken(torch._efficientzerotensor((3, 4))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "None"
