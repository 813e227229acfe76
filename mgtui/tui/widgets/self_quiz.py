"""Quiz mode for self-study (`mgtui FILE --quiz`) on the debugger screen: the question's
line, the grads hidden until predicted, the prediction typed, and the score. The quiz
itself is the session's (`mgtui.session.quiz`); `SelfQuiz` is an object the
`DebuggerScreen` holds.
"""

from __future__ import annotations

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static

from mgtui.safe import inert
from mgtui.session import StepState


class SelfQuiz:
    """The screen's side of the session's quiz (nothing while there is no quiz)."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen

    def _quiz(self):
        session = self.screen.session
        return session.quiz if session is not None else None

    def show(self, state: StepState) -> None:
        """The question of `state`'s step on its line, and its grads hidden."""
        if self._quiz() is None:
            return
        self.screen.hide_grads(state.hidden)
        quiz_line = self.screen.query_one("#quiz-line", Static)
        quiz_line.display = bool(state.quiz)
        quiz_line.update(Text(state.quiz))

    def can_answer(self) -> bool | None:
        """The answer key: False with no quiz (not a key of the screen's then), None (greyed
        out) at a step that asks nothing."""
        if self._quiz() is None:
            return False
        state = self.screen.state
        return bool(state is not None and state.hidden) or None

    def score(self) -> str:
        """The score so far ("" if no quiz)."""
        quiz = self._quiz()
        return quiz.score() if quiz is not None else ""

    def ask(self) -> None:
        """Ask for a prediction of the grad the step asks for (if it asks one)."""
        quiz = self._quiz()
        asked = quiz.asking(self.screen.session.step) if quiz is not None else None
        if asked is None:
            return
        from mgtui.tui.widgets.roster import SayScreen

        self.screen.app.push_screen(SayScreen(40, f"Your prediction: {asked.prompt}",
                                              "a number, e.g. -2 or 0.5"), self._answered)

    def _answered(self, text: str | None) -> None:
        from mgtui.session.quiz import parse_number

        screen = self.screen
        if text is None or screen.session is None:
            return
        value = parse_number(text)
        if value is None:
            screen.notify(f"{inert(text)!r} is not a number: press a to try again",
                          severity="warning", timeout=5, markup=False)
            return
        screen.state = screen.session.answer(value)
