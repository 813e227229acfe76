"""The Graph pane's layout and painting, headless: every node drawn, no edge through a box,
every edge a connected line from its input's box to its result's op, few crossings, big
graphs cut to a neighbourhood with honest "+N more" counts, and `--export svg`."""

from __future__ import annotations

import random
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import lru_cache

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mgtui.graph.layout import GraphModel, Picture, squeeze
from mgtui.tui.graph_paint import DEFAULT_STYLES, Lighting, lit_edges, paint, paint_line
from mgtui.run.runner import run
from mgtui.session import Session
from mgtui.trace import EventKind, TraceBuilder

from tests.conftest import ROOT, SCENARIOS

LINES = set("─│┌┐└┘├┤┬┴┼╴╶╵╷")


@lru_cache(maxsize=None)
def recorded(name: str):
    return run(SCENARIOS / f"{name}.py").trace


def last_graph(trace) -> list[int]:
    session = Session(trace)
    view = session.goto(session.total).view
    return [*view.used, *view.made]


def drawn_edges(trace, nodes) -> set[tuple[int, int]]:
    members = set(nodes)
    return {(c, n) for n in nodes for c in trace.children(n) if c in members}


def box_cells(picture: Picture) -> dict[tuple[int, int], int]:
    cells: dict[tuple[int, int], int] = {}
    for nid, box in picture.boxes.items():
        for x in range(box.x, box.x + box.w):
            for y in range(box.y, box.y + box.h):
                assert (x, y) not in cells, f"boxes {cells.get((x, y))} and {nid} overlap"
                cells[(x, y)] = nid
    for nid, (x, y, glyph) in picture.ops.items():
        for k in range(len(glyph)):
            assert (x + k, y) not in cells, f"the op of {nid} is drawn over a box"
            cells[(x + k, y)] = nid
    return cells


def out_port(picture: Picture, child: int) -> tuple[int, int]:
    """The cell just out of `child`'s box, where its lines start."""
    box = picture.boxes[child]
    if picture.orientation == "LR":
        return box.x + box.w, box.row
    return box.x + box.w // 2, box.y + box.h


def in_ports(picture: Picture) -> dict[tuple[int, int], int]:
    """Every line cell beside an op glyph that points into it, and the op's node."""
    cells = {}
    for parent, (x, y, glyph) in picture.ops.items():
        around = [((x - 1, y), "E"), ((x + len(glyph), y), "W")]
        around += [((x + k, y - 1), "S") for k in range(len(glyph))]
        around += [((x + k, y + 1), "N") for k in range(len(glyph))]
        for (cx, cy), into in around:
            if 0 <= cy < picture.height and 0 <= cx < picture.width \
                    and into in REACH.get(picture.lines[cy][cx], ""):
                cells[(cx, cy)] = parent
    return cells


def connected(cells: set[tuple[int, int]], start, end) -> bool:
    seen, todo = {start}, [start]
    while todo:
        x, y = todo.pop()
        for nxt in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if nxt in cells and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return end in seen


# which way each line character reaches: a `┼` is a crossing, never a junction
REACH = {"─": "EW", "│": "NS", "┌": "ES", "┐": "WS", "└": "NE", "┘": "NW", "├": "NSE",
         "┤": "NSW", "┬": "EWS", "┴": "EWN", "┼": "NESW", "╴": "W", "╶": "E", "╵": "N", "╷": "S"}
STEP = {"N": (0, -1), "S": (0, 1), "E": (1, 0), "W": (-1, 0)}
BACK = {"N": "S", "S": "N", "E": "W", "W": "E"}


def read_off(picture: Picture, start: tuple[int, int]) -> set[tuple[int, int]]:
    """The cells a reader's eye reaches following the lines from `start`, going straight
    through every crossing."""
    def char(x, y):
        return picture.lines[y][x] if 0 <= y < picture.height and 0 <= x < picture.width else " "

    seen = set()
    todo = [(start, d) for d in REACH.get(char(*start), "")]
    while todo:
        (x, y), d = todo.pop()
        if ((x, y), d) in seen:
            continue
        seen.add(((x, y), d))
        dx, dy = STEP[d]
        nxt = (x + dx, y + dy)
        reach = REACH.get(char(*nxt), "")
        if BACK[d] not in reach:
            continue
        onward = d if char(*nxt) == "┼" else reach.replace(BACK[d], "")
        todo.extend((nxt, e) for e in onward)
        seen.add((nxt, "*"))
    return {cell for cell, _ in seen}


def check_drawing(picture: Picture, edges: set[tuple[int, int]]) -> None:
    """The rules of the drawing, whatever the graph: no edge runs through a box, and
    following the lines out of each box leads to exactly the ops of the nodes it feeds."""
    boxes = box_cells(picture)
    assert set(picture.edges) == edges
    ports = in_ports(picture)
    for (child, parent), path in picture.edges.items():
        cells = set(path)
        assert not cells & boxes.keys(), f"edge {child}->{parent} runs through a box"
        for x, y in cells:
            assert picture.lines[y][x] in LINES, f"edge {child}->{parent} has no line at {x},{y}"
        ends = [cell for cell in cells if ports.get(cell) == parent]
        assert out_port(picture, child) in cells and ends
        assert connected(cells, out_port(picture, child), ends[0]), \
            f"edge {child}->{parent} is broken"
    for child in {c for c, _ in edges}:
        seen = {ports[cell] for cell in read_off(picture, out_port(picture, child))
                if cell in ports}
        assert seen == {p for c, p in edges if c == child}, f"{child}'s lines lead to {seen}"


def crossings(picture: Picture) -> int:
    return sum(line.count("┼") for line in picture.lines)


# -- the lesson scenarios, drawn whole ------------------------------------------------------

@pytest.mark.parametrize("name", ["chain", "neuron", "neuron_exp"])
@pytest.mark.parametrize("orientation", ["LR", "TB"])
@pytest.mark.parametrize("compact", [0, 1, 2], ids=["full", "compact", "stacked"])
def test_lesson_graphs_are_drawn_whole_and_well(name, orientation, compact):
    trace = recorded(name)
    nodes = last_graph(trace)
    model = GraphModel(trace, nodes)
    assert model.whole
    picture = model.picture(None, orientation, compact)
    assert sorted(picture.boxes) == sorted(nodes)
    check_drawing(picture, drawn_edges(trace, nodes))
    for nid in nodes:  # every label, in its box
        assert picture.boxes[nid].label == trace.label(nid)
        assert picture.boxes[nid].h == {0: 3, 1: 1, 2: 2}[compact]
    # op nodes sit between their inputs and their result, as draw_dot draws them
    for nid in nodes:
        assert (nid in picture.ops) == bool(trace.op(nid))


@pytest.mark.parametrize("name", ["chain", "neuron"])
def test_trees_are_drawn_without_a_crossing(name):
    """chain and neuron are trees: a layered drawing of a tree needs no crossing."""
    trace = recorded(name)
    model = GraphModel(trace, last_graph(trace))
    for orientation in ("LR", "TB"):
        assert crossings(model.picture(None, orientation)) == 0


def test_the_layout_is_deterministic():
    trace = recorded("neuron_exp")
    nodes = last_graph(trace)
    one = GraphModel(trace, nodes).picture(None, "LR")
    two = GraphModel(trace, nodes).picture(None, "LR")
    assert one.lines == two.lines and one.boxes == two.boxes and one.edges == two.edges


def random_trace(seed: int, size: int):
    """A random DAG of `size` nodes: leaves, and ops over one or two earlier nodes."""
    rng = random.Random(seed)
    builder = TraceBuilder("random.py", "random graph")
    for nid in range(size):
        if nid < 2 or rng.random() < 0.3:
            builder.add_node(f"v{nid}", "", (), 1.0)
        else:
            k = rng.choice((1, 2, 2))
            children = rng.sample(range(nid), min(k, nid))
            if rng.random() < 0.1:
                children = [children[0], children[0]]  # a + a
            builder.add_node(f"v{nid}", rng.choice(("+", "*", "tanh")), children, 1.0)
        builder.add_event(EventKind.CREATE, nid)
    return builder.build()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.integers(2, 40),
       orientation=st.sampled_from(["LR", "TB"]), compact=st.booleans())
# two sources that each fed an op on the other's row: a line turned where another
# crossed it (`┼`), and read as going straight on
@example(seed=63, size=40, orientation="LR", compact=False)
@example(seed=288, size=30, orientation="LR", compact=False)
# two sources each leaving on the row the other's line entered on: whichever track went
# first, its entry ran along the other's row, and the two read as one line (a jog now)
@example(seed=166, size=24, orientation="LR", compact=True)
@example(seed=27, size=29, orientation="LR", compact=True)
def test_any_graph_is_drawn_by_the_rules(seed, size, orientation, compact):
    trace = random_trace(seed, size)
    nodes = list(range(size))
    picture = GraphModel(trace, nodes, whole_limit=size).picture(None, orientation, compact)
    assert sorted(picture.boxes) == nodes
    check_drawing(picture, drawn_edges(trace, nodes))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), size=st.integers(2, 40),
       orientation=st.sampled_from(["LR", "TB"]))
# an op wider than its box at the picture's edge: a line entered beside it, off the picture
@example(seed=299, size=27, orientation="TB")
@example(seed=3, size=40, orientation="LR")
def test_any_graph_in_stacked_boxes_is_drawn_by_the_rules(seed, size, orientation):
    """Stacked boxes (the label over the number, two rows, ports on the label's row)."""
    trace = random_trace(seed, size)
    nodes = list(range(size))
    picture = GraphModel(trace, nodes, whole_limit=size).picture(None, orientation, 2)
    assert sorted(picture.boxes) == nodes
    assert {box.h for box in picture.boxes.values()} == {2}
    check_drawing(picture, drawn_edges(trace, nodes))


# -- big graphs: a neighbourhood ---------------------------------------------------------------

def test_a_big_graph_is_drawn_as_a_neighbourhood_with_honest_stubs():
    trace = recorded("mlp")
    nodes = last_graph(trace)
    model = GraphModel(trace, nodes)
    assert not model.whole
    members = set(nodes)
    uses = {n: [p for p in nodes if n in trace.children(p)] for n in nodes}
    center = next(n for n in nodes if trace.op(n) == "tanh")
    picture = model.picture(center, "LR")
    drawn = set(picture.boxes)
    assert center in drawn and center in picture.inner
    # its inputs and its uses are drawn (up to three of each)
    assert set(trace.children(center)) <= drawn
    assert set(uses[center][:3]) <= drawn
    check_drawing(picture, drawn_edges(trace, sorted(drawn)))
    # every node that lost inputs or uses says how many, as "+N more"
    text = "\n".join(picture.lines)
    for nid in drawn:
        cut_in = len({c for c in trace.children(nid) if c in members} - drawn)
        cut_out = len(set(uses[nid]) - drawn)
        for count in (cut_in, cut_out):
            if count:
                assert f"+{count} more" in text
    assert picture.width < 400  # not the thousands of columns of the whole MLP


def test_a_neighbourhood_is_laid_out_once_per_centre():
    trace = recorded("mlp")
    model = GraphModel(trace, last_graph(trace))
    center = model.root
    assert model.picture(center, "LR") is model.picture(center, "LR")



FORMS = [(o, c) for c in (0, 1, 2) for o in ("LR", "TB")]


@pytest.mark.parametrize("name", ["mlp", "moons"])
def test_every_form_of_a_neighbourhood_is_drawn_as_if_laid_out_alone(name):
    """A pane weighs a centre's six forms by their size and draws one: the forms share
    grandalf's ranks and order (they depend on the graph, not on the boxes' sizes). Each
    picture must be the one its form gives laid out on its own, and each size weighed
    the size of that picture, whichever forms were weighed or drawn before it."""
    from mgtui.graph.layout import lay_out

    trace = recorded(name)
    session = Session(trace)
    for step in (3, 40, 77, 150):
        state = session.goto(step)
        model = GraphModel(trace, [*state.view.used, *state.view.made])
        center = state.node if not model.whole else None
        rng = random.Random(step)
        weighed = rng.sample(FORMS, len(FORMS))
        sizes = {form: model.extent(center, *form) for form in weighed}
        for form in rng.sample(FORMS, len(FORMS)):
            picture = model.picture(center, *form)
            drawn = sorted(picture.boxes)
            members = set(drawn)
            edges = [(c, n) for n in drawn for c in dict.fromkeys(trace.children(n))
                     if c in members]
            cut = model.neighbourhood(center)[1] if center is not None else {}
            alone = lay_out(trace, drawn, edges, cut, *form)
            assert (picture.lines, picture.boxes, picture.ops, picture.edges, picture.rows) \
                == (alone.lines, alone.boxes, alone.ops, alone.edges, alone.rows), (step, form)
            assert sizes[form] == (picture.width, picture.height) == (alone.width, alone.height)


# -- painting a step ------------------------------------------------------------------------

def painted_text(picture, light) -> str:
    return "\n".join("".join(t for t, _ in paint_line(picture, y, light, DEFAULT_STYLES))
                     for y in range(picture.height))


def test_a_fan_out_step_lights_its_edges_and_marks_its_grads():
    """neuron, step 15: (x1*w1 + x2*w2)._backward adds 0.5 into x1*w1 and x2*w2 (the
    lecture's figures)."""
    trace = recorded("neuron")
    session = Session(trace)
    state = session.goto(15)
    model = GraphModel(trace, [*state.view.used, *state.view.made])
    picture = model.picture(state.node, "LR")
    (total,) = trace.find("x1*w1 + x2*w2")
    (a,) = trace.find("x1*w1")
    (b,) = trace.find("x2*w2")
    lit = lit_edges(picture, state.marks, trace.children)
    assert lit == {(a, total), (b, total)}
    light = Lighting(state.data, state.grad, state.created, state.marks, state.node,
                     state.node, state.breakpoints, lit)
    rows = {nid: painted_text(picture, light).splitlines()[box.row]
            for nid, box in picture.boxes.items()}
    assert "▶ x1*w1 + x2*w2" in rows[total]
    for nid in (a, b):
        cells = rows[nid][picture.boxes[nid].x:picture.boxes[nid].x + picture.boxes[nid].w]
        assert cells.startswith("│+=") or cells.startswith("┤+=")
        assert cells[-(picture.num_width + 2):-2].strip() == "0.5"  # its grad
    # the lit edges are drawn heavy: visible without colour
    text = painted_text(picture, light)
    for x, y in picture.edges[(a, total)]:
        assert text.splitlines()[y][x] in "━┃┏┓┗┛┣┫┳┻╋"


def test_nodes_not_made_yet_show_no_numbers():
    trace = recorded("chain")
    state = Session(trace).goto(3)  # a, b, c made
    picture = GraphModel(trace, [*state.view.used, *state.view.made]).picture(None, "LR")
    light = Lighting(state.data, state.grad, state.created, state.marks)
    text = painted_text(picture, light).splitlines()
    (L,) = trace.find("L")
    assert "·" in text[picture.boxes[L].row]
    (a,) = trace.find("a")
    assert "2.0" in text[picture.boxes[a].row]


def test_op_labels_are_whole_and_a_compact_box_shows_the_steps_value():
    """`(sigmoid)`, not `(sigmo…)`; a compact box holds its label and one number: the
    data on a forward step, the grad on a backward one (neuron: x1.grad = -1.5)."""
    builder = TraceBuilder("ops.py", "ops")
    builder.add_node("x", "", (), 0.5)
    builder.add_node("s", "sigmoid", (0,), 0.6225)
    for nid in range(2):
        builder.add_event(EventKind.CREATE, nid)
    trace = builder.build()
    for orientation in ("LR", "TB"):
        picture = GraphModel(trace, [0, 1]).picture(None, orientation, True)
        assert picture.ops[1][2] == "(sigmoid)"
        assert any("(sigmoid)" in line for line in picture.lines)
    trace = recorded("neuron")
    state = Session(trace).goto(Session(trace).total)
    picture = GraphModel(trace, [*state.view.used, *state.view.made]).picture(None, "LR", True)
    (x1,) = trace.find("x1")
    box = picture.boxes[x1]
    for grads, value in ((True, "-1.5"), (False, "2.0")):
        light = Lighting(state.data, state.grad, state.created, state.marks, grads=grads)
        row = painted_text(picture, light).splitlines()[box.row][box.x:box.x + box.w]
        assert row.startswith("│") and row.endswith(("│", "├"))
        assert row[2:-1].split() == ["x1", value]


def test_numbers_are_squeezed_into_their_slot():
    assert squeeze(2.220446049250313e-16, 7) == "2.2e-16"
    assert squeeze(-1.5, 7) == "-1.5"
    assert len(squeeze(-123456.789, 7)) <= 7
    assert squeeze(float("nan"), 7) == "nan"


# -- --export svg ------------------------------------------------------------------------------

def test_export_svg_of_neuron_is_an_svg_with_every_label_and_the_lecture_grads():
    done = subprocess.run([sys.executable, "-m", "mgtui.cli", "neuron", "--export", "svg"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    root = ET.fromstring(done.stdout)
    assert root.tag.endswith("svg")
    text = "".join(root.itertext()).replace("\xa0", " ")
    for label in ("x1", "x2", "w1", "w2", "b", "x1*w1", "x2*w2", "x1*w1 + x2*w2", "n", "o"):
        assert label in text
    # the lecture's final grads: x1 -1.5, w1 1.0, and o = 0.7071
    assert "-1.5" in text and "0.7071" in text


def test_export_svg_keeps_hostile_labels_inert(write_scenario):
    path = write_scenario("hostile", '''
        """Hostile labels"""
        from engine import Value
        a = Value(1.0, label='<script>x</script>')
        b = Value(2.0, label='[bold]\\x1b[31m')
        c = a * b; c.label = 'c'
    ''')
    done = subprocess.run([sys.executable, "-m", "mgtui.cli", str(path), "--export", "svg"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    root = ET.fromstring(done.stdout)  # still well-formed XML
    text = "".join(root.itertext()).replace("\xa0", " ")
    assert "\x1b" not in done.stdout
    assert "<script>" in text or "<script>x" in text  # shown as text, not as markup
    assert not any(el.tag.endswith("script") for el in root.iter())


def test_painting_is_text_without_markup():
    trace = recorded("chain")
    state = Session(trace).goto(Session(trace).total)
    picture = GraphModel(trace, [*state.view.used, *state.view.made]).picture(None, "TB")
    lines = paint(picture, Lighting(state.data, state.grad, state.created, state.marks))
    assert len(lines) == picture.height
    assert all(line.plain == painted for line, painted in
               zip(lines, painted_text(picture, Lighting(state.data, state.grad,
                                                        state.created, state.marks)).splitlines()))


@pytest.mark.parametrize("seed", range(5))
def test_users_are_the_inverse_of_children(seed):
    trace = random_trace(seed, 40)
    expected = {n: [p for p in range(trace.node_count) if n in trace.children(p)]
                    for n in range(trace.node_count)}
    for nid, users in expected.items():
        assert list(trace.index.users(nid)) == users  # each once (a + a uses a once), in order
        assert len(users) == trace.index.uses[nid]
