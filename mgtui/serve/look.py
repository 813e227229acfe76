"""Where the teacher looks, for a class (`ServedApp` takes it in): the Graph pane (open,
turned, panned), the notes full screen, the node pointed at (`*`) and the line sent to
the class (`!`), published with the teacher's position as a `Look`, and applied by every
student's session that follows."""

from __future__ import annotations

from dataclasses import replace

from mgtui.safe import inert_line
from mgtui.session import Position
from mgtui.session.follow import LINE_CHARS, Look
from mgtui.tui.widgets.graph import GraphPane


class TeacherLook:
    """(A part of `ServedApp`: it has the app's `debugger`, `classroom`, `follower`,
    `teacher` and `lesson`.)"""

    def teacher_look(self, position: Position) -> Look:
        """`position` with where this (leading) session looks now."""
        debugger = self.debugger
        if position.step != self._look_step:  # a new step: the pointer, line and pan go
            self._pointer, self._line, self._pan = None, "", None
            self._look_step = position.step
        pane = debugger.query_one(GraphPane)
        return Look.of(replace(position, lesson=self.lesson),
                       graph=debugger.graph_shown, flip=pane.orientation,
                       pan=self._pan or (0, 0), notes=self.notes_open(),
                       pointer=self._pointer, line=self._line)

    def looked(self) -> None:
        """The teacher looked somewhere else (the Graph pane, the notes): the class too."""
        if self.teacher and self.debugger.session is not None:
            self.classroom.publish(self.teacher_look(self.debugger.session.position))
            self._show_console()

    def panned(self) -> None:
        if self.teacher:
            pane = self.debugger.query_one(GraphPane)
            self._pan = (max(0, round(pane.scroll_x)), max(0, round(pane.scroll_y)))
            self.looked()

    def action_point(self) -> None:
        """Point the class at the selected box (the Graph pane's cursor when it has the
        focus); `*` again on it stops pointing."""
        if not self.teacher or self.debugger.session is None:
            return
        pane = self.debugger.query_one(GraphPane)
        nid = pane.cursor if pane.has_focus and pane.cursor is not None else self.debugger.selected
        self._pointer = None if nid == self._pointer else nid
        self.looked()

    def action_say(self) -> None:
        if not self.teacher:
            return
        from mgtui.tui.widgets.roster import SayScreen

        self.push_screen(SayScreen(LINE_CHARS), self._said)

    def _said(self, text: str | None) -> None:
        if text is not None:
            self._line = inert_line(text)[:LINE_CHARS]
            self.looked()

    def apply_look(self, look: Look) -> None:
        """A student's session looks where the teacher does."""
        if self.teacher or not self.follower.following or self.debugger.session is None:
            return
        debugger = self.debugger
        if debugger.graph_shown != look.graph:
            debugger.show_graph(look.graph)
        pane = debugger.query_one(GraphPane)
        if look.graph and pane.orientation != look.flip:
            pane.orientation = look.flip
            if pane.state is not None:
                pane.show(pane.state)
        if look.graph and look.pointer is not None and pane.picture is not None \
                and look.pointer in pane.picture.boxes:
            pane._set_cursor(look.pointer)  # (the cursor's frame: the box pointed at)
        if look.graph and look.pan != (0, 0):
            pane.scroll_to(x=look.pan[0], y=look.pan[1], animate=False, immediate=True)
        notes = self.notes_open()
        if look.notes and not notes and self.screen is debugger:
            debugger.action_notes_view()
        elif notes and not look.notes:
            self.pop_screen()

    def notes_open(self) -> bool:
        """Whether the notes are on show full screen (`N`)."""
        from mgtui.tui.widgets.notes_view import NotesScreen

        return isinstance(self.screen, NotesScreen)

    def pointed_label(self, look: Look | None) -> str:
        trace = self.debugger.trace
        if look is None or look.pointer is None or trace is None:
            return ""
        try:
            label = trace.label(look.pointer)
        except (IndexError, KeyError):
            return ""
        return f"☞ look at {inert_line(label) or '?'} (node {look.pointer})"

    def show_student_status(self) -> None:
        """A student's status line: paused (and where the teacher is), the teacher's
        line and pointer."""
        look = self._heard_look
        parts = [self.follower.status] if not self.follower.following else []
        parts.append(self.quiz_status())
        if look is not None and look.line:
            parts.append(f"teacher: {look.line}")
        pointer = self.pointed_label(look)
        if pointer:
            parts.append(pointer)
        self.debugger.show_status(" · ".join(p for p in parts if p))
