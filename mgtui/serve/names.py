"""Names on the teacher's roster come from clients (an SSH login name, a key's comment),
so a student can pick one that passes for another student's or for the teacher's.
`marks` says which: a name two logins share, one login in several sessions, and a
student's name that reads as a teacher's (the teacher's own, or `prof`, `teacher` …).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Callable, Sequence

from mgtui.serve.limits import SHARED_NAMES
from mgtui.session.follow import Classroom, Member

# names that read as the one teaching, whatever the case, spaces and punctuation
TEACHERLY = frozenset({"teacher", "prof", "professor", "instructor", "lecturer", "tutor",
                       "ta", "admin", "administrator", "root", "staff", "mgtui", "server",
                       "host"})


def folded(name: str) -> str:
    """A name as compared: its compatibility form, case-folded, letters and digits only
    (`Prof.`, `ＰＲＯＦ` and `p r o f` are all `prof`)."""
    text = unicodedata.normalize("NFKC", name).casefold()
    return "".join(ch for ch in text if ch.isalnum())


def marks(members: Sequence[Member], teachers: Sequence[str] = ()) -> list[str]:
    """For each of `members` (in order), what the roster says of its name ("" if
    nothing): `teachers` are the names of the class's teachers."""
    logins: dict[str, set[str]] = {}  # (a name a class shares, `class`, is nobody's)
    sessions = Counter(m.identity for m in members if m.identity)
    for m in members:
        if m.identity or m.teacher:
            logins.setdefault(folded(m.name), set()).add(m.identity or f"#{id(m)}")
    teacherly = TEACHERLY | {folded(t) for t in teachers
                             if folded(t) and folded(t) not in SHARED_NAMES}
    out = []
    for m in members:
        name = folded(m.name)
        said = []
        if not m.teacher and (name in teacherly or not name):
            said.append("not a teacher" if name else "no name")
        if len(logins.get(name, ())) > 1 and (m.identity or m.teacher):
            said.append("name shared by another login")
        if m.identity and sessions[m.identity] > 1:
            said.append(f"{sessions[m.identity]} sessions of one login")
        out.append(" · ".join(said))
    return out


def roster_rows(classroom: Classroom, quiz_of: Callable[[Member], str]
                ) -> list[tuple[str, ...]]:
    """The teacher's roster: (name, state, lesson, step, quiz, note) per student, the
    note `marks`'s (a name that passes for another's or the teacher's)."""
    members = classroom.roster()
    leader = classroom.leader()
    teachers = [m.name for m in members if m.teacher] + ([leader.name] if leader else [])
    rows = []
    for member, note in zip(members, marks(members, teachers)):
        state = ("gone" if member.gone else "watching (teacher)" if member.teacher
                 else "following" if member.following else "paused")
        rows.append((member.name, state, member.lesson, str(member.step), quiz_of(member),
                     note))
    return rows
