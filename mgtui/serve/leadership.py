"""Who leads a class, as one session sees it (`ServedApp.leadership`): the teacher's
console line and roster, a second teacher's choice (take over, or watch), the lead
passing between teachers, and a student told when nobody leads any more."""

from __future__ import annotations

from mgtui.safe import inert_line

TEACHER_LEFT = ("The teacher has left the class: nobody leads now. Move as you like; you "
                "follow the teacher again when one comes back (f, if you moved).")
TEACHER_BACK = "A teacher leads the class now."


class Leadership:
    """The lead of one session. It reads the app's `classroom`, `member`, `teacher`,
    `keyed_teacher`, `debugger`, `shared_view` and `quiz_mode`."""

    def __init__(self, app) -> None:
        self.app = app
        self.led = True  # whether a teacher led when this (student's) session last looked

    def news(self) -> bool:
        """The class changed: a teacher's session takes the lead nobody holds, or hands
        it over, or takes it; a student's is told when the lead comes or goes. True if
        that is all there is to do now (the status line comes with the lead's change)."""
        app, classroom = self.app, self.app.classroom
        if not app.keyed_teacher:
            self.student_news(classroom.led)
            return False
        leads = classroom.lead == app.member
        if classroom.lead is None and not classroom.lead_elsewhere and app.member is not None:
            classroom.take_lead(app.member)  # the teacher who led has left
            return True
        if app.teacher and not leads:
            app.teacher = False
            leader = classroom.leader()
            app.notify(f"{inert_line(leader.name if leader else 'another teacher')} "
                       "has taken over the class: you are watching (R, q still work).",
                       timeout=8, markup=False)
            if classroom.position is not None:
                app.heard(classroom.position)
        elif leads and not app.teacher:
            self.take_over()
            return True
        return False

    def student_news(self, led: bool) -> None:
        """A student is told when the teacher leaves the class, and when one leads again
        (else a following student waited on a class that had stopped, unaware)."""
        if led == self.led:
            return
        self.led = led
        self.app.notify(TEACHER_BACK if led else TEACHER_LEFT, timeout=8, markup=False)

    def console_line(self) -> str:
        """The teacher's status line: how to join, and who is following."""
        app, classroom = self.app, self.app.classroom
        join = classroom.join_command
        parts = [f"join: {join}"] if join else []
        parts += [str(classroom.counts()), "R roster"]
        view = classroom.position
        if view is not None and view.line:
            parts.append(f"you said: {view.line}")
        pointer = app.shared_view.pointed_label(view)
        if pointer:
            parts.append(pointer.replace("look at", "pointing at"))
        quiz = app.quiz_mode.quiz_console()
        return " · ".join(parts) + (f"\n{quiz}" if quiz else "")

    def ask(self) -> None:
        """A second teacher: take over, or watch the one who leads."""
        from mgtui.tui.widgets.roster import AskScreen

        leader = self.app.classroom.leader()
        who = inert_line(leader.name) if leader else "Another teacher"
        self.app.push_screen(AskScreen(f"{who} is leading this class.", [
            ("t", "take over: the class follows you from now on", "take"),
            ("w", "watch: follow them, as a student does", "watch")]), self._chosen)

    def _chosen(self, answer: str | None) -> None:
        app = self.app
        if answer == "take" and app.member is not None:
            app.classroom.take_lead(app.member)
            self.take_over()
        else:
            app.notify("You are watching: the class follows the other teacher.", timeout=5,
                       markup=False)

    def take_over(self) -> None:
        """This session leads now: the class comes to where it is."""
        app = self.app
        app.teacher = True
        app.debugger.show_status(self.console_line())
        app.notify("You lead the class now.", timeout=5, markup=False)
        if app.debugger.session is not None:
            app.classroom.publish(app.shared_view.view_at(app.debugger.session.position))

    def roster_rows(self) -> list[tuple[str, ...]]:
        from mgtui.serve.names import roster_rows

        return roster_rows(self.app.classroom, self.app.quiz_mode.quiz_of)

    def show_roster(self) -> None:
        """`R`: who is here, following or paused, at which step and lesson."""
        from mgtui.tui.widgets.roster import RosterScreen

        self.app.push_screen(RosterScreen(f"The class: {self.app.classroom.counts()}",
                                          self.roster_rows()))
