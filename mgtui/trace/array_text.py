"""The array engine's values as the panes write them: what the rooms above ask of a
value that may be an array (`mgtui.trace.arrays.ArrayValue`) or a float among arrays.
Each answers None (or the float) for a number, which the asker writes as it writes
the scalar engine's."""

from __future__ import annotations

from typing import Callable

from mgtui.trace.arrays import ArrayValue, box_shape, brief, display


def fitted(x: object, width: int, cells: Callable[[str], int] = len) -> str | None:
    """An array in full if that fits in `width` (`cells`: a text's width), else its
    shape and a summary (which may not fit either); None for a number."""
    if not isinstance(x, ArrayValue):
        return None
    text = display(x)
    return text if cells(text) <= width else brief(x)


def boxed(x: object, width: int) -> tuple[str | None, object]:
    """An array as a graph box writes it: (its shape, `100×16`, cut to `width`, x); a
    one-element array is its number, (None, that float); a number is (None, itself)."""
    if not isinstance(x, ArrayValue):
        return None, x
    if x.size == 1 and x.values:
        return None, x.values[0]
    text = box_shape(x.shape)
    return (text if len(text) <= width else text[: max(width - 1, 0)] + "…"), x


def non_finite_warning(label: str, name: str, value: object) -> str | None:
    """What the step detail says of `label.name` holding nan or inf elements (None if
    it holds none, or is a number: the asker says that of a number)."""
    if not isinstance(value, ArrayValue) or value.finite:
        return None
    first = value.first_non_finite()
    at = f", the first at flat index {first}" if first is not None else ""
    return (f"⚠ {label}.{name} holds {value.summary[4]:,} elements that are nan or "
            f"inf{at}: everything computed from them will not be finite either")


def is_number(value: object) -> bool:
    """Is `value` a number (not an array)?"""
    return not isinstance(value, ArrayValue)
