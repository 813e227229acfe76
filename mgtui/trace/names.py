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


# -- finding a node by the name the table shows ------------------------------------------------

def shown_as(trace, nid: int, query: str) -> bool:
    """Is `query` node `nid`'s name as the table shows it at some width: its label, or
    its path shortened (`model.l[1].n[0].b`, `…n[0].b`; `...` typed for `…`)?"""
    query = query.strip().replace("...", "…")
    label = trace.label(nid)
    return query == label or bool(trace.derived_name(nid)) and shorten(label, len(query)) == query


def mentions(trace, nid: int, query: str) -> bool:
    """Does node `nid`'s name hold `query`, case-insensitively: as text, or for a path
    as whole steps, each written out or shortened (`l[1].n[0]` in
    `model.layers[1].neurons[0].b`)?"""
    needle = query.strip().replace("...", "…").strip("…").lower()
    label = trace.label(nid).lower()
    if not needle or needle in label:
        return bool(needle)
    if not trace.derived_name(nid) or "." not in label:
        return False
    want, have = needle.split("."), label.split(".")
    for i in range(len(have) - len(want) + 1):
        if all(q in (s, _initial(s)) for q, s in zip(want, have[i:])):
            return True
    return False
