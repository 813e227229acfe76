"""Paints a laid-out graph (`mgtui.graph.layout.Picture`) as it stands at one step: the
numbers in its boxes, the step's marks, the lit edges. Shared by the Graph pane and
`--export svg`, so both draw the same picture. Every mark is text (`▶`, `+=`, `●`,
heavy lines for lit edges, a double frame for the selected node), so it reads under
NO_COLOR; styles only add colour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from rich.style import Style
from rich.text import Text

from mgtui.trace.arrays import is_finite
from mgtui.trace.values import state_values
from mgtui.safe import cells
from mgtui.graph.layout import MARK_WIDTH, WIDE_TAIL, Picture, squeeze

MARKS = {"run": "▶ ", "acc": "+=", "new": "● ", "set": "= "}
BREAKPOINT = "◆ "
HEAVY = str.maketrans("─│┌┐└┘├┤┬┴┼╴╶╵╷", "━┃┏┓┗┛┣┫┳┻╋╸╺╹╻")
DOUBLE = str.maketrans("─│┌┐└┘├┤┬┴┼", "═║╔╗╚╝╠╣╦╩╬")
ROUND = str.maketrans("┌┐└┘", "╭╮╰╯")

# The style names a painter is given (a missing one means the pane's own style).
STYLE_NAMES = ("line", "lit", "op", "frame", "label", "selected", "cursor", "run", "acc",
               "new", "set", "changed", "future", "nonfinite", "breakpoint", "stub")

# What `--export svg` (and any painter without a stylesheet) uses.
DEFAULT_STYLES: dict[str, Style] = {
    "line": Style(color="bright_black"),
    "lit": Style(color="yellow", bold=True),
    "op": Style(color="cyan"),
    "frame": Style(color="blue"),
    "label": Style(bold=True),
    "selected": Style(color="bright_white", bold=True),
    "cursor": Style(color="magenta", bold=True),
    "run": Style(color="yellow", bold=True, reverse=True),
    "acc": Style(color="green", bold=True),
    "new": Style(color="blue", bold=True),
    "set": Style(color="magenta", bold=True),
    "changed": Style(color="green", bold=True, reverse=True),
    "future": Style(dim=True),
    "nonfinite": Style(color="red", bold=True, reverse=True),
    "breakpoint": Style(color="red", bold=True),
    "stub": Style(italic=True, dim=True),
}


@dataclass(frozen=True)
class Lighting:
    """What one step shows on the picture: every node's numbers, which nodes exist, the
    step's marks, the selected node, the graph cursor, and the edges lit."""

    data: object  # sequences indexed by node id
    grad: object
    created: int
    marks: Mapping[int, str]
    selected: int | None = None
    cursor: int | None = None
    breakpoints: frozenset[int] = frozenset()
    lit: frozenset[tuple[int, int]] = frozenset()
    grads: bool = False  # a compact box's one number: grad (a backward step), else data
    hidden: frozenset[int] = frozenset()  # quiz mode: grads shown as ? until predicted


def lit_edges(picture: Picture, marks: Mapping[int, str], children) -> frozenset[tuple[int, int]]:
    """The edges this step's gradient flowed along (into each grad its `_backward`
    added to), or, on a forward step, the inputs of the node just made."""
    lit = set()
    for nid, mark in marks.items():
        if mark == "run":
            lit |= {(c, nid) for c, m in marks.items() if m == "acc" and (c, nid) in picture.edges}
        elif mark == "new":
            lit |= {(c, nid) for c in children(nid) if (c, nid) in picture.edges}
    return frozenset(lit)


def lit_cells(picture: Picture, light: Lighting) -> dict[int, set[int]]:
    """Per line, the columns of the lit edges."""
    rows: dict[int, set[int]] = {}
    for key in light.lit:
        for x, y in picture.edges.get(key, ()):
            rows.setdefault(y, set()).add(x)
    return rows


def paint_line(picture: Picture, y: int, light: Lighting, styles: Mapping[str, Style],
               lit: Mapping[int, set[int]] | None = None) -> list[tuple[str, Style | None]]:
    """Line `y` of the picture as (text, style) runs; style None is the pane's own."""
    if not 0 <= y < picture.height:
        return []
    chars = list(picture.lines[y])
    kinds: list[str | None] = ["line" if ch in "─│┌┐└┘├┤┬┴┼╴╶╵╷" else None for ch in chars]
    for x in (lit if lit is not None else lit_cells(picture, light)).get(y, ()):
        chars[x] = chars[x].translate(HEAVY)
        kinds[x] = "lit"
    for nid, (x, oy, glyph) in picture.ops.items():
        if oy == y:
            mark = light.marks.get(nid) if nid < light.created else None
            kind = "run" if mark == "run" else "new" if mark == "new" else (
                "future" if nid >= light.created else "op")
            for k in range(len(glyph)):
                kinds[x + k] = kind
    for x, ch in enumerate(chars):
        if ch not in " ─│┌┐└┘├┤┬┴┼╴╶╵╷━┃┏┓┗┛┣┫┳┻╋(" and kinds[x] is None:
            kinds[x] = "stub"  # the only other text outside boxes: "+N more"
    for nid in picture.rows[y]:
        _paint_box(picture, nid, y, light, chars, kinds)
    runs: list[tuple[str, Style | None]] = []
    start = 0
    for x in range(1, len(chars) + 1):
        if x == len(chars) or kinds[x] != kinds[start]:
            kind = kinds[start]
            text = "".join(chars[start:x])
            if WIDE_TAIL in text:  # (the second cell of a wide character in an op)
                text = text.replace(WIDE_TAIL, "")
            runs.append((text, styles.get(kind) if kind else None))
            start = x
    return runs


def _paint_box(picture: Picture, nid: int, y: int, light: Lighting, chars: list[str],
               kinds: list[str | None]) -> None:
    box = picture.boxes[nid]
    future = nid >= light.created
    mark = "" if future else light.marks.get(nid, "")
    frame_kind = ("future" if future else "selected" if nid == light.selected
                  else "cursor" if nid == light.cursor else "frame")
    table = (DOUBLE if nid == light.selected else ROUND if nid == light.cursor else None)
    x0 = box.x
    if box.h != 2 and y != box.row:
        text = box.top if y == box.y else box.bottom
        if table is not None:
            text = text.translate(table)
        chars[x0:x0 + box.w] = text
        kinds[x0:x0 + box.w] = [frame_kind] * box.w
        return
    nw = picture.num_width
    badge = MARKS.get(mark, BREAKPOINT if nid in light.breakpoints else "  ")
    label = cells(box.label)  # (a wide character's second cell is "": one a cell)
    if box.h == 1:
        parts = _compact_parts(box, nw, light, mark, badge, label, frame_kind, table)
    elif box.h == 2:
        parts = _stacked_parts(box, y, nw, light, mark, badge, label, frame_kind, table)
    else:
        parts = _full_parts(box, nw, light, mark, badge, label, frame_kind, table)
    x = x0
    for text, kind in parts:
        for ch in text:
            chars[x] = ch
            kinds[x] = "future" if future and kind is None else kind
            x += 1


def _compact_parts(box, nw: int, light: Lighting, mark: str, badge: str, label: list[str],
                   frame_kind: str, table) -> list[tuple]:
    """A compact box: `│▶label  value│`, its one-cell mark (`▶`, `+`, `●`, `=`, `◆`)
    and the value the step is about (grad on a backward step, else data)."""
    nid, future = box.nid, frame_kind == "future"
    values = light.grad if light.grads else light.data
    value = "·" if future else squeeze(values[nid], nw)
    if light.grads and nid in light.hidden and not future:
        value = "?"
    changed = mark in ("acc", "set") if light.grads else mark == "set"
    lw = box.w - nw - 4
    return [
        (box.left.translate(table) if table else box.left, frame_kind),
        (badge[:1] if badge.strip() else " ",
         mark or ("breakpoint" if nid in light.breakpoints else None)),
        (label + [" "] * (lw - len(label)), "future" if future else (mark or "label")),
        (" ", None),
        (value.rjust(nw), "future" if future else _number_kind(values[nid], changed)),
        (box.right.translate(table) if table else box.right, frame_kind),
    ]


def _stacked_parts(box, y: int, nw: int, light: Lighting, mark: str, badge: str,
                   label: list[str], frame_kind: str, table) -> list[tuple]:
    """A stacked box's row `y`: `│▶label│` (its ports on it) over `│ value│`, the
    compact box's parts on two rows, for a narrower box."""
    row = _compact_parts(box, nw, light, mark, badge, label, frame_kind, table)
    edge, badged, named, _, number, right = row
    slot = box.w - 3
    if y == box.y:
        return [edge, badged, (named[0][:slot] + [" "] * (slot - len(named[0][:slot])),
                               named[1]), right]
    plain = ("│".translate(table) if table else "│", frame_kind)
    return [plain, (" ", None), (number[0].rjust(slot), number[1]), plain]


def _full_parts(box, nw: int, light: Lighting, mark: str, badge: str, label: list[str],
                frame_kind: str, table) -> list[tuple]:
    """A full box's middle row: `│▶ label │ data │ grad │`."""
    nid, future = box.nid, frame_kind == "future"
    lw = box.w - 2 * nw - 11  # the label's slot
    sep = "│" if table is None else "│".translate(table)
    if future:
        data = grad = "·"
    else:
        data, grad = squeeze(light.data[nid], nw), squeeze(light.grad[nid], nw)
        if nid in light.hidden:
            grad = "?"
    return [
        (box.left.translate(table) if table else box.left, frame_kind),
        (badge[:MARK_WIDTH].ljust(MARK_WIDTH),
         mark or ("breakpoint" if nid in light.breakpoints else None)),
        (label + [" "] * (lw - len(label)), "future" if future else (mark or "label")),
        (f" {sep} ", frame_kind),
        (data.rjust(nw), "future" if future else _number_kind(light.data[nid], mark == "set")),
        (f" {sep} ", frame_kind),
        (grad.rjust(nw), "future" if future else _number_kind(
            light.grad[nid], mark in ("acc", "set"))),
        (" ", None),
        (box.right.translate(table) if table else box.right, frame_kind),
    ]


def _number_kind(value: float, changed: bool) -> str | None:
    if not is_finite(value):
        return "nonfinite"
    return "changed" if changed else None


def paint(picture: Picture, light: Lighting, styles: Mapping[str, Style] = DEFAULT_STYLES) -> list[Text]:
    """The whole picture as rich Text lines (for `--export svg`), never markup."""
    lit = lit_cells(picture, light)
    lines = []
    for y in range(picture.height):
        text = Text(no_wrap=True, end="")
        for chunk, style in paint_line(picture, y, light, styles, lit):
            text.append(chunk, style)
        lines.append(text)
    return lines


def graph_svg(trace) -> str:
    """The Graph pane's picture of the last forward pass at the end of the trace (every
    final data and grad, no step's marks), as an SVG document: `--export svg`."""
    import io

    from rich.console import Console

    from mgtui.graph.layout import GraphModel
    from mgtui.session.view import GraphView, views_for

    forward, backward = views_for(trace, len(trace.passes) - 1)
    view = GraphView.build(trace, forward, backward) if forward is not None else None
    nodes = [*view.used, *view.made] if view is not None else list(range(trace.node_count))
    model = GraphModel(trace, nodes)
    picture = model.picture(model.root, "LR")
    light = Lighting(*state_values(trace, len(trace), trace.replay.final_data, trace.replay.final_grad),
                     trace.node_count, {})
    console = Console(record=True, width=max(picture.width, 20), file=io.StringIO(),
                      color_system="truecolor", force_terminal=True, legacy_windows=False)
    for line in paint(picture, light):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return console.export_svg(title=trace.title or "mgtui")
