"""mgtui: a terminal step-through debugger for micrograd-style autograd graphs.

From the command line, `mgtui SCENARIO.py` (see `mgtui --help`). From your own code:

- `mgtui.show(root)` opens the debugger on the graph behind a `Value`, in this
  terminal, and returns when you quit it. Your Values are left as they were.
- `mgtui.record()` is a context manager that records the block inside it: its
  trace can be shown, saved, or checked.
- `mgtui.check(target)` runs the gradient doctor on a scenario file, a function that
  builds a graph and runs backward, or a recording, and returns its findings:
  `assert not mgtui.check(...)` in a test.
"""

from mgtui.api import Findings, Recording, check, record, show
from mgtui.version import __version__
__all__ = ["Findings", "Recording", "check", "record", "show", "__version__"]
