"""A node's name where space is tight: a path shortened to a width, keeping its end.
Shared by the panes, the session's views and the exports."""

from __future__ import annotations


def shorten(name: str, width: int) -> str:
    """A name cut to `width` columns, keeping its end: a path's middle attributes go to
    their first letter (`model.l[0].n[1].w[0]`), then its first steps (`…n[1].w[0]`)."""
    if len(name) <= width:
        return name
    if "." in name:
        head, *middle, last = name.split(".")
        steps = [head, *(_initial(m) for m in middle if m), last]
        short = ".".join(steps)
        while len(short) > width and len(steps) > 1:  # then the steps it starts with
            steps.pop(0)
            short = "…" + ".".join(steps)
        if len(short) <= width:
            return short
        name = short
    if width <= 1:
        return name[-width:] if width > 0 else ""
    return "…" + name[len(name) - width + 1:]


def _initial(step: str) -> str:
    """`neurons[1]` -> `n[1]`, `layer` -> `l`."""
    return step[0] + step[step.index("["):] if "[" in step else step[0]


def fitted_name(trace, nid: int, width: int) -> str:
    """What node `nid` of `trace` is called, a path shortened to `width` (`shorten`);
    a label the script gave is left whole, for the caller to cut at its end."""
    label = trace.label(nid)
    return shorten(label, width) if trace.derived_name(nid) else label
