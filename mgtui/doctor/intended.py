"""Intended gradients (issue 33): a gradient finding where finite differences give 0
and the backward gives a non-zero gradient is worded as a possible straight-through or
surrogate gradient, and an op marked intended (`mgtui.intended_gradient` on its
Function or the function that makes it, or `[tool.mgtui] intended_gradient` in the
`pyproject.toml` above the code) is not reported: a note says so."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from mgtui.doctor.findings import Finding, Report
from mgtui.marks import INTENDED

GRADIENT_KINDS = ("wrong-derivative", "wrong-gradient")
ZERO = 1e-9  # a finite difference this small is 0 (the nudges are 1e-6 and 1e-7)
HOW = ("If that is intended, mark the op with @mgtui.intended_gradient or list it in "
       "[tool.mgtui] intended_gradient in pyproject.toml")


def names_for(start: str | os.PathLike | None, marked: object = ()) -> set[str]:
    """The ops marked intended: `marked` (the names a run's `mgtui.intended_gradient`
    saw), this process's, and the `pyproject.toml` above `start`'s."""
    names = {str(n) for n in (marked or ()) if isinstance(n, str)} | INTENDED
    if start is not None:
        names |= configured(start)
    return names


def configured(start: str | os.PathLike) -> set[str]:
    """`[tool.mgtui] intended_gradient` of the first `pyproject.toml` walking up from
    `start` ({} if none, or if it cannot be read: a bad table is the fields' to say)."""
    here = Path(start).resolve()
    for folder in ([here] if here.is_dir() else []) + list(here.parents):
        candidate = folder / "pyproject.toml"
        try:
            data = candidate.read_bytes()
        except OSError:
            continue
        if b"intended_gradient" not in data:
            return set()
        import tomllib

        try:
            table = tomllib.loads(data.decode("utf-8")).get("tool", {}).get("mgtui", {})
        except (UnicodeDecodeError, tomllib.TOMLDecodeError):
            return set()
        value = table.get("intended_gradient", ()) if isinstance(table, dict) else ()
        return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()
    return set()


def settle(report: Report, names: set[str]) -> Report:
    """`report` with the findings on ops marked intended left out (a note each), and
    a gradient that finite differences give as 0 worded as a possible straight-through
    or surrogate gradient."""
    kept: list[Finding] = []
    for f in report.findings:
        if f.kind in GRADIENT_KINDS and f.op and f.op in names:
            report.notes.append(f"the gradient of {f.op} is marked intended "
                                f"(mgtui.intended_gradient or [tool.mgtui] intended_gradient): "
                                f"not reported")
            continue
        kept.append(reworded(f))
    report.findings = kept
    return report


def reworded(f: Finding) -> Finding:
    if f.kind not in GRADIENT_KINDS or f.recorded is None or abs(f.recorded) <= ZERO:
        return f
    numbers = [x for x in (f.local, f.numerical) if x is not None]
    if not numbers or any(abs(x) > ZERO for x in numbers):
        return f
    return replace(f, message=f"{f.message} Finite differences give 0 where the backward "
                   f"gives {f.recorded:.6g}: a straight-through or surrogate gradient? {HOW}.")
