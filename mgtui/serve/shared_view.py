"""Where the teacher looks, shared with the class (`ServedApp.shared_view`): the Graph
pane (open, turned, panned), the notes full screen, the node pointed at (`*`) and the
line sent to the class (`!`), published with the teacher's position as a
`TeacherView`, and applied by every student's session that follows."""

from __future__ import annotations

from dataclasses import replace

from mgtui.safe import inert_line
from mgtui.session import Position
from mgtui.session.follow import LINE_CHARS, TeacherView
from mgtui.tui.widgets.graph import GraphPane


class SharedView:
    """The teacher's view of one session: made from its screen while it leads
    (`view_at`), applied to its screen while it follows (`apply`). It reads the app's
    `debugger`, `classroom`, `follower`, `teacher` and `lesson`."""

    def __init__(self, app) -> None:
        self.app = app
        self.pointer: int | None = None  # the teacher's: the node pointed at (`*`)
        self.line = ""  # the teacher's line to the class (`!`)
        self.pan: tuple[int, int] | None = None  # the Graph pane as the teacher panned it
        self.step = -1  # the step those belong to: the next step clears them
        self.heard: TeacherView | None = None  # a student's: the teacher's latest view

    def view_at(self, position: Position) -> TeacherView:
        """`position` with where this (leading) session looks now."""
        app = self.app
        if position.step != self.step:  # a new step: the pointer, line and pan go
            self.pointer, self.line, self.pan = None, "", None
            self.step = position.step
        pane = app.debugger.query_one(GraphPane)
        return TeacherView.of(replace(position, lesson=app.lesson),
                              graph=app.debugger.graph_shown, flip=pane.orientation,
                              pan=self.pan or (0, 0), notes=self.notes_open(),
                              pointer=self.pointer, line=self.line)

    def looked(self) -> None:
        """The teacher looked somewhere else (the Graph pane, the notes): the class too."""
        app = self.app
        if app.teacher and app.debugger.session is not None:
            app.classroom.publish(self.view_at(app.debugger.session.position))
            app.show_console()

    def panned(self) -> None:
        if self.app.teacher:
            pane = self.app.debugger.query_one(GraphPane)
            self.pan = (max(0, round(pane.scroll_x)), max(0, round(pane.scroll_y)))
            self.looked()

    def point(self) -> None:
        """Point the class at the selected box (the Graph pane's cursor when it has the
        focus); `*` again on it stops pointing."""
        debugger = self.app.debugger
        if not self.app.teacher or debugger.session is None:
            return
        pane = debugger.query_one(GraphPane)
        nid = pane.cursor if pane.has_focus and pane.cursor is not None else debugger.selected
        self.pointer = None if nid == self.pointer else nid
        self.looked()

    def say(self) -> None:
        if not self.app.teacher:
            return
        from mgtui.tui.widgets.roster import SayScreen

        self.app.push_screen(SayScreen(LINE_CHARS), self._said)

    def _said(self, text: str | None) -> None:
        if text is not None:
            self.line = inert_line(text)[:LINE_CHARS]
            self.looked()

    def apply(self, view: TeacherView) -> None:
        """A student's session looks where the teacher does."""
        app = self.app
        debugger = app.debugger
        if app.teacher or not app.follower.following or debugger.session is None:
            return
        if debugger.graph_shown != view.graph:
            debugger.show_graph(view.graph)
        pane = debugger.query_one(GraphPane)
        if view.graph and pane.orientation != view.flip:
            pane.orientation = view.flip
            if pane.state is not None:
                pane.show(pane.state)
        if view.graph and view.pointer is not None and pane.picture is not None \
                and view.pointer in pane.picture.boxes:
            pane._set_cursor(view.pointer)  # (the cursor's frame: the box pointed at)
        if view.graph and view.pan != (0, 0):
            pane.scroll_to(x=view.pan[0], y=view.pan[1], animate=False, immediate=True)
        notes = self.notes_open()
        if view.notes and not notes and app.screen is debugger:
            debugger.action_notes_view()
        elif notes and not view.notes:
            app.pop_screen()

    def notes_open(self) -> bool:
        """Whether the notes are on show full screen (`N`)."""
        from mgtui.tui.widgets.notes_view import NotesScreen

        return isinstance(self.app.screen, NotesScreen)

    def pointed_label(self, view: TeacherView | None) -> str:
        trace = self.app.debugger.trace
        if view is None or view.pointer is None or trace is None:
            return ""
        try:
            label = trace.label(view.pointer)
        except (IndexError, KeyError):
            return ""
        return f"☞ look at {inert_line(label) or '?'} (node {view.pointer})"

    def show_student_status(self) -> None:
        """A student's status line: paused (and where the teacher is), the teacher's
        line and pointer."""
        app, view = self.app, self.heard
        parts = [app.follower.status] if not app.follower.following else []
        parts.append(app.quiz_mode.quiz_status())
        if view is not None and view.line:
            parts.append(f"teacher: {view.line}")
        pointer = self.pointed_label(view)
        if pointer:
            parts.append(pointer)
        app.debugger.show_status(" · ".join(p for p in parts if p))
