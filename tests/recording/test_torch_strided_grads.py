"""A tensor laid out out of C order (a gradient the engine passes on transposed, as
`TBackward0` does, or expanded, as `SumBackward0` does) taken straight by the torch
adapter (`torch_backward.taken`, issue 32): its elements in C order, one copy, what a
C-order copy of the tensor holds; a tensor it cannot read so is left to `value_of`."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mgtui.recording.torch_backward import taken  # noqa: E402
from mgtui.trace.arrays import ArrayValue  # noqa: E402


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("make", [
    lambda d: torch.arange(12, dtype=d).reshape(3, 4).t(),  # transposed
    lambda d: torch.tensor([1.5], dtype=d).expand(4),  # expanded: stride 0
    lambda d: torch.tensor([[1.0], [-2.0]], dtype=d).expand(2, 3),
    lambda d: torch.arange(10, dtype=d)[::3],  # a strided slice
], ids=["transposed", "expanded", "expanded-2d", "sliced"])
def test_a_tensor_out_of_c_order_is_taken_in_c_order(make, dtype) -> None:
    t = make(dtype)
    assert not t.is_contiguous()
    value = taken(t)
    assert type(value) is ArrayValue
    assert value.shape == tuple(t.shape)
    assert value.dtype == ("float32" if dtype == torch.float32 else "float64")
    assert list(value.values) == t.contiguous().flatten().tolist()


def test_the_copy_is_taken_now() -> None:
    base = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    value = taken(base.t())
    base.mul_(10)  # (after the take: not in the value)
    assert list(value.values) == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]


def test_what_it_cannot_read_so_is_left_to_value_of() -> None:
    grad_tracked = torch.ones(3, 2, requires_grad=True).t()  # (numpy() refuses it)
    assert taken(grad_tracked) is None
    negated = torch._neg_view(torch.ones(2, 3)).t()  # (its bytes are not its values)
    assert taken(negated) is None
    assert taken(torch.arange(6, dtype=torch.int64).reshape(2, 3).t()) is None
