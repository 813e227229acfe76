"""The Graph pane's picture without a screen: a pass's graph, or the neighbourhood of one
node, laid out once as a grid of box-drawing characters in micrograd's `draw_dot` style,
with a slot in every box for the numbers each step fills in.

grandalf (a pure-Python Sugiyama layout) ranks the nodes and orders each layer to cut
crossings; it draws nothing, so the grid is ours, written here because no library lays
out on character cells: units placed on whole cells (`mgtui.graph.placement`: a
least-squares placement that keeps each layer's order), and edges routed orthogonally
in the channels between layers, each source's lines on tracks of their own and each
input into its op by a side of its own, so lines cross but never merge and no edge runs
through a box.
bench/graph_layout.py measured grandalf against netext, which was far slower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from mgtui.trace.array_text import boxed
from mgtui.trace.arrays import box_shape
from mgtui.safe import cell_width, cells, clip_cells
from mgtui.graph.placement import Order, Unit, order_of, place_across, rank_and_order
from mgtui.graph.routes import U_MINUS, U_PLUS, V_MINUS, V_PLUS, route
from mgtui.trace import Trace
from mgtui.trace.explain import fmt
from mgtui.trace.names import fitted_name

Orientation = Literal["LR", "TB"]

WHOLE_LIMIT = 60  # value nodes a graph may have and still be drawn whole
HOPS = 2  # a neighbourhood: this many hops each way from its centre
FAN_LIMIT = 3  # inputs or uses of one node drawn in a neighbourhood; the rest is a stub
LABEL_WIDTH = 14
COMPACT_LABEL = 13  # a compact box's label and number, in cells
PATH_WIDTH = 16  # a path the recorder named, shortened: `n.l[1].n[2].w[3]` whole
COMPACT_NUMBER = 5
OP_WIDTH = 12  # an op as `(sigmoid)`: whole, up to this many cells
MARK_WIDTH = 2  # `▶ `, `+=`, `● `, `= ` in front of the label

# direction bits of a line cell on screen (in layout axes: `graph_routes`' U_PLUS...)
EAST, WEST, SOUTH, NORTH = 1, 2, 4, 8
LINE_CHARS = {
    EAST | WEST: "─", NORTH | SOUTH: "│", EAST | SOUTH: "┌", WEST | SOUTH: "┐",
    NORTH | EAST: "└", NORTH | WEST: "┘", NORTH | SOUTH | EAST: "├", NORTH | SOUTH | WEST: "┤",
    EAST | WEST | SOUTH: "┬", EAST | WEST | NORTH: "┴", EAST | WEST | NORTH | SOUTH: "┼",
    EAST: "╶", WEST: "╴", SOUTH: "╷", NORTH: "╵",
}
TO_SCREEN = {  # layout bits -> screen bits
    "LR": {U_PLUS: EAST, U_MINUS: WEST, V_PLUS: SOUTH, V_MINUS: NORTH},
    "TB": {U_PLUS: SOUTH, U_MINUS: NORTH, V_PLUS: EAST, V_MINUS: WEST},
}


def squeeze(x: float, width: int) -> str:
    """`x` as the lesson writes it (`fmt`), shortened to fit `width` characters; an array
    (`mgtui.trace.arrays`) as its shape, `100×16` (one element: its number)."""
    shape, x = boxed(x, width)  # (an array's shape; a one-element array's number)
    if shape is not None:
        return shape
    text = fmt(x)
    if len(text) <= width:
        return text
    forms = ("g", "f") if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5) else ("f", "g")
    for form in forms:
        for digits in range(max(width - 2, 1), 0, -1):
            text = f"{x:.{digits}{form}}"
            if len(text) <= width:
                return text
    return "…" if width < 2 else text[: width - 1] + "…"


# A picture's lines hold one character a terminal cell: a wide character (CJK, most
# emoji) is followed by this in the cell it also covers (the painter leaves it out).
WIDE_TAIL = "\x00"


def in_cells(text: str) -> str:
    """`text` one character a cell, for a picture's lines: each wide character followed
    by WIDE_TAIL, combining marks left out (inert text has no other character of no
    width)."""
    return text if text.isascii() else "".join(c[:1] or WIDE_TAIL for c in cells(text))


# -- what a picture holds ---------------------------------------------------------------------

@dataclass(frozen=True)
class Box:
    """A value node's frame: `label | data | grad` on its middle row (`row`); or, compact,
    one row `label value` (`h` 1: the value the step is about, data or grad); or, stacked,
    two rows, the label over the value (`h` 2: its ports on the label's row, `row`)."""

    nid: int
    x: int
    y: int
    w: int
    label: str  # clipped to its slot's cells
    top: str  # the frame's top and bottom lines, with the ports' junctions
    bottom: str
    left: str  # the content row's border characters (`│`, or `┤`/`├` at a port)
    right: str
    h: int = 3  # its rows: 3, or 1 for a compact box, 2 for a stacked one

    @property
    def row(self) -> int:
        return self.y + (0 if self.h == 2 else self.h // 2)

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x < self.x + self.w and self.y <= y < self.y + self.h


@dataclass
class Picture:
    """One laid-out graph: the static part as text lines, the boxes drawn per step over
    it, and the cells of every edge (to light the ones a step's gradient flows along)."""

    orientation: Orientation
    width: int
    height: int
    lines: list[str]
    boxes: dict[int, Box]
    ops: dict[int, tuple[int, int, str]]  # node -> x, y, its op glyph `(*)`
    edges: dict[tuple[int, int], tuple[tuple[int, int], ...]]  # (input, result) -> cells
    rows: list[tuple[int, ...]]  # per line: the boxes that cover it
    num_width: int
    center: int | None = None  # the node a neighbourhood is around; None: the whole graph
    inner: frozenset[int] = field(default_factory=frozenset)  # selecting one keeps it
    compact: int = 0  # 1: one-row boxes, each with one number; 2: two-row ones, narrower

    def box_at(self, x: int, y: int) -> int | None:
        if not 0 <= y < self.height:
            return None
        for nid in self.rows[y]:
            if self.boxes[nid].contains(x, y):
                return nid
        return None


# -- the graph of one view, and its pictures ----------------------------------------------------

class GraphModel:
    """The current graph (a `GraphView`'s nodes) and the pictures laid out from it: the
    whole graph when it is small, else one neighbourhood per centre, each laid out once."""

    def __init__(self, trace: Trace, nodes: list[int], whole_limit: int = WHOLE_LIMIT,
                 shared: bool = False) -> None:
        self.trace = trace
        self.keep = 96 if shared else 32  # pictures kept (shared: the class's centres)
        self.nodes = nodes
        self.members = set(nodes)
        self.whole = len(nodes) <= whole_limit
        self.root = nodes[-1] if nodes else None
        self._pictures: dict[tuple, Picture] = {}
        self._plans: dict[tuple, Plan] = {}  # forms weighed (`extent`), not drawn yet
        self._centres: dict[int | None, list] = {}  # `_drawn`

    def parents(self, nid: int) -> list[int]:
        """The nodes of this graph that use `nid`."""
        return [p for p in self.trace.index.users(nid) if p in self.members]

    def inputs(self, nid: int) -> list[int]:
        return [c for c in dict.fromkeys(self.trace.children(nid)) if c in self.members]

    def picture(self, center: int | None, orientation: Orientation,
                compact: int = 0) -> Picture:
        """The whole graph, or the neighbourhood of `center` (the root if None); with
        compact boxes (one number) if `compact`: one row (1, True), or the label over
        the number (2: narrower, for a graph deep along the layers)."""
        key = self._key(center, orientation, compact)
        picture = self._pictures.get(key)
        if picture is None:
            if len(self._pictures) > self.keep:
                self._pictures.clear()
            plan = self._plans.pop(key, None) or self._plan(key)
            picture = plan.paint()
            picture.center, picture.inner = key[0], self._drawn(key[0])[3]
            self._pictures[key] = picture
        return picture

    def extent(self, center: int | None, orientation: Orientation,
               compact: int = 0) -> tuple[int, int]:
        """`picture`'s width and height, laid out no further than they need (what a
        pane weighs its forms by: only the form it shows is drawn)."""
        key = self._key(center, orientation, compact)
        picture = self._pictures.get(key)
        if picture is not None:
            return picture.width, picture.height
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) > self.keep:
                self._plans.clear()
            plan = self._plans[key] = self._plan(key)
        return plan.width, plan.height

    def _key(self, center: int | None, orientation: Orientation, compact: int) -> tuple:
        if self.whole:
            return (None, orientation, int(compact))
        if center is None or center not in self.members:
            center = self.root
        return (center, orientation, int(compact))

    def neighbourhood(self, center: int, hops: int = HOPS) -> tuple[dict[int, int], dict[int, tuple[int, int]]]:
        """The nodes within `hops` of `center` (node -> distance), at most FAN_LIMIT
        inputs and uses of each, and per node how many inputs and uses were cut."""
        dist = {center: 0}
        frontier = [center]
        for d in range(1, hops + 1):
            nxt = []
            for n in frontier:
                for m in self.inputs(n)[:FAN_LIMIT] + self.parents(n)[:FAN_LIMIT]:
                    if m not in dist:
                        dist[m] = d
                        nxt.append(m)
            frontier = nxt
        cut = {}
        for n in dist:
            ins = sum(1 for c in self.inputs(n) if c not in dist)
            uses = sum(1 for p in self.parents(n) if p not in dist)
            if ins or uses:
                cut[n] = (ins, uses)
        return dist, cut

    def _drawn(self, center: int | None) -> tuple:
        """What a picture around `center` draws (every form of it): the nodes, their
        edges, the cut counts, the inner nodes, and grandalf's order of them (None until
        a form is laid out: the same for all)."""
        drawn = self._centres.get(center)
        if drawn is None:
            if len(self._centres) > self.keep:
                self._centres.clear()
            if center is None:
                nodes, cut, inner = list(self.nodes), {}, frozenset(self.nodes)
            else:
                dist, cut = self.neighbourhood(center)
                nodes = sorted(dist)
                inner = frozenset(n for n, d in dist.items() if d < HOPS)
            members = set(nodes)
            edges = [(c, n) for n in nodes for c in self.inputs(n) if c in members]
            drawn = self._centres[center] = [nodes, edges, cut, inner, None]
        return drawn

    def _plan(self, key: tuple) -> Plan:
        drawn = self._drawn(key[0])
        plan = plan_layout(self.trace, *drawn[:3], key[1], key[2], order=drawn[4])
        drawn[4] = plan.order
        return plan


def shared_model(trace: Trace, nodes: list[int]) -> GraphModel:
    """The model of the graph `nodes` of `trace`, shared by every Graph pane that shows
    it: a class's sessions replay one trace, so each picture is laid out once in the
    process, not once a session (a new centre of `mlp`'s graph is four layouts, some
    55 ms, at every step of every student). Kept with the trace (it goes with it)."""
    models = vars(trace).setdefault("_graph_models", {})
    key = (len(nodes), nodes[0] if nodes else -1, nodes[-1] if nodes else -1)
    model = models.get(key)
    if model is None or model.nodes != nodes:
        if len(models) > 8:
            models.clear()
        model = models[key] = GraphModel(trace, list(nodes), shared=True)
    return model


# -- laying out ---------------------------------------------------------------------------------

def lay_out(trace: Trace, drawn: list[int], edges: list[tuple[int, int]],
            cut: dict[int, tuple[int, int]], orientation: Orientation,
            compact: int = 0) -> Picture:
    """Lay out the value nodes `drawn`, joined by `edges` (input, result), with a stub
    for each node's `cut` (inputs, uses) counts; `compact`: one-number boxes, of one row
    (1) or two (2)."""
    return plan_layout(trace, drawn, edges, cut, orientation, compact).paint()


def plan_layout(trace: Trace, drawn: list[int], edges: list[tuple[int, int]],
                cut: dict[int, tuple[int, int]], orientation: Orientation,
                compact: int = 0, order: Order | None = None) -> Plan:
    """`lay_out` as far as the picture's size: units ranked and ordered (by `order`, if
    given: any form's of the same graph), placed across and along the layers."""
    lr = orientation == "LR"
    sizes = _Sizes.of(trace, drawn, compact)
    units, links = _units(sizes, drawn, edges, cut, lr)
    order = order or order_of(units, links)
    layers, chains = rank_and_order(units, links, order)
    place_across(layers, chains, gap=1 if lr else 2)
    along = _place_along(layers, chains, lr)
    across = max([int(x.v) + x.across for layer in layers for x in layer] + [1])
    width, height = (along.size, across) if lr else (across, along.size)
    return Plan(sizes, layers, along, orientation, width, height, order)


@dataclass(frozen=True)
class Plan:
    """A picture laid out as far as its size; `paint` draws its lines and boxes."""

    sizes: _Sizes
    layers: list[list[Unit]]
    along: _Along
    orientation: Orientation
    width: int
    height: int
    order: Order

    def paint(self) -> Picture:
        lines = _Lines(self.orientation == "LR")
        link_cells, has_out = _draw_links(lines, self.along, self.order.chains)
        return _paint(self, lines, link_cells, has_out)


@dataclass(frozen=True)
class _Sizes:
    """How a node is drawn: its box (its label, then its numbers in `num_w` characters
    each) and its op glyph."""

    trace: Trace
    num_w: int
    compact: int = 0

    @classmethod
    def of(cls, trace: Trace, drawn: list[int], compact: int = 0) -> _Sizes:
        """Numbers as wide as the widest finite value of `drawn` needs, within 4…7
        (within 4…5 in a compact box)."""
        values = [v for n in drawn for v in (trace.node_data[n], trace.replay.final_data[n],
                                             trace.replay.final_grad[n])]
        num_w = max([4] + [len(fmt(v)) for v in values if math.isfinite(v)]
                    + [len(box_shape(a.shape)) for n, a in trace.arrays.nodes.items()
                       if a.size > 1 and n in set(drawn)])
        # a rare longer number is squeezed into it
        return cls(trace, min(num_w, COMPACT_NUMBER if compact else 7), int(compact))

    def label(self, nid: int) -> str:
        """The box's label: a path the recorder named shortened as the table shortens it
        (`n.l[2].n[0].b`, keeping its end: two parameters never look the same), a
        label the script gave as it is (clipped at its end)."""
        return fitted_name(self.trace, nid, PATH_WIDTH)

    def label_width(self, nid: int) -> int:
        limit = COMPACT_LABEL if self.compact else LABEL_WIDTH
        if self.trace.derived_name(nid):
            limit = PATH_WIDTH
        return min(cell_width(self.label(nid)), limit)

    def box_width(self, nid: int) -> int:
        if self.compact == 2:  # `│` mark label `│` over `│` ` ` number `│`
            return max(self.label_width(nid), self.num_w) + 3
        if self.compact:  # `│` mark label ` ` number `│`
            return self.label_width(nid) + self.num_w + 4
        return self.label_width(nid) + 2 * self.num_w + 11

    def box_height(self) -> int:
        return {0: 3, 1: 1, 2: 2}[self.compact]

    def port_row(self) -> int:
        """The box's row its ports are on: the middle one, or a stacked box's label."""
        return 0 if self.compact == 2 else self.box_height() // 2

    def glyph(self, nid: int) -> str:
        op = self.trace.op(nid)
        return in_cells(f"({clip_cells(op, OP_WIDTH)})") if op else ""


def _units(sizes: _Sizes, drawn: list[int], edges: list[tuple[int, int]],
           cut: dict[int, tuple[int, int]], lr: bool) -> tuple[dict[object, Unit], list[tuple]]:
    """The units to lay out, by key: a value node's op glyph and box (its id), and a
    `+N more` stub for the inputs and uses cut from it (`("in", id)`, `("out", id)`);
    and the links between them, each once."""
    units: dict[object, Unit] = {}
    bh = sizes.box_height()
    for n in drawn:
        bw, g = sizes.box_width(n), sizes.glyph(n)
        if lr and g and sizes.compact:  # the op above its box: a row above it for an
            # input's side entry, the op (its inputs' port), the box (its out-port)
            units[n] = Unit(n, max(len(g), bw), 1 + bh + 1, 1, nid=n, glyph=g, out=2)
        elif lr:  # (an op keeps a row above and below it, for its inputs' side entries)
            across = 3 if g or not sizes.compact else bh
            units[n] = Unit(n, (len(g) + 1 if g else 0) + bw, across,
                            across // 2 if g or sizes.compact != 2 else 0, nid=n, glyph=g)
        else:
            units[n] = Unit(n, bh + (1 if g else 0), bw, bw // 2, nid=n, glyph=g)
    links = list(dict.fromkeys(edges))
    for n, (ins, uses) in sorted(cut.items()):
        for count, side in ((ins, "in"), (uses, "out")):
            if not count:
                continue
            text = f"+{count} more"
            key = (side, n)
            units[key] = (Unit(key, len(text), 1, 0, stub=text) if lr
                          else Unit(key, 1, len(text), len(text) // 2, stub=text))
            links.append((key, n) if side == "in" else (n, key))
    return units, links


@dataclass(frozen=True)
class _Along:
    """Where the layers lie along the layout (u): each layer's first cell and extent,
    and the channel after each, routed (`route`: its track count and routes)."""

    starts: list[int]
    extent: list[int]
    channels: list[tuple[int, dict]]
    size: int


def _place_along(layers: list[list[Unit]], chains: dict, lr: bool) -> _Along:
    """Each layer as long as its longest unit, then the channel after it, as wide as
    its tracks."""
    extent = [max(u.along for u in layer) for layer in layers]
    succ: dict[object, list[object]] = {}
    for a, b in chains:
        succ.setdefault(a, []).append(b)
    channels = [route(layers[r], layers[r + 1], succ, lr) for r in range(len(layers) - 1)]
    starts, u = [], 0
    for r in range(len(layers)):
        starts.append(u)
        u += extent[r]
        if r < len(channels):
            u += max(3 if lr else 2, channels[r][0] + 2)
    return _Along(starts, extent, channels, u)


class _Lines:
    """The cells lines run through, each with the directions its line goes (layout
    bits, in u and v); a cell is (x, y) on screen."""

    def __init__(self, lr: bool) -> None:
        self.lr = lr
        self.bits: dict[tuple[int, int], int] = {}

    def cell(self, u: int, v: int) -> tuple[int, int]:
        return (u, v) if self.lr else (v, u)

    def mark(self, u: int, v: int, b: int) -> None:
        key = self.cell(u, v)
        self.bits[key] = self.bits.get(key, 0) | b

    def polyline(self, points: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Line bits along axis-parallel segments through `points` (u, v); its cells."""
        cell, mark = self.cell, self.mark
        cells = []
        for (u0, v0), (u1, v1) in zip(points, points[1:]):
            if (u0, v0) == (u1, v1):
                continue
            if v0 == v1:
                step, fwd, back = (1, U_PLUS, U_MINUS) if u1 > u0 else (-1, U_MINUS, U_PLUS)
                for k in range(u0, u1, step):
                    mark(k, v0, fwd)
                    mark(k + step, v0, back)
                    cells.append(cell(k, v0))
            else:
                step, fwd, back = (1, V_PLUS, V_MINUS) if v1 > v0 else (-1, V_MINUS, V_PLUS)
                for k in range(v0, v1, step):
                    mark(u0, k, fwd)
                    mark(u0, k + step, back)
                    cells.append(cell(u0, k))
        cells.append(cell(*points[-1]))
        return cells


def _draw_links(lines: _Lines, along: _Along,
                chains: dict) -> tuple[dict[tuple, list[tuple[int, int]]], set]:
    """Each link's path: out of its source, through each channel on its track, into its
    target. Returns each link's cells, and the keys of the units a line leaves."""
    link_cells: dict[tuple, list[tuple[int, int]]] = {}
    has_out = set()
    starts = along.starts
    for r, (_, tracks) in enumerate(along.channels):
        cs = starts[r] + along.extent[r]  # the channel's first cell
        ce = starts[r + 1] - 1  # its last: the targets' in-ports
        for (a, b), (t, (ev, off, into), jog) in tracks.items():
            va = int(a.v) + a.out_axis
            out_u = starts[r] if a.dummy else starts[r] + a.along
            eu = ce if off < 0 else starts[r + 1] + off
            if t < 0:
                pts = [(out_u, va), (eu, ev)]
            elif jog is None:
                pts = [(out_u, va), (cs + 1 + t, va), (cs + 1 + t, ev), (eu, ev)]
            else:  # (see `_jogs`)
                row, t2 = jog
                pts = [(out_u, va), (cs + 1 + t, va), (cs + 1 + t, row), (cs + 1 + t2, row),
                       (cs + 1 + t2, ev), (eu, ev)]
            cells = lines.polyline(pts)
            lines.mark(out_u, va, U_MINUS)  # it leaves a box (or carries on a dummy's line)
            lines.mark(eu, ev, into)  # and enters an op glyph, a box or a dummy's line
            for key in chains.get((a.key, b.key), ()):
                link_cells.setdefault(key, []).extend(cells)
            has_out.add(a.key)
    return link_cells, has_out


def _paint(plan: Plan, lines: _Lines, link_cells: dict[tuple, list[tuple[int, int]]],
           has_out: set) -> Picture:
    """The picture: the static text (op glyphs and their connectors, stubs, lines), the
    boxes, which boxes cover each row, and the cells of each edge between value nodes."""
    sizes, layers, along, orientation = plan.sizes, plan.layers, plan.along, plan.orientation
    width, height = plan.width, plan.height
    grid = [[" "] * width for _ in range(height)]
    ops, boxes = _draw_units(grid, sizes, layers, along, lines, has_out)
    screen = TO_SCREEN[orientation]
    for (x, y), b in lines.bits.items():
        if 0 <= y < height and 0 <= x < width and grid[y][x] == " ":
            grid[y][x] = LINE_CHARS.get(sum(s for k, s in screen.items() if b & k), " ")
    for n, (x, y, g) in ops.items():
        for k, ch in enumerate(g):
            grid[y][x + k] = ch
    rows: list[list[int]] = [[] for _ in range(height)]
    for n, box in boxes.items():
        for y in range(box.y, box.y + box.h):
            rows[y].append(n)
    edges_out = {key: tuple(dict.fromkeys(cells)) for key, cells in link_cells.items()
                 if isinstance(key[0], int) and isinstance(key[1], int)}
    return Picture(orientation, width, height, ["".join(row) for row in grid], boxes, ops,
                   edges_out, [tuple(r) for r in rows], sizes.num_w, compact=sizes.compact)


def _draw_units(grid: list[list[str]], sizes: _Sizes, layers: list[list[Unit]],
                along: _Along, lines: _Lines,
                has_out: set) -> tuple[dict[int, tuple[int, int, str]], dict[int, Box]]:
    """Write the stubs into `grid`, and an op glyph's connector to its box; returns
    where each op glyph goes (x, y, glyph) and each value node's box."""
    lr = lines.lr
    ops: dict[int, tuple[int, int, str]] = {}
    boxes: dict[int, Box] = {}
    for r, layer in enumerate(layers):
        for unit in layer:
            u0, v0 = along.starts[r], int(unit.v)
            if unit.stub:
                x, y = lines.cell(u0, v0)
                for k, ch in enumerate(unit.stub):
                    grid[y][x + k] = ch
                continue
            if unit.dummy:
                continue
            n = unit.nid
            g = sizes.glyph(n)
            bw = sizes.box_width(n)
            if lr and unit.out >= 0:  # the op above its box
                bx, by = u0, v0 + unit.out
                ops[n] = (u0, v0 + unit.axis, g)
                for x in range(bx + bw, u0 + unit.along):  # (an op wider than its box)
                    grid[by][x] = "─" if unit.key in has_out else " "
            elif lr:
                bx = u0 + (len(g) + 1 if g else 0)
                by = v0 + unit.axis - sizes.port_row()
                if g:
                    ops[n] = (u0, v0 + unit.axis, g)
                    grid[v0 + unit.axis][bx - 1] = "─"
            else:
                bx, by = v0, u0 + (1 if g else 0)
                if g:
                    ops[n] = (v0 + unit.axis - (len(g) - 1) // 2, u0, g)
            boxes[n] = _frame(n, bx, by, bw, sizes, lr,
                              port_in=bool(g) and unit.out < 0, port_out=unit.key in has_out)
    return ops, boxes


def _frame(nid: int, x: int, y: int, w: int, sizes: _Sizes, lr: bool,
           port_in: bool, port_out: bool) -> Box:
    label, lw = sizes.label(nid), sizes.label_width(nid)
    if sizes.compact:
        left = "┤" if lr and port_in else "│"
        right = "├" if lr and port_out else "│"
        return Box(nid, x, y, w, clip_cells(label, lw), "", "", left, right,
                   h=sizes.box_height())
    num_w = sizes.num_w
    seps = (lw + 4, lw + num_w + 7)
    top = ["─"] * w
    bottom = ["─"] * w
    top[0], top[-1], bottom[0], bottom[-1] = "┌", "┐", "└", "┘"
    for s in seps:
        top[s], bottom[s] = "┬", "┴"
    left = right = "│"
    if lr:
        left = "┤" if port_in else "│"
        right = "├" if port_out else "│"
    else:
        mid = w // 2
        if port_in:
            top[mid] = "┼" if mid in seps else "┴"
        if port_out:
            bottom[mid] = "┼" if mid in seps else "┬"
    return Box(nid, x, y, w, clip_cells(label, lw), "".join(top), "".join(bottom), left, right)
