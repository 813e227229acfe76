"""The tolerance two values of a comparison are compared with; the values themselves,
a float or an array, are the array engine's part of a comparison
(`mgtui.diff.array_values`), where a float compares as a number."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mgtui.diff.array_values import Value, apart


@dataclass(frozen=True)
class Tolerance:
    """Two numbers agree when |a − b| ≤ atol + rtol·max(|a|, |b|); two arrays when
    their shapes are the same and so do their elements, one by one."""

    rtol: float = 1e-4
    atol: float = 1e-6

    def close(self, a: float, b: float) -> bool:
        if a == b:
            return True
        if not (math.isfinite(a) and math.isfinite(b)):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= self.atol + self.rtol * max(abs(a), abs(b))

    def window(self, v: float) -> tuple[float, float]:
        slack = self.atol + self.rtol * abs(v) * 1.0001
        return v - slack, v + slack

    def agree(self, a: Value, b: Value) -> bool:
        return self.apart(a, b) is None

    def apart(self, a: Value, b: Value) -> int | None:
        """Where two values differ: None if they agree; for arrays the C-order index of
        the first element that differs (-1: their shapes do; or, for arrays kept only in
        part, their summaries); 0 for two numbers that differ (`array_values.apart`)."""
        return apart(self, a, b)

    def __str__(self) -> str:
        return f"|a − b| ≤ {self.atol:g} + {self.rtol:g}·max(|a|, |b|)"
