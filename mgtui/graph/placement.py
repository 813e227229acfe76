"""Where each unit of a graph's layout goes: grandalf (a pure-Python Sugiyama layout)
ranks the units in layers and orders each layer to cut crossings, then each unit is
placed across its layer on whole cells, by a least-squares placement that keeps each
layer's order. A part of `mgtui.graph.layout`, which draws the lines and boxes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from grandalf.graphs import Edge as GEdge
from grandalf.graphs import Vertex as GVertex
from grandalf.graphs import graph_core
from grandalf.layouts import DummyVertex, SugiyamaLayout


@dataclass(eq=False)
class Unit:
    """One vertex of the layout: a value node (its op glyph and box), a "+N more" stub,
    or a dummy that carries a long edge through a layer. Sizes in layout axes."""

    key: object
    along: int  # extent along the layers (u)
    across: int  # extent across them (v)
    axis: int  # offset of its ports from its v start (of its out-port too, unless `out`)
    nid: int | None = None
    glyph: str = ""  # its op, as drawn: `(*)`
    stub: str = ""
    dummy: bool = False
    layer: int = 0
    v: float = 0.0  # its v start
    out: int = -1  # offset of its out-port, where it is not `axis` (an op glyph above its box)

    @property
    def out_axis(self) -> int:
        return self.axis if self.out < 0 else self.out


@dataclass(frozen=True)
class Order:
    """grandalf's ranks and order of a graph's units, by key: each layer's keys in order
    (a dummy's key is `("dummy", n)`), and for each pair of adjacent units the links whose
    path runs between them. It depends on the units' keys and links alone, not on their
    sizes: a graph's boxes in every form (orientation, compact or not) share it."""

    layers: tuple[tuple[object, ...], ...]
    chains: dict[tuple, list[tuple]]


def rank_and_order(units: dict[object, Unit], links: list[tuple],
                   order: Order | None = None) -> tuple[list[list[Unit]], dict]:
    """grandalf's Sugiyama ranking (leaves pulled next to their use) and its crossing-
    cutting order of each layer (or `order`, made for the same keys and links). Returns
    the layers, dummies included, and for each pair of adjacent units the links whose
    path runs between them."""
    if order is None:
        order = order_of(units, links)
    layers: list[list[Unit]] = []
    for r, keys in enumerate(order.layers):
        layer = []
        for key in keys:
            unit = units[key] if key in units else Unit(key, 1, 1, 0, dummy=True)
            unit.layer = r
            layer.append(unit)
        layers.append(layer)
    return layers, order.chains


def order_of(units: dict[object, Unit], links: list[tuple]) -> Order:
    """The ranks and order of `units` joined by `links` (see `Order`)."""
    vertex = {key: GVertex(key) for key in units}
    for key, v in vertex.items():
        v.view = _View(units[key].across, units[key].along)
    layers: list[list[object]] = []
    chains: dict[tuple, list[tuple]] = {}
    numbers = itertools.count()
    for keys, component in _components(list(units), links):
        # (grandalf's own Graph gathers a component's edges in a set, whose order, and so
        # the layout, would change from run to run: each component is made here, in order)
        core = graph_core([vertex[k] for k in keys],
                          [GEdge(vertex[a], vertex[b]) for a, b in component])
        sug = SugiyamaLayout(core)
        sug.init_all(roots=[v for v in core.sV if not v.e_in()], optimize=True)
        for _ in sug.ordering_step():
            pass
        for _ in sug.ordering_step(oneway=True):
            pass
        dummies: dict[DummyVertex, object] = {}
        for r, layer in enumerate(l for l in sug.layers if len(l)):
            while len(layers) <= r:
                layers.append([])
            for v in sorted(layer, key=lambda v: sug.grx[v].pos):
                if isinstance(v, DummyVertex):
                    # numbered, not by id(): an earlier component's dummies are freed
                    # by now, and a reused id would join two components' links
                    layers[r].append(dummies.setdefault(v, ("dummy", next(numbers))))
                else:
                    layers[r].append(v.data)
        for e in core.sE:
            a, b = e.v[0].data, e.v[1].data
            ctrl = sug.ctrls.get(e)
            path = [a]
            if ctrl:
                path += [dummies[ctrl[k]] for k in sorted(ctrl) if isinstance(ctrl[k], DummyVertex)]
            path.append(b)
            for p, q in zip(path, path[1:]):
                chains.setdefault((p, q), []).append((a, b))
    # ranks start at 0 in every component: the layers line up by rank
    return Order(tuple(tuple(layer) for layer in layers), chains)


def _components(keys: list, links: list[tuple]) -> list[tuple[list, list[tuple]]]:
    """The connected components of a graph, each its keys and its links, in order."""
    root = {k: k for k in keys}

    def find(k):
        while root[k] != k:
            root[k] = root[root[k]]
            k = root[k]
        return k

    for a, b in links:
        ra, rb = find(a), find(b)
        if ra != rb:
            root[rb] = ra
    groups: dict[object, tuple[list, list]] = {}
    for k in keys:
        groups.setdefault(find(k), ([], []))[0].append(k)
    for a, b in links:
        groups[find(a)][1].append((a, b))
    return list(groups.values())


class _View:
    def __init__(self, w: int, h: int) -> None:
        self.w, self.h = w, h
        self.xy = (0.0, 0.0)


def place_across(layers: list[list[Unit]], chains: dict, gap: int) -> None:
    """Each unit's v start: in its layer's order, `gap` apart, as near as can be to the
    mean of its neighbours' ports (least squares, by pool-adjacent-violators), sweeping
    down and up the layers a few times, then on whole cells."""
    preds: dict[object, list[Unit]] = {}
    succs: dict[object, list[Unit]] = {}
    by_key = {u.key: u for layer in layers for u in layer}
    for a, b in chains:
        succs.setdefault(a, []).append(by_key[b])
        preds.setdefault(b, []).append(by_key[a])
    for layer in layers:
        v = 0
        for u in layer:
            u.v = v
            v += u.across + gap
    order = list(range(len(layers)))
    for sweep in range(4):
        down = sweep % 2 == 0
        for r in (order[1:] if down else order[-2::-1]):
            layer = layers[r]
            want, weight = [], []
            for u in layer:
                near = (preds if down else succs).get(u.key, [])
                if near:  # (a unit's in-port level with its inputs' out-ports)
                    want.append(sum(n.v + n.out_axis for n in near) / len(near) - u.axis
                                if down else
                                sum(n.v + n.axis for n in near) / len(near) - u.out_axis)
                    weight.append(1.0)
                else:
                    want.append(u.v)
                    weight.append(0.05)
            for u, v in zip(layer, _isotonic(layer, want, weight, gap)):
                u.v = v
    lowest = 0.0
    for layer in layers:
        last = None
        for u in layer:
            u.v = round(u.v)
            if last is not None:
                u.v = max(u.v, last.v + last.across + gap)
            last = u
        if layer:
            lowest = min(lowest, layer[0].v)
    for layer in layers:
        for u in layer:
            u.v -= lowest
    # A unit whose port is on the same line as the port of a unit before it that is not
    # its input would have its incoming line run into that unit's outgoing one: move it on.
    for r in range(1, len(layers)):
        for k, u in enumerate(layers[r]):
            inputs = {p.key for p in preds.get(u.key, [])}
            before = {int(p.v) + p.out_axis: p.key for p in layers[r - 1]}
            while (row := int(u.v) + u.axis) in before and before[row] not in inputs:
                u.v += 1
            for prev, nxt in zip(layers[r][k:], layers[r][k + 1:]):
                nxt.v = max(nxt.v, prev.v + prev.across + gap)


def _isotonic(layer: list[Unit], want: list[float], weight: list[float], gap: int) -> list[float]:
    """Starts as near `want` as can be (weighted least squares) with each unit `gap`
    after the one before it."""
    offsets, s = [], 0
    for u in layer:
        offsets.append(s)
        s += u.across + gap
    blocks: list[list[float]] = []  # [mean, weight, count]
    for w_, wt, off in zip(want, weight, offsets):
        blocks.append([w_ - off, wt, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    out = []
    for mean, _, count in blocks:
        out.extend([mean] * count)
    return [q + off for q, off in zip(out, offsets)]
