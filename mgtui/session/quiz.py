"""Predict, then see: the rules of quiz mode, headless. At each backward step the grads
its `_backward` accumulates are hidden until the student predicts one of them (the
first it writes), a number; the answer is right within the tolerance shown. A teacher
sees the class's answers for a step as a small histogram and the share right, and can
reveal a step for everyone. Scores per student export as CSV.

Plain data and arithmetic: no screen, no transport (the class server, the app and the
tests all use it).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field

from mgtui.trace import Trace
from mgtui.trace.explain_arrays import array_answer, grad_before
from mgtui.trace.records import EventKind, Field
from mgtui.trace.working import fmt, name

RELATIVE = 0.01  # an answer within 1% of the grad is right
ABSOLUTE = 0.01  # ... or within this much of it (a grad near 0)
BARS = "▁▂▃▄▅▆▇█"
# The largest prediction taken, either sign: a lesson's grads are nowhere near it, and
# answers past it (1.7e308 and -1.7e308) overflowed the histogram's arithmetic.
MAX_ANSWER = 1e12
BOUND = f"answers are numbers between {-MAX_ANSWER:g} and {MAX_ANSWER:g}"


@dataclass(frozen=True)
class Question:
    """What a backward step asks: node `node`'s grad once this step has run (one element
    of it, `index`, where the grad is an array)."""

    step: int
    node: int
    label: str
    answer: float
    hidden: frozenset[int]  # every node whose grad this step writes: shown as ?
    index: tuple[int, ...] | None = None  # the element asked, where the grad is an array
    before: float = 0.0  # the grad before this step (hidden with it): what a `+=` adds to

    @property
    def what(self) -> str:
        """`o.grad`, or `b.grad[0, 3]` for an element of an array grad."""
        where = "" if self.index is None else "[" + ", ".join(map(str, self.index)) + "]"
        return f"{name(self.label)}.grad{where}"

    @property
    def tolerance(self) -> float:
        return max(ABSOLUTE, abs(self.answer) * RELATIVE)

    def right(self, value: float) -> bool:
        return math.isfinite(value) and abs(value - self.answer) <= self.tolerance + 1e-12

    @property
    def prompt(self) -> str:
        was = f"it is {fmt(self.before)} before it, and += adds to that; " if self.before else ""
        return f"predict {self.what} after this step ({was}right within ± {self.tolerance:.3g})"


def question_at(trace: Trace, step: int) -> Question | None:
    """The question of step `step` (None if it is no backward step writing a grad)."""
    if step < 1 or step > len(trace):
        return None
    event = step - 1
    if trace.kind(event) is not EventKind.BACKWARD:
        return None
    grads = [w for w in trace.writes(event) if w.field is Field.GRAD]
    if not grads:
        return None
    first = grads[0]
    last = {w.node: w for w in grads}  # (a node written twice: its last write)
    label = trace.label(first.node) or f"#{first.node}"
    hidden = frozenset(last)
    if not trace.has_arrays:
        return Question(step, first.node, label, last[first.node].after, hidden,
                        before=first.before)
    answer, index = array_answer(trace, first, last[first.node])
    if answer is None:
        return None  # (an element that was not kept: nothing to ask)
    return Question(step, first.node, label, answer, hidden, index,
                    before=grad_before(trace, first, index))


def percent(part: int, whole: int) -> int:
    """`part` of `whole` in per cent, rounded to the nearest (2 of 3: 67), halves up."""
    return (200 * part + whole) // (2 * whole)


def parse_number(text: str) -> float | None:
    """A prediction as typed: a number (1e-3, -.5, 3/4 too), else None."""
    text = text.strip().replace("−", "-")
    try:
        if "/" in text:
            top, bottom = text.split("/", 1)
            value = float(top) / float(bottom)
        else:
            value = float(text)
    except (ValueError, ZeroDivisionError):
        return None
    return value if math.isfinite(value) else None


def taken(value: float) -> bool:
    """Whether a prediction is one the quiz takes: finite, within ±MAX_ANSWER."""
    return math.isfinite(value) and abs(value) <= MAX_ANSWER


@dataclass
class Quiz:
    """One lesson's quiz: the answers of every student, and the steps revealed to all."""

    trace: Trace
    answers: dict[str, dict[int, float]] = field(default_factory=dict)  # student -> step -> value
    revealed: set[int] = field(default_factory=set)  # steps the teacher revealed for everyone
    # A student is one login (a key's fingerprint, or a login name): the name shown for
    # each, where it is not the student's own string
    names: dict[str, str] = field(default_factory=dict)

    def question(self, step: int) -> Question | None:
        return question_at(self.trace, step)

    def answer(self, student: str, step: int, value: float, name: str = "") -> bool | None:
        """`student` predicts `value` at `step`: right or wrong (None: no question
        there, or a value the quiz does not take). The first answer counts; another
        changes nothing. `name`: how the student is shown (else `student` itself)."""
        question = self.question(step)
        if question is None or not taken(value):
            return None
        if name and name != student:
            self.names.setdefault(student, name)
        given = self.answers.setdefault(student, {})
        given.setdefault(step, value)
        return question.right(given[step])

    def shows(self, student: str, step: int) -> bool:
        """Whether `student` sees the grads of `step` (answered, or revealed to all)."""
        return (step in self.revealed or step in self.answers.get(student, {})
                or self.question(step) is None)

    def reveal(self, step: int) -> None:
        self.revealed.add(step)

    def given(self, step: int) -> list[float]:
        return [by_step[step] for by_step in self.answers.values() if step in by_step]

    def share_right(self, step: int) -> tuple[int, int]:
        """(right, answered) at `step`."""
        question = self.question(step)
        given = self.given(step)
        return (sum(question.right(v) for v in given) if question else 0), len(given)

    def histogram(self, step: int, bins: int = 8) -> list[tuple[float, float, int]]:
        """The answers at `step` in `bins` equal bins: (low, high, count) each."""
        given = [v for v in self.given(step) if math.isfinite(v)]
        if not given:
            return []
        lo, hi = min(given), max(given)
        if hi == lo:
            return [(lo, hi, len(given))]
        # (halves: hi - lo of two finite floats can overflow to inf, and inf / inf is nan)
        half_span = hi / 2 - lo / 2
        counts = [0] * bins
        for value in given:
            share = (value / 2 - lo / 2) / half_span  # 0 .. 1
            counts[min(max(int(share * bins), 0), bins - 1)] += 1
        edges = [lo * (1 - i / bins) + hi * (i / bins) for i in range(bins)] + [hi]
        return [(edges[i], edges[i + 1], n) for i, n in enumerate(counts)]

    def histogram_line(self, step: int, bins: int = 8) -> str:
        """The histogram as one line of bars, with its range and the share right."""
        hist = self.histogram(step, bins)
        right, answered = self.share_right(step)
        if not hist:
            return "no answers yet"
        top = max(n for _lo, _hi, n in hist)
        bars = "".join(BARS[round(n / top * (len(BARS) - 1))] if n else " " for *_r, n in hist)
        return (f"{hist[0][0]:.3g} {bars} {hist[-1][1]:.3g} · {right}/{answered} right "
                f"({percent(right, answered)}%)")

    def scores(self) -> dict[str, tuple[int, int]]:
        """Per student: (right, answered)."""
        out = {}
        for student, by_step in self.answers.items():
            right = sum(bool(q and q.right(v)) for s, v in by_step.items()
                        for q in [self.question(s)])
            out[student] = (right, len(by_step))
        return out

    def name_of(self, student: str) -> str:
        """How `student` is shown: its name, and where another student has the same
        name, the start of its own string too (two keys with one comment, say)."""
        name = self.names.get(student, student)
        if any(other != student and self.names.get(other, other) == name
               for other in self.answers):
            return f"{name} ({student[:16]})"
        return name

    def to_csv(self) -> str:
        """student,right,answered,then one column per step asked (the prediction)."""
        steps = sorted({s for by_step in self.answers.values() for s in by_step})
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["student", "right", "answered", *(f"step {s}" for s in steps)])
        for student, (right, answered) in sorted(self.scores().items()):
            by_step = self.answers[student]
            writer.writerow([csv_safe(self.name_of(student)), right, answered,
                             *(repr(by_step[s]) if s in by_step else "" for s in steps)])
        return buffer.getvalue()


FORMULA_STARTS = ("=", "+", "-", "@")


def csv_safe(text: str) -> str:
    """A name as a CSV cell a spreadsheet does not run as a formula: one that starts
    with = + - @, after any blanks (` =1+1` is one too), or with a tab or a return."""
    risky = text.lstrip()[:1] in FORMULA_STARTS or text[:1] in ("\t", "\r")
    return "'" + text if risky else text


def class_csv(quizzes: dict[str, Quiz]) -> str:
    """Every student's score in every lesson quizzed: lesson, student, right, answered."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["lesson", "student", "right", "answered"])
    for lesson, quiz in quizzes.items():
        rows = sorted((quiz.name_of(student), score) for student, score in quiz.scores().items())
        for student, (right, answered) in rows:
            writer.writerow([csv_safe(lesson), csv_safe(student), right, answered])
    return buffer.getvalue()


@dataclass
class SelfStudy:
    """Quiz mode for one student alone (`mgtui FILE --quiz`): the same questions, asked
    of `student`; the steps asked are remembered, so the score at the end says how many
    were passed without an answer."""

    quiz: Quiz
    student: str = "you"
    furthest: int = 0  # the furthest step the student has been at (the questions passed)

    @classmethod
    def of(cls, trace: Trace) -> SelfStudy:
        return cls(Quiz(trace))

    def asking(self, step: int) -> Question | None:
        """The question at `step` the student has not answered yet (None: nothing asked)."""
        question = self.quiz.question(step)
        if question is None or self.quiz.shows(self.student, step):
            return None
        return question

    def hidden(self, step: int) -> frozenset[int]:
        """The nodes whose grads `step` hides until the student answers."""
        question = self.asking(step)
        return question.hidden if question is not None else frozenset()

    def visit(self, step: int) -> None:
        self.furthest = max(self.furthest, step)

    def passed(self) -> int:
        """The questions up to the furthest step reached that were not answered."""
        given = self.quiz.answers.get(self.student, {})
        return sum(1 for step in range(1, self.furthest + 1)
                   if step not in given and self.quiz.question(step) is not None)

    def answer(self, step: int, value: float) -> str | None:
        """The student predicts `value` at `step`: the verdict (None: nothing asked there,
        or answered already)."""
        question = self.asking(step)
        if question is None:
            return None
        right = self.quiz.answer(self.student, step, value)
        return verdict(question, value, bool(right))

    def line(self, step: int, total: int) -> str:
        """What the quiz says at `step`: the question, the verdict of the answer given
        there, and at the last step the score."""
        question = self.asking(step)
        if question is not None:
            return f"quiz: {question.prompt} — press a to answer"
        given = self.quiz.answers.get(self.student, {})
        parts = []
        if step in given:
            asked = self.quiz.question(step)
            parts.append(verdict(asked, given[step], asked.right(given[step])))
        if step >= total:
            parts.append(self.score())
        return " · ".join(parts)

    def score(self) -> str:
        """`quiz score: 3 of 4 right (75%) · 2 steps passed without an answer`."""
        right, answered = self.quiz.scores().get(self.student, (0, 0))
        skipped = self.passed()
        if not answered:
            text = "quiz score: no answers given"
        else:
            text = f"quiz score: {right} of {answered} right ({percent(right, answered)}%)"
        if skipped:
            text += (f" · {skipped} step{'s' if skipped != 1 else ''} passed without an "
                     "answer")
        return text


def verdict(question: Question, value: float, right: bool) -> str:
    return (f"quiz: you said {value:.4g}: {'right ✓' if right else 'wrong ✗'} "
            f"({question.what} = {question.answer:.4g})")
