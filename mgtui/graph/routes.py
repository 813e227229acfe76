"""The channels between a graph's layers (a part of `mgtui.graph.layout`):
each edge's track and its entry into the unit it feeds, so that the lines of different
sources only ever cross, never merge, and no line runs into another's entry row.
"""

from __future__ import annotations

import itertools

from mgtui.graph.placement import Unit

# direction bits of a line cell, in layout axes: u runs along the layers, v across them
U_PLUS, U_MINUS, V_PLUS, V_MINUS = 1, 2, 4, 8


def _entries(unit: Unit, lr: bool) -> list[tuple[int, int, int]]:
    """The cells where lines may enter a unit's op glyph, as (v, u offset from the
    layer's start, the direction into the glyph): the main one in front of it (offset
    -1: the channel's last cell), and for an op glyph its two sides, so that two inputs
    meet only at the op they feed, never on a shared wire."""
    axis = int(unit.v) + unit.axis
    main = (axis, -1, U_PLUS)
    if not unit.glyph:
        return [main]
    g = unit.glyph
    if lr and unit.out >= 0:  # (its box is below it: above it, and in front)
        return [(axis - 1, len(g) // 2, V_PLUS), main]
    if lr:  # above and below the op's middle character
        return [(axis - 1, len(g) // 2, V_PLUS), main, (axis + 1, len(g) // 2, V_MINUS)]
    left = axis - (len(g) - 1) // 2 - 1  # beside the op, on its line
    # (within the unit: an op wider than its box has no room beside it at the edge)
    lo, hi = int(unit.v), int(unit.v) + unit.across
    return [e for e in ((left, 0, V_PLUS), main, (left + len(g) + 1, 0, V_MINUS))
            if e is main or lo <= e[0] < hi]


def _choose(sources: list[Unit], entries: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Entries for `sources` (in order down the channel), in the same order: the
    nearest for one, else spread out from the first and last, the middle ones sharing."""
    if len(sources) == 1:
        row = int(sources[0].v) + sources[0].out_axis
        return [min(entries, key=lambda e: (abs(e[0] - row), e[1] >= 0))]
    if len(entries) >= len(sources):
        if len(sources) == 2 and len(entries) == 3:
            upper, lower = (int(a.v) + a.out_axis for a in sources)
            top, main, bottom = entries
            axis = main[0]
            return ([main, bottom] if upper >= axis else [top, main] if lower <= axis
                    else [top, bottom])
        return entries[:len(sources)]
    main = next(e for e in entries if e[1] < 0)  # more inputs than entries: they share
    return [entries[0]] + [main] * (len(sources) - 2) + [entries[-1]]


def _entries_for(sources: list[Unit], entries: list[tuple[int, int, int]],
                 rows_out: set[int]) -> list[tuple[int, int, int]]:
    """`_choose`'s entries, kept off the rows other sources leave on: a line entering on
    such a row would run into that source's line, and turn where it crosses. A row a
    source leaves on is its own (it goes in straight); if `_choose` breaks that, the
    entries that keep it, with the fewest crossings among these lines and then the
    shortest. (Left as chosen only if no choice keeps it: `route` orders the tracks.)"""
    rows = [int(a.v) + a.out_axis for a in sources]

    def kept(choice) -> bool:
        return all(e[0] == row or e[0] not in rows_out for row, e in zip(rows, choice))

    chosen = _choose(sources, entries)
    if kept(chosen) or len(sources) > len(entries):
        return chosen
    free = [e for e in entries if e[0] not in rows_out or e[0] in rows]
    if len(free) >= len(sources) and kept(again := _choose(sources, free)):
        return again
    choices = [c for c in itertools.permutations(entries, len(sources)) if kept(c)]
    if not choices:
        return chosen

    def cost(choice) -> tuple[int, int]:
        pairs = itertools.combinations(zip(rows, choice), 2)
        crossed = sum(1 for (r0, e0), (r1, e1) in pairs if (r0 - r1) * (e0[0] - e1[0]) < 0)
        return crossed, sum(abs(r - e[0]) for r, e in zip(rows, choice))

    return list(min(choices, key=cost))


def route(left: list[Unit], right: list[Unit], succ: dict, lr: bool) -> tuple[int, dict]:
    """Tracks for the channel between two layers. Each source's lines (its fan-out) go
    up on one track and down on another; each input enters its op by an entry of its own, so
    the nets of different sources only ever cross. A source's row must not run into
    another net's entry row on the same line, so such a source's track goes left of
    that net's. Returns the number of tracks and, per (source, target) pair, its track
    (-1: a straight line) and its entry."""
    target = {u.key: u for u in right}
    inputs: dict[object, list[Unit]] = {}
    for a in left:
        for k in succ.get(a.key, ()):
            if k in target:
                inputs.setdefault(k, []).append(a)
    entry: dict[tuple[Unit, Unit], tuple[int, int, int]] = {}
    rows_out = {int(a.v) + a.out_axis for a in left if a.key in succ}
    for key, sources in inputs.items():
        b = target[key]
        rows = sorted(sources, key=lambda a: int(a.v) + a.out_axis)
        for a, e in zip(rows, _entries_for(rows, _entries(b, lr), rows_out)):
            entry[(a, b)] = e
    # a source's lines up and its lines down go on tracks of their own: a `┼` would
    # read as two lines crossing, never as one line branching four ways
    nets: dict[tuple[Unit, int], list[tuple[Unit, tuple[int, int, int]]]] = {}
    for (a, b), e in entry.items():
        src = int(a.v) + a.out_axis
        if e[0] != src:
            nets.setdefault((a, -1 if e[0] < src else 1), []).append((b, e))
    span = {}
    for (a, part), outs in nets.items():
        rows = [int(a.v) + a.out_axis] + [e[0] for _, e in outs]
        span[(a, part)] = (min(rows), max(rows))
    source_row: dict[int, list[tuple[Unit, int]]] = {}
    for net in nets:
        source_row.setdefault(int(net[0].v) + net[0].out_axis, []).append(net)
    before: dict[tuple[Unit, int], set] = {net: set() for net in nets}  # nets left of it
    for net, outs in nets.items():
        for _, (row, _, _) in outs:
            before[net] |= {other for other in source_row.get(row, ()) if other[0] is not net[0]}
    todo = sorted(nets, key=lambda net: span[net])
    track_of: dict[tuple[Unit, int], int] = {}
    broken = []
    t = 0
    while todo:
        used: list[tuple[int, int]] = []
        placed = []
        for net in todo:
            lo, hi = span[net]
            if any(not (hi < x or lo > y) for x, y in used):
                continue
            if any(p not in track_of or track_of[p] >= t for p in before[net]):
                continue
            used.append((lo, hi))
            placed.append(net)
            track_of[net] = t
        if not placed:  # a cycle of constraints: break it
            track_of[todo[0]] = t
            placed.append(todo[0])
            broken.append(todo[0])
        todo = [net for net in todo if net not in placed]
        t += 1
    jogs, t = _jogs(broken, entry, rows_out, t)
    routes = {}
    for (a, b), e in entry.items():
        src = int(a.v) + a.out_axis
        net = (a, -1 if e[0] < src else 1)
        routes[(a, b)] = (-1 if e[0] == src else track_of[net], e, jogs.get(net))
    return t, routes


def _jogs(broken: list, entry: dict, rows_out: set[int], tracks: int
          ) -> tuple[dict, int]:
    """A net placed to break a cycle of constraints (two sources each leaving on a row
    the other's lines enter on: whichever goes first, its entry runs along the other's
    row) jogs: up or down its track to a row no line runs along, across it to a track
    after every other, and on to its entries from there, so that the two only cross.
    Returns each jogging net's (row, second track), and the channel's tracks now."""
    busy = set(rows_out) | {e[0] for e in entry.values()}
    lo, hi = min(busy, default=0), max(busy, default=0)
    jogs = {}
    for net in broken:
        src = int(net[0].v) + net[0].out_axis
        free = sorted((r for r in range(lo, hi + 1) if r not in busy),
                      key=lambda r: abs(r - src))
        if not free:
            continue  # (no row to jog on: left as placed)
        jogs[net] = (free[0], tracks)
        busy.add(free[0])
        tracks += 1
    return jogs, tracks
