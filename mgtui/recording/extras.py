"""The optional parts of mgtui a scenario may need, and what to say when one is missing.

A bundled lesson that needs an extra (the tensor lessons numpy, the torch lessons
PyTorch) fails on a plain install with the scenario's own `import`; the recorder turns
that `ModuleNotFoundError` into one line that says how to install the extra.
"""

from __future__ import annotations

# the top-level module a scenario imports -> (what it is, the extra that installs it)
EXTRAS: dict[str, tuple[str, str]] = {
    "torch": ("PyTorch", "torch"),
    "numpy": ("numpy", "tensor"),
}


def install_hint(module: str) -> str | None:
    """What to say when the scenario's `import module` finds nothing (None: a module
    no extra of mgtui installs)."""
    known = EXTRAS.get(module.partition(".")[0])
    if known is None:
        return None
    what, extra = known
    return (f"this scenario uses {what}, which is not installed here: "
            f"install it with  pip install 'mgtui[{extra}]'")


def missing_extra(exc: BaseException) -> str | None:
    """`exc`'s message if it is a scenario's import of a module an extra installs
    failing because the extra is not installed, else None."""
    if not isinstance(exc, ModuleNotFoundError):
        return None
    return install_hint(exc.name or "")
