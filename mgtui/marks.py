"""Marks a user puts on their own code for the gradient doctor (issue 33).

`mgtui.intended_gradient` says an op's gradient differs from its forward's derivative
by design (a straight-through estimator, a surrogate gradient): the doctor then does
not report it. No import here: a scenario's module applies it as it is defined.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")

MARK = "__mgtui_intended_gradient__"
INTENDED: set[str] = set()  # the names marked in this process (an op's, a Function's)


def intended_gradient(target: T) -> T:
    """Decorate a custom `torch.autograd.Function` class, or the method or function that
    makes an op, whose gradient is intended to differ from the derivative of its forward
    pass (a straight-through estimator, a surrogate gradient): the doctor does not
    report its gradient. The op is matched by name: the class's name (a Function, as the
    trace names it), or the function's name (make it the op's `_op`, e.g. `def sign` for
    `_op='sign'`). `[tool.mgtui] intended_gradient = ["sign", "STE"]` in pyproject.toml
    says the same without touching the code."""
    name = getattr(target, "__name__", None)
    if not isinstance(name, str):
        raise TypeError("mgtui.intended_gradient marks a class or a function")
    try:
        setattr(target, MARK, True)
    except (AttributeError, TypeError):
        pass  # (a builtin: its name is enough)
    INTENDED.add(name)
    return target
