"""Two runs side by side (`mgtui diff A B`): each recorded in a child process of its own
(or read from a saved trace), their graphs aligned — by op, by value, by order — and the
first node whose value or gradient differs beyond a tolerance named, with the line on
each side that produced it.

The modules: `sides` opens a side (a run or a saved trace); `passes` reads one backward
pass of a trace as the comparison needs it; `align` matches the nodes of two of them;
`array_values` the numbers and arrays compared, element by element (the array engine's
part; a float is a number), `values` the tolerance; `result` finds the first difference
and holds what was found.
"""

from __future__ import annotations

from mgtui.diff.result import Comparison, Difference, compare, compare_traces
from mgtui.diff.values import Tolerance
from mgtui.diff.sides import Side, open_sides

__all__ = ["Comparison", "Difference", "Side", "Tolerance", "compare", "compare_traces",
           "open_sides"]
