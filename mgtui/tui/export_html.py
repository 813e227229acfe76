"""`mgtui FILE --export html`: one self-contained page that replays the lesson, step by
step, with its node table, its graph and its notes, and makes no network request.

The lesson (`mgtui.tui.export_html_data`) and the Graph pane's pictures (`mgtui.graph.layout`,
painted by `mgtui.tui.graph_paint` as `--export svg` paints them) go into the page as JSON,
compressed (deflate, base64: the browser's own `DecompressionStream` unpacks it), inside a
`<script type="application/json">` whose `<` are escaped, so no scenario text can close it.
The page's script (`lesson_page.js`) puts every text in with `textContent`, and its
Content-Security-Policy allows only that script and style, by hash, and nothing to load.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from importlib import resources
from typing import Any, Iterable

from mgtui.trace.values import state_values
from mgtui.graph.layout import GraphModel, Picture, squeeze
from mgtui.tui.graph_paint import DOUBLE, HEAVY, MARKS, STYLE_NAMES, Lighting, paint_line
from mgtui.tui.export_html_data import Lesson, pack_lesson
from mgtui.trace import Trace

# Graphs of at most this many nodes are drawn whole (one layout serves every pass whose
# graph has the same shape); a bigger one is drawn as its root's neighbourhood, as
# `--export svg` draws it. (mlp's 398 nodes lay out in about 0.3 s.)
WHOLE_LIMIT = 500
KINDS = ("",) + STYLE_NAMES  # a run's kind in a picture's lines: 0 is the pane's own style
LIGHT = "─│┌┐└┘├┤┬┴┼╴╶╵╷"


def lesson_html(trace: Trace, steps: tuple[int, int] | None = None) -> str:
    """The page, as one string; with `steps` (first, last), numbered from 1, a page that
    opens at the first and moves among those steps only."""
    lesson = pack_lesson(trace)
    add_pictures(trace, lesson)
    if steps is not None:
        keep_steps(lesson.data, *steps)
    body = json.dumps(lesson.data, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode()
    title = trace.title or lesson.data["scenario"]  # (its file name: no local path)
    if steps is not None:
        title += f" · steps {steps[0]}–{steps[1]}"
    meta = {"title": title, "packed": base64.b64encode(deflated(body)).decode("ascii")}
    return page(meta)


def keep_steps(data: dict[str, Any], first: int, last: int) -> None:
    """Only steps `first` to `last` shown (the page replays the ones before to get
    there): their range, and no working for the others. The error step, after the
    last event, goes with a range that ends at the last event."""
    events = len(data["events"]["kind"])
    if last >= events:
        last = data["total"]
    data["range"] = [first, last]
    data["detail"] = [text if first <= k <= last else ""
                      for k, text in enumerate(data["detail"])]


def deflated(data: bytes) -> bytes:
    """Raw deflate (the browser's "deflate-raw"), at the level that keeps mlp's page
    small without costing a second (level 9 saves 6% and takes three times as long)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -15, 9)
    return packer.compress(data) + packer.flush()


def script_json(value: Any) -> str:
    """`value` as JSON that is safe inside a `<script>` element: no `<` at all, so no
    `</script>` or `<!--` can end or change it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).replace("<", "\\u003c")


def template(name: str) -> str:
    return resources.files("mgtui.tui").joinpath(name).read_text(encoding="utf-8")


def page(meta: dict[str, Any]) -> str:
    """The page around `meta` (the title and the packed lesson)."""
    from mgtui.version import __version__

    script, style = template("lesson_page.js"), template("lesson_page.css")
    if "</script" in script.lower() or "</style" in style.lower():
        raise ValueError("lesson_page.js and .css must not close their own element")
    csp = ("default-src 'none'; " + f"script-src {digest(script)}; style-src {digest(style)}; "
           "img-src 'none'; base-uri 'none'; form-action 'none'")
    html = template("lesson_page.html")
    for key, value in (("%CSP%", csp), ("%VERSION%", __version__), ("%STYLE%", style),
                       ("%SCRIPT%", script), ("%LESSON%", script_json(meta))):
        html = html.replace(key, value, 1)
    return html


def digest(text: str) -> str:
    """A CSP source that allows exactly `text` as an inline script or style."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# -- the graph --------------------------------------------------------------------------------

def add_pictures(trace: Trace, lesson: Lesson) -> None:
    """A picture for each graph the lesson shows, laid out once per shape; per view, the
    picture it uses (its boxes are by position in the view's nodes, `used` then `made`)."""
    data = lesson.data
    shapes: dict[tuple, list[int]] = {}
    nodes_of = [[*view.used, *view.made] for view in lesson.views]
    for k, nodes in enumerate(nodes_of):
        if nodes:
            shapes.setdefault(shape_of(trace, nodes), []).append(k)
    pictures = []
    for views in shapes.values():
        nodes = nodes_of[views[-1]]  # the last: its `#id` labels are the longest
        model = GraphModel(trace, nodes, whole_limit=WHOLE_LIMIT)
        picture = model.picture(model.root, "LR")
        for k in views:
            data["views"][k]["picture"] = len(pictures)
        pictures.append(picture_data(trace, picture, nodes))
    data["pictures"] = pictures
    data["graph"] = {"light": LIGHT, "heavy": LIGHT.translate(HEAVY),
                     "double": LIGHT.translate(DOUBLE), "marks": MARKS}
    values = lesson.values
    data["squeezed"] = {
        str(width): {str(i): squeeze(x, width) for i, (x, text)
                     in enumerate(zip(values.numbers, values.texts)) if len(text) > width}
        for width in {p["num_width"] for p in pictures}}


def shape_of(trace: Trace, nodes: list[int]) -> tuple:
    """What a graph's picture depends on, by position: each node's op, its inputs'
    positions, and its label where it has one of its own (an `#id` fits the last's slot)."""
    at = {nid: k for k, nid in enumerate(nodes)}
    shape = []
    for nid in nodes:
        label = trace.label(nid)
        shape.append((trace.op(nid), tuple(at.get(c, -1) for c in trace.children(nid)),
                      "" if label == f"#{nid}" else label))
    return tuple(shape)


def picture_data(trace: Trace, picture: Picture, nodes: list[int]) -> dict[str, Any]:
    """A picture as the page paints it: its lines as painted with no step's marks (runs
    of [kind, text]), and its boxes, ops and edges by node position."""
    at = {nid: k for k, nid in enumerate(nodes)}
    light = Lighting(*state_values(trace, len(trace), trace.replay.final_data, trace.replay.final_grad),
                     trace.node_count, {})  # (arrays: their shapes)
    kind_of = {name: k for k, name in enumerate(KINDS)}
    lines = []
    for y in range(picture.height):
        runs: list[Any] = []
        for text, kind in paint_line(picture, y, light, kind_of, {}):
            runs += [kind or 0, text]
        lines.append(runs)
    return {
        "num_width": picture.num_width, "kinds": KINDS, "lines": lines,
        # (a path the recorder named: with the label the box shows, shortened keeping its end)
        "boxes": [[at[nid], b.x, b.y, b.w] + ([b.label] if trace.derived_name(nid) else [])
                  for nid, b in picture.boxes.items()],
        "ops": [[at[nid], x, y, len(glyph)] for nid, (x, y, glyph) in picture.ops.items()],
        "edges": [[at[a], at[b], *paths(cells)] for (a, b), cells in picture.edges.items()],
    }


def paths(cells: Iterable[tuple[int, int]]) -> list[list[int]]:
    """An edge's cells as straight runs: each path `[x, y, x, y, …]` of its corners,
    a new path wherever the next cell does not touch the last."""
    out: list[list[int]] = []
    path: list[int] = []
    step = None
    for x, y in cells:
        if path:
            dx, dy = x - path[-2], y - path[-1]
            if abs(dx) + abs(dy) == 1:
                if (dx, dy) == step:
                    path[-2:] = [x, y]
                else:
                    path += [x, y]
                step = (dx, dy)
                continue
            out.append(path)
        path, step = [x, y], None
    if path:
        out.append(path)
    return out
