"""The Graph pane: micrograd's `draw_dot` picture of the current graph, lit by the step.

A Line-API `ScrollView`. The picture is laid out once per graph (or per neighbourhood of
the selected node, on a big graph) by `mgtui.graph.layout`; a step only repaints the
lines on screen with that step's numbers and marks (`mgtui.tui.graph_paint`). It follows the
selected node; the arrow keys (and h/l) move its cursor from box to box, and enter or a
click selects the cursor's node through the session, as the node table does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from mgtui.settings.bindings import GRAPH_KEYS
from mgtui.session import StepState
from mgtui.tui.textual_private import SizedScrollView, refresh_scrollbars
from mgtui.tui.widgets.keys import bindings_of
from mgtui.tui.widgets.strips import GRAPH_LINES

if TYPE_CHECKING:
    from mgtui.graph.layout import GraphModel, Orientation, Picture
    from mgtui.tui.graph_paint import Lighting

PAN = 8  # cells a pan key moves (a quarter screen at least)


class GraphPane(SizedScrollView, can_focus=True):
    """The current graph drawn as boxes and op nodes; the selected box framed double."""

    inherit_bindings = False
    BINDINGS = bindings_of(GRAPH_KEYS)
    COMPONENT_CLASSES = {
        "graph--line", "graph--lit", "graph--op", "graph--frame", "graph--label",
        "graph--selected", "graph--cursor", "graph--run", "graph--acc", "graph--new",
        "graph--set", "graph--changed", "graph--future", "graph--nonfinite",
        "graph--breakpoint", "graph--stub",
    }
    DEFAULT_CSS = """
    GraphPane { background: $surface; scrollbar-size: 0 0; overflow: scroll scroll; }
    /* it pans with keys; its scrollbars, of no size, are always "shown": a picture
       that fits no longer (or again) is no layout of the whole screen */
    GraphPane > .graph--line { color: $text-muted; }
    GraphPane > .graph--lit { color: $warning; text-style: bold; }
    GraphPane > .graph--op { color: $secondary; text-style: bold; }
    GraphPane > .graph--frame { color: $primary 70%; }
    GraphPane > .graph--label { text-style: bold; }
    GraphPane > .graph--selected { color: $accent; text-style: bold; }
    GraphPane > .graph--cursor { color: $secondary; text-style: bold; }
    GraphPane > .graph--run { text-style: bold reverse; color: $warning; }
    GraphPane > .graph--acc { text-style: bold; color: $success; }
    GraphPane > .graph--new { text-style: bold; color: $primary; }
    GraphPane > .graph--set { text-style: bold; color: $secondary; }
    GraphPane > .graph--changed { text-style: bold reverse; color: $success; }
    GraphPane > .graph--future { color: $text-disabled; }
    GraphPane > .graph--nonfinite { color: $error; text-style: bold reverse; }
    GraphPane > .graph--breakpoint { color: $error; text-style: bold; }
    GraphPane > .graph--stub { color: $text-muted; text-style: italic; }
    """

    class Selected(Message):
        """The user chose a box (enter or a click)."""

        def __init__(self, pane: GraphPane, nid: int) -> None:
            super().__init__()
            self.pane = pane
            self.nid = nid

        @property
        def control(self) -> GraphPane:
            return self.pane

    class Viewed(Message):
        """The user panned or turned the picture (a class's teacher: the students follow)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.state: StepState | None = None
        self.model: GraphModel | None = None
        self.picture: Picture | None = None
        self.light: Lighting | None = None
        self.cursor: int | None = None  # the box the keys move; enter selects it
        self.orientation: Orientation | None = None  # the user's choice (o); else by size
        self._auto: tuple[Orientation, int] | None = None  # by size: and compact boxes?
        self._auto_key: tuple | None = None  # what `_auto` was chosen for
        self._selected: int | None = None
        self._lit: dict[int, set[int]] = {}
        self._styles: dict[str, Style] | None = None
        self._view = None  # the GraphView the model was made from
        self._light_key: tuple = ()  # what `light` is made of (the shared lines' key)
        self._base: Style | None = None  # the pane's own style, for one frame's lines
        self._styles_key: tuple = ()  # `_styles`, as a key
        self.hidden: frozenset[int] = frozenset()  # quiz mode: grads shown as ?
        self._showing = False  # drawn since it was shown (else: at its next layout)
        self._early: Size | None = None  # drawn at this size as it was laid out, its
        # Resize and Show events yet to come (they need not draw it again)

    # -- state from the session ------------------------------------------------------------
    def show(self, state: StepState) -> None:
        """Show one step. Nothing is laid out while the pane is hidden."""
        self.state = state
        if self.display and self.is_mounted and self.size.area:
            self._draw()

    def hide_grads(self, nids: frozenset[int]) -> None:
        """Show the grads of `nids` as ? (a prediction is asked for: quiz mode)."""
        if nids != self.hidden:
            self.hidden = frozenset(nids)
            if self.state is not None and self.display and self.is_mounted and self.size.area:
                self._draw()

    def _draw(self, follow: bool = False) -> None:
        state = self.state
        if state is None:
            return
        from mgtui.graph.layout import shared_model
        from mgtui.tui.graph_paint import Lighting, lit_cells, lit_edges

        view = state.view
        if view is None:
            self.model = self.picture = None
            self.virtual_size = Size(0, 0)
            self.refresh()
            return
        if self.model is None or self._view is not view:  # a new graph: lay it out anew
            self.model = shared_model(view.trace, [*view.used, *view.made])
            self._view = view
            self._auto = None
            self.picture = None
        node = state.node
        moved = node != self._selected
        if moved:
            self._selected = node
            self.cursor = node
        picture = self.picture
        orientation, compact = self._form()
        if picture is None or picture.orientation != orientation or (
                picture.compact != compact) or (node is not None and node not in picture.inner):
            picture = self.model.picture(node, orientation, compact)
        if picture is not self.picture:
            self.picture = picture
            # not a layout of the screen (a reactive's set would be one, some 10 ms a
            # step of each student following a big graph): the pane's size is its
            # container's, and it shows no scrollbars
            self.set_reactive(GraphPane.virtual_size, Size(picture.width, picture.height))
            refresh_scrollbars(self)
            self.scroll_x, self.scroll_y = (self.validate_scroll_x(self.scroll_x),
                                            self.validate_scroll_y(self.scroll_y))
            follow = True
        if self.cursor is not None and self.cursor not in picture.boxes:
            self.cursor = node if node in picture.boxes else None
        trace = view.trace
        kinds = state.passes.kinds
        grads = 0 <= state.pass_index < len(kinds) and kinds[state.pass_index] == "backward"
        self.light = Lighting(state.data, state.grad, state.created, state.marks, node,
                              self.cursor, state.breakpoints,
                              lit_edges(picture, state.marks, trace.children), grads,
                              self.hidden)
        # what the lines are drawn from besides the picture (`_line_key`): the numbers
        # and marks are the trace's at this step (a replay: the same in every session)
        self._light_key = (id(trace), state.step, state.created, node, self.cursor,
                           state.breakpoints, grads, self.hidden)
        self._lit = lit_cells(picture, self.light)
        self.refresh()
        if follow or moved:
            # at once, so that a step is one frame, not one and then one scrolled; and
            # after the refresh too, for a new picture whose size applies only then
            self.scroll_to_box(self.cursor, True, fresh=follow)
            self.call_after_refresh(self.scroll_to_box, self.cursor, True, follow)

    def _form(self) -> tuple[Orientation, int]:
        """The orientation and the boxes: full boxes (`label │ data │ grad`) where the
        picture fits the pane with them, else compact ones (one row, one number), else
        stacked ones (the label over the number) if the picture fits whole with them; left
        to right like `draw_dot` unless top to bottom fits (or needs fewer pages to pan
        through). `o` fixes the orientation; the boxes still follow the room."""
        if self.model is None:
            return self.orientation or "LR", False
        center = self.state.node if self.state is not None else None
        key = (None if self.model.whole else center, self.orientation)
        if self._auto is None or self._auto_key != key:  # (a neighbourhood: per centre)
            self._auto_key = key
            self._auto = self._best_form(self.model, center)
        return self._auto

    def _best_form(self, model, center: int | None) -> tuple[Orientation, int]:
        width, height = self.content_region.size
        width, height = max(width, 20), max(height, 5)

        def pages(form) -> int:  # (weighed by its size: only the form shown is drawn)
            w, h = model.extent(center, *form)
            return -(-w // width) * -(-h // height)

        ways = [self.orientation] if self.orientation else ["LR", "TB"]
        forms = [(o, c) for c in (False, True) for o in ways]
        costs = {form: pages(form) for form in forms}
        fits = [form for form in forms if costs[form] == 1]
        if not fits:  # stacked boxes (label over number): narrower, one row taller
            fits = [(o, 2) for o in ways if pages((o, 2)) == 1]
        return fits[0] if fits else min(forms, key=lambda f: (costs[f], not f[1]))

    def lay_out_ahead(self, view, node: int | None) -> Iterator[None]:
        """Lay out now what showing `node` of `view` will need (the pictures `_form`
        weighs, kept by the graph's shared model): a class's next step, in the quiet
        after this one (mgtui/serve/heap.py), is then drawn with no layout. One form a
        `next` (a generator: a key that comes meanwhile need not wait for all)."""
        if view is None or not (self.display and self.is_mounted and self.size.area):
            return
        from mgtui.graph.layout import shared_model

        model = shared_model(view.trace, [*view.used, *view.made])
        for compact in (False, True):
            for orientation in [self.orientation] if self.orientation else ["LR", "TB"]:
                model.extent(node, orientation, compact)
                yield
        model.picture(node, *self._best_form(model, node))

    def _orientation(self) -> Orientation:
        return self._form()[0]

    def on_resize(self) -> None:
        if self._early == self.size:  # (drawn at this size as it was laid out)
            return
        self._auto = None
        if self.state is not None and self.display:
            self._draw(follow=True)

    def on_show(self) -> None:
        early, self._early = self._early, None
        if self.state is not None and early != self.size:
            self._auto = None
            self.call_after_refresh(self._draw, True)

    def on_hide(self) -> None:
        self._showing, self._early = False, None

    def size_given(self, size: Size) -> None:
        """(The pane's size, given as the screen is laid out, before the frame is
        drawn.) A pane shown now draws its picture in that frame, not a blank pane
        first and the picture once its Show event comes (a class's `m`: an empty frame
        for every student, and the picture in the next)."""
        if not self._showing and size.area and self.state is not None and self.display:
            self._showing, self._early = True, size
            self._auto = None
            self._draw(follow=True)

    # -- moving around -------------------------------------------------------------------
    def scroll_to_box(self, nid: int | None, with_marks: bool = False,
                      fresh: bool = False) -> None:
        """Bring box `nid` on screen, centred if it was off it; `with_marks`: with the
        boxes the step marked too (the grads a `_backward` added to), if they all fit.
        `fresh`: a new picture, which is shown from its top left corner if the boxes are
        on screen there; its old scroll, made at whatever size the pane had then, would
        make where it lands depend on timing."""
        picture = self.picture
        if picture is None or nid not in picture.boxes:
            return
        boxes = [picture.boxes[nid]]
        if with_marks and self.light is not None:
            boxes += [picture.boxes[n] for n in self.light.marks if n in picture.boxes]
        left, top = min(b.x for b in boxes), min(b.y for b in boxes)
        right, bottom = max(b.x + b.w for b in boxes), max(b.y + 3 for b in boxes)
        width, height = self.scrollable_content_region.size
        if right - left > width or bottom - top > height:
            box = boxes[0]
            left, top, right, bottom = box.x, box.y, box.x + box.w, box.y + 3
        x0, y0 = (0, 0) if fresh else (round(self.scroll_x), round(self.scroll_y))
        if x0 <= left and right <= x0 + width and y0 <= top and bottom <= y0 + height:
            if fresh:
                self.scroll_to(x=0, y=0, animate=False, immediate=True)
            return
        x = (left + right) // 2 - width // 2
        y = (top + bottom) // 2 - height // 2
        self.scroll_to(x=max(x, 0), y=max(y, 0), animate=False, immediate=True)

    def action_move(self, dx: int, dy: int) -> None:
        """Move the cursor to the nearest box in direction (dx, dy)."""
        picture = self.picture
        if picture is None or not picture.boxes:
            return
        here = picture.boxes.get(self.cursor) if self.cursor is not None else None
        if here is None:
            self._set_cursor(next(iter(picture.boxes)))
            return
        cx, cy = here.x + here.w / 2, here.y + 1
        best, best_score = None, None
        for nid, box in picture.boxes.items():
            if nid == self.cursor:
                continue
            bx, by = box.x + box.w / 2, box.y + 1
            along = (bx - cx) * dx + (by - cy) * dy
            across = abs((bx - cx) * dy) + abs((by - cy) * dx)
            if along <= 0:
                continue
            score = along + 2 * across * (1 if dy else 0.5)
            if best_score is None or score < best_score:
                best, best_score = nid, score
        if best is not None:
            self._set_cursor(best)

    def _set_cursor(self, nid: int) -> None:
        self.cursor = nid
        if self.light is not None:
            from dataclasses import replace

            self.light = replace(self.light, cursor=nid)
            self._light_key = (*self._light_key[:4], nid, *self._light_key[5:])
        self.refresh()
        self.scroll_to_box(nid)

    def action_choose(self) -> None:
        if self.cursor is not None:
            self.scroll_to_box(self.cursor)
            self.post_message(self.Selected(self, self.cursor))

    def action_pan(self, dx: int, dy: int) -> None:
        width, height = self.scrollable_content_region.size
        step_x, step_y = max(PAN, width // 4), max(PAN // 2, height // 4)
        self.scroll_to(x=self.scroll_x + dx * step_x, y=self.scroll_y + dy * step_y,
                       animate=False, immediate=True)
        self.post_message(self.Viewed())

    def action_flip(self) -> None:
        """Left to right, or top to bottom."""
        current = self.picture.orientation if self.picture is not None else self._orientation()
        self.orientation = "TB" if current == "LR" else "LR"
        self._draw(follow=True)
        self.post_message(self.Viewed())

    def on_click(self, event) -> None:
        if self.picture is None:
            return
        nid = self.picture.box_at(round(self.scroll_x) + event.x, round(self.scroll_y) + event.y)
        if nid is not None:
            self._set_cursor(nid)
            self.post_message(self.Selected(self, nid))

    # -- rendering --------------------------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None

    def _style_table(self) -> dict[str, Style]:
        if self._styles is None:
            from mgtui.tui.graph_paint import STYLE_NAMES

            self._styles = {name: self.get_component_rich_style(f"graph--{name}")
                            for name in STYLE_NAMES}
            self._styles_key = tuple(self._styles.values())
        return self._styles

    def render_lines(self, crop):
        self._base = self.rich_style  # (once a frame, not once a line)
        try:
            return super().render_lines(crop)
        finally:
            self._base = None

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self._base or self.rich_style
        picture, light = self.picture, self.light
        row = round(self.scroll_y) + y
        if picture is None or light is None or not 0 <= row < picture.height:
            return Strip.blank(width, base)
        x = round(self.scroll_x)
        styles = self._style_table()
        # the same line of the same step at the same size, drawn alike, for every
        # session of the process that shows it (a class following its teacher)
        key = (id(picture), row, x, width, self._light_key, self._styles_key, base,
               self.app.console.color_system)
        strip = GRAPH_LINES.get(key, picture)
        if strip is not None:
            return strip
        from mgtui.tui.graph_paint import paint_line

        runs = paint_line(picture, row, light, styles, self._lit)
        segments = [Segment(text, base + style if style is not None else base)
                    for text, style in runs]
        strip = Strip(segments, picture.width).crop_extend(x, x + width, base)
        return GRAPH_LINES.put(key, picture, strip)
