"""Predict, then see, in a class (`ServedApp` takes it in). The teacher starts quiz mode
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
    """(A part of `ServedApp`: it has the app's `debugger`, `classroom`, `lessons`,
    `lesson`, `teacher`, `member` and `member_name`.)"""

    _asking: Question | None = None  # the question this student has not answered yet
    _quiz_clear = True  # nothing hidden by `show_quiz` now (nor the working)
    asks_quiz = True  # False for a session that cannot answer (the class's recording)
    # This login, the same across its reconnects and the server's processes: a key's
    # fingerprint, else the login name (mgtui/serve/server.py sets it). One student, one
    # answer per question, one row of scores.
    identity = ""
    save_scores = None  # a teacher's: writes the quiz's scores now, says what it did

    def action_save_scores(self) -> None:
        """W, a teacher's: the quiz's scores written now (as when the class ends)."""
        if not self.keyed_teacher:
            return
        if self.save_scores is None:
            said = "no scores file: serve with --quiz-scores FILE to keep the quiz's scores"
        else:
            said = self.save_scores()
        self.notify(said, timeout=8, markup=False)

    @property
    def quiz_name(self) -> str:
        """This student in the quiz's answers: its login's `identity` (a session with
        none, a browser visitor's say, is its own student)."""
        return self.identity or f"{self.member_name} #{self.classroom.tag}{self.member}"

    def quiz_here(self) -> Quiz | None:
        if not self.classroom.quiz_on or self.lesson not in self.lessons:
            return None
        return self.classroom.quiz(self.lesson, self.lessons[self.lesson].trace)

    def step_here(self) -> int:
        session = self.debugger.session
        return session.position.step if session is not None else 0

    def show_quiz(self) -> None:
        """Hide what the student is to predict (or show it again)."""
        quiz, step = self.quiz_here(), self.step_here()
        question = quiz.question(step) if quiz is not None else None
        asks = (question is not None and not self.teacher and self.asks_quiz
                and not quiz.shows(self.quiz_name, step))
        self._asking = question if asks else None
        if not asks and self._quiz_clear:
            return  # (nothing to show again: the teacher's console comes here at every
            # student's step, and the panes' queries cost some ms each time)
        self._quiz_clear = not asks
        # the node table, the Graph pane and the topo list show them as ?
        self.debugger.hide_grads(question.hidden if asks else frozenset())
        for detail in self.debugger.query(StepDetail).results(StepDetail):
            detail.display = not asks  # (the working has the numbers)

    def quiz_status(self) -> str:
        """A student's quiz line: the question, or how their answer went."""
        if self._asking is not None:
            return f"quiz: {self._asking.prompt} — press a to answer"
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
            log.exception("the quiz line of %s's console failed", self.member_name)
            return "quiz: —"

    def quiz_of(self, member: Member) -> str:
        """The roster's quiz column for `member`: whether they answered the question at
        their step ("" where none is asked)."""
        try:
            trace = self.lessons[member.lesson].trace if member.lesson in self.lessons else None
            if not self.classroom.quiz_on or trace is None or member.teacher:
                return ""
            quiz = self.classroom.quiz(member.lesson, trace)
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

    def action_answer(self) -> None:
        if self._asking is None:
            return
        from mgtui.tui.widgets.roster import SayScreen

        self.push_screen(SayScreen(40, f"Your prediction: {self._asking.prompt}",
                                   "a number, e.g. -2 or 0.5"), self._answered)

    def _answered(self, text: str | None) -> None:
        quiz, question = self.quiz_here(), self._asking
        if text is None or quiz is None or question is None:
            return
        value = parse_number(text)
        if value is None:
            self.notify(f"{inert_line(text)!r} is not a number: press a to try again",
                        severity="warning", timeout=5, markup=False)
            return
        if not taken(value):
            self.notify(f"{value:g} is not taken: {BOUND}. Press a to try again.",
                        severity="warning", timeout=6, markup=False)
            return
        self.classroom.answer(self.lesson, quiz.trace, self.quiz_name, question.step, value,
                              name=self.member_name)  # (counted in every process of the class)
        self.show_quiz()
        self.show_student_status()

    def action_quiz(self) -> None:
        if self.teacher:
            self.classroom.start_quiz(not self.classroom.quiz_on)
            self.notify("Quiz mode on: students predict each backward step's grad."
                        if self.classroom.quiz_on else "Quiz mode off.", timeout=4, markup=False)

    def action_reveal(self) -> None:
        if self.teacher and self.classroom.quiz_on:
            self.classroom.reveal(self.lesson, self.lessons[self.lesson].trace,
                                  self.step_here())
