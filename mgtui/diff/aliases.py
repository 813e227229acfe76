"""What an op computes, whatever the engine calls it: the one table of op names the
comparison knows (`mgtui diff` aligns two graphs' ops by it).

An engine names its ops as its author likes (`'*'`, `'mul'`, `'matmul'`, `'@'`,
`'ReLU'`); torch's recording names them after autograd's nodes (`MulBackward0` is `*`,
`MmBackward0` `Mm`, `LogSoftmaxBackward0` `LogSoftmax`). A name is read without case,
without a `Backward0`-style suffix and without surrounding underscores, then looked up
here: every name in a row is that row's kind. A name in no row is its own kind
(`cross_entropy` meets only `cross_entropy`), and `**3` is `**` whatever the exponent.

To teach the comparison another spelling, add it to its row of `ALIASES`.
"""

from __future__ import annotations

import re
from functools import lru_cache

# kind: the names that mean it (read as `kind_of` reads a name: lower case, no suffix)
ALIASES: dict[str, tuple[str, ...]] = {
    "+": ("+", "add", "radd", "plus", "addition"),
    "-": ("-", "sub", "rsub", "subtract", "minus"),
    "*": ("*", "mul", "rmul", "multiply", "times"),
    "/": ("/", "div", "truediv", "rtruediv", "divide"),
    "neg": ("neg", "negative", "negate"),
    "**": ("**", "pow", "power"),
    "matmul": ("matmul", "@", "mm", "dot", "mv", "bmm"),
    "sum": ("sum",),
    "mean": ("mean", "avg", "average"),
    "max": ("max", "amax"),
    "min": ("min", "amin"),
    "exp": ("exp",),
    "log": ("log", "ln"),
    "sqrt": ("sqrt",),
    "abs": ("abs",),
    "tanh": ("tanh",),
    "relu": ("relu",),
    "leaky_relu": ("leaky_relu", "leakyrelu"),
    "sigmoid": ("sigmoid", "logistic"),
    "softmax": ("softmax",),
    "log_softmax": ("log_softmax", "logsoftmax"),
    "cross_entropy": ("cross_entropy", "crossentropy", "cross_entropy_loss"),
    "nll_loss": ("nll_loss", "nllloss", "nll"),
    "mse_loss": ("mse_loss", "mseloss", "mse"),
    "transpose": ("transpose", "t", "permute", "swapaxes"),
    "reshape": ("reshape", "view", "unsafe_view", "unsafeview", "reshapealias",
                "flatten", "squeeze", "unsqueeze"),
    "expand": ("expand", "broadcast", "broadcast_to"),
    "getitem": ("getitem", "index", "select", "slice"),
    "cat": ("cat", "concat", "concatenate"),
}

_KIND = {name: kind for kind, names in ALIASES.items() for name in names}
_SUFFIX = re.compile(r"backward\d*$")


@lru_cache(maxsize=1024)
def kind_of(op: str) -> str:
    """`MulBackward0` → `*`, `**2` → `**`, `ReLU` → `relu`, `Mm` → `matmul`: an op by
    what it computes (a name the table lacks, lower-cased, is its own kind)."""
    name = _SUFFIX.sub("", op.strip().lower()).strip("_") or op.strip()
    if name.startswith("**"):
        return "**"
    return _KIND.get(name, name)
