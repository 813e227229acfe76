"""mgtui: a terminal step-through debugger for micrograd-style autograd graphs.

From the command line, `mgtui SCENARIO.py` (see `mgtui --help`). From your own code:

- `mgtui.show(root)` opens the debugger on the graph behind a `Value`, in this
  terminal, and returns when you quit it. Your Values are left as they were.
- `mgtui.record()` is a context manager that records the block inside it: its
  trace can be shown, saved, or checked.
- `mgtui.check(target)` runs the gradient doctor on a scenario file, a function that
  builds a graph and runs backward, or a recording, and returns its findings:
  `assert not mgtui.check(...)` in a test.
- `@mgtui.intended_gradient` on a custom Function or an op says its gradient differs
  from its forward's derivative by design (a straight-through estimator): the doctor
  does not report it.
"""

from mgtui.api import Findings, Recording, check, record, show
from mgtui.marks import intended_gradient
from mgtui.version import __version__
__all__ = ["Findings", "Recording", "check", "intended_gradient", "record", "show",
           "__version__"]
