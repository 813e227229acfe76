"""The quiz's scores of a class, as CSV: written whole or not at all, and never over a
file that was there before the class (another class's, perhaps) without saying so."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from mgtui.session.follow import Classroom

log = logging.getLogger("mgtui.serve")


def write_quiz_scores(classroom: Classroom, path: Path | None) -> str:
    """The class's quiz scores per student as CSV to `path` (if asked for, and a quiz
    was run), whole or not at all: written beside it, then put in its place. The front
    of a class in workers writes the scores it has heard from all. Returns what was
    done, in a line (logged too)."""
    if path is None:
        return "no scores file: serve with --quiz-scores FILE to keep the quiz's scores"
    if not classroom.quizzes:
        return "no quiz has been run: no scores written"
    from mgtui.session.quiz import class_csv

    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        part.write_text(class_csv(classroom.quizzes), encoding="utf-8")
        os.replace(part, path)
    except OSError as exc:
        part.unlink(missing_ok=True)
        log.error("cannot write the quiz scores to %s: %s", path, exc)
        return f"cannot write the quiz scores to {path}: {exc.strerror or exc}"
    log.info("quiz scores written to %s", path)
    return f"quiz scores written to {path}"


def fresh_scores_path(path: Path) -> tuple[Path, str]:
    """Where this class's scores go: `path`, or where a file is there already (another
    class's, perhaps), the first free `NAME-2.csv`, `NAME-3.csv` … beside it, never
    over it. Returns it, and what to tell the teacher ("" if nothing)."""
    if not path.exists():
        return path, ""
    for n in range(2, 10_000):
        other = path.with_name(f"{path.stem}-{n}{path.suffix}")
        if not other.exists():
            return other, (f"{path} exists (another class's scores?): this class's go to "
                           f"{other}")
    return path, f"{path} and 9,998 others beside it exist: the scores will replace {path}"
