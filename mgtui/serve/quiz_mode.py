"""Predict, then see, in a class (`ServedApp.quiz_mode`). The teacher starts quiz mode
(`Q`); at each backward step a student's node table shows the grads the step writes as
`?` (the step's explanation is hidden too) until they predict one (`a`, a number); then
it says right or wrong. The teacher's console shows the class's answers as a small
histogram with the share right, and `V` reveals the step for everyone. The rules are
`mgtui.session.quiz`'s."""

from __future__ import annotations

import logging

from mgtui.safe import inert_line
from mgtui.session.follow import Member
from mgtui.session.quiz import BOUND, Question, Quiz, parse_number, taken, verdict
from mgtui.tui.widgets.step_detail import StepDetail

log = logging.getLogger("mgtui.serve")


class QuizMode:
    """One session's side of the class's quiz. It reads the app's `debugger`,
    `classroom`, `lessons`, `lesson`, `teacher`, `member`, `member_name` and
    `identity` (this login, the same across its reconnects and the server's processes:
    one student, one answer per question, one row of scores)."""

    def __init__(self, app) -> None:
        self.app = app
        self.asking: Question | None = None  # the question this student has not answered yet
        self.clear = True  # nothing hidden by `show_quiz` now (nor the working)
        self.asks = True  # False for a session that cannot answer (the class's recording)
        self.save_scores = None  # a teacher's: writes the quiz's scores now, says what it did

    def save_now(self) -> None:
        """W, a teacher's: the quiz's scores written now (as when the class ends)."""
        if not self.app.keyed_teacher:
            return
        if self.save_scores is None:
            said = "no scores file: serve with --quiz-scores FILE to keep the quiz's scores"
        else:
            said = self.save_scores()
        self.app.notify(said, timeout=8, markup=False)

    @property
    def quiz_name(self) -> str:
        """This student in the quiz's answers: its login's `identity` (a session with
        none, a browser visitor's say, is its own student)."""
        app = self.app
        return app.identity or f"{app.member_name} #{app.classroom.tag}{app.member}"

    def quiz_here(self) -> Quiz | None:
        app = self.app
        if not app.classroom.quiz_on or app.lesson not in app.lessons:
            return None
        return app.classroom.quiz(app.lesson, app.lessons[app.lesson].trace)

    def step_here(self) -> int:
        session = self.app.debugger.session
        return session.position.step if session is not None else 0

    def show_quiz(self) -> None:
        """Hide what the student is to predict (or show it again)."""
        quiz, step, debugger = self.quiz_here(), self.step_here(), self.app.debugger
        question = quiz.question(step) if quiz is not None else None
        asks = (question is not None and not self.app.teacher and self.asks
                and not quiz.shows(self.quiz_name, step))
        self.asking = question if asks else None
        if not asks and self.clear:
            return  # (nothing to show again: the teacher's console comes here at every
            # student's step, and the panes' queries cost some ms each time)
        self.clear = not asks
        # the node table, the Graph pane and the topo list show them as ?
        debugger.hide_grads(question.hidden if asks else frozenset())
        for detail in debugger.query(StepDetail).results(StepDetail):
            detail.display = not asks  # (the working has the numbers)

    def quiz_status(self) -> str:
        """A student's quiz line: the question, or how their answer went."""
        if self.asking is not None:
            return f"quiz: {self.asking.prompt} — press a to answer"
        quiz, step = self.quiz_here(), self.step_here()
        given = quiz.answers.get(self.quiz_name, {}) if quiz is not None else {}
        question = quiz.question(step) if step in given else None
        if question is None:
            return ""
        return verdict(question, given[step], question.right(given[step]))  # (theirs,
        # given in this session or an earlier one of the same login)

    def quiz_console(self) -> str:
        """The teacher's quiz line: the class's answers at this step ("—" where it
        cannot be drawn: logged, and the session goes on)."""
        try:
            return self._quiz_console()
        except Exception:  # noqa: BLE001 - a line that fails must not end the teacher's session
            log.exception("the quiz line of %s's console failed", self.app.member_name)
            return "quiz: —"

    def quiz_of(self, member: Member) -> str:
        """The roster's quiz column for `member`: whether they answered the question at
        their step ("" where none is asked)."""
        lessons, classroom = self.app.lessons, self.app.classroom
        try:
            trace = lessons[member.lesson].trace if member.lesson in lessons else None
            if not classroom.quiz_on or trace is None or member.teacher:
                return ""
            quiz = classroom.quiz(member.lesson, trace)
            if quiz.question(member.step) is None:
                return ""
            if member.step in quiz.answers.get(member.identity, {}):
                return "answered"
            return "revealed" if member.step in quiz.revealed else "not answered"
        except Exception:  # noqa: BLE001 - (as `quiz_console`)
            log.exception("the roster's quiz column failed")
            return "—"

    def _quiz_console(self) -> str:
        quiz = self.quiz_here()
        if quiz is None:
            return ""
        step = self.step_here()
        question = quiz.question(step)
        if question is None:
            return "quiz on (Q stops it)"
        shown = " · revealed" if step in quiz.revealed else " · V reveals"
        return (f"quiz {question.what} = {question.answer:.4g}: "
                f"{quiz.histogram_line(step)}{shown}")

    def ask_answer(self) -> None:
        """`a`, a student's: their prediction of the grad asked."""
        if self.asking is None:
            return
        from mgtui.tui.widgets.roster import SayScreen

        self.app.push_screen(SayScreen(40, f"Your prediction: {self.asking.prompt}",
                                       "a number, e.g. -2 or 0.5"), self._answered)

    def _answered(self, text: str | None) -> None:
        app, quiz, question = self.app, self.quiz_here(), self.asking
        if text is None or quiz is None or question is None:
            return
        value = parse_number(text)
        if value is None:
            app.notify(f"{inert_line(text)!r} is not a number: press a to try again",
                       severity="warning", timeout=5, markup=False)
            return
        if not taken(value):
            app.notify(f"{value:g} is not taken: {BOUND}. Press a to try again.",
                       severity="warning", timeout=6, markup=False)
            return
        app.classroom.answer(app.lesson, quiz.trace, self.quiz_name, question.step, value,
                             name=app.member_name)  # (counted in every process of the class)
        self.show_quiz()
        app.shared_view.show_student_status()

    def toggle(self) -> None:
        """`Q`, the teacher's: quiz mode on or off, for the whole class."""
        app = self.app
        if app.teacher:
            app.classroom.start_quiz(not app.classroom.quiz_on)
            app.notify("Quiz mode on: students predict each backward step's grad."
                       if app.classroom.quiz_on else "Quiz mode off.", timeout=4, markup=False)

    def reveal(self) -> None:
        """`V`, the teacher's: this step's grads for everyone."""
        app = self.app
        if app.teacher and app.classroom.quiz_on:
            app.classroom.reveal(app.lesson, app.lessons[app.lesson].trace, self.step_here())
