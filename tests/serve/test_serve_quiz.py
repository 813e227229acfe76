"""Predict, then see (issue 23, item 3) over real SSH: the teacher starts quiz mode; at
a backward step the students' grads are `?` until they predict (right or wrong, the
tolerance shown); the teacher's console has the class's histogram and share right, and
reveals for everyone; a late joiner in quiz mode is asked too; the scores go to CSV
when the class ends. The chain lesson's step 9 is L's _backward: dL/dd = f = -2."""

from __future__ import annotations

import asyncio
import csv
import io
import re

import pytest

asyncssh = pytest.importorskip("asyncssh")
pytest.importorskip("pyte")

from sshclient import ScreenClient  # noqa: E402
from tests.serve.test_serve import PASSWORD, at_step, keys, lessons, server  # noqa: E402,F401

PROMPT = "quiz: predict d.grad after this step (right within ± 0.02) — press a to answer"


async def join(server, **options) -> ScreenClient:
    client = await ScreenClient.connect(server.port, size=(120, 34), **options)
    server.clients.append(client)
    assert await client.wait_for(lambda t: "step " in t or "pick a scenario" in t, 15)
    if "pick a scenario" in client.text():
        client.send("\r")
    assert await client.wait_for(lambda t: "step " in t and "pick a" not in t, 15), client.text()
    return client


def grad_of(client: ScreenClient, label: str) -> str | None:
    """The grad cell of node `label`'s row in the node table (read under its heading)."""
    lines = client.text().splitlines()
    heading = next((line for line in lines if "id label op" in line), None)
    if heading is None:
        return None
    end = heading.index(" grad") + len(" grad")
    for line in lines:
        if re.match(rf"\s*\S*\s*\d+ {re.escape(label)} ", line[:heading.index("op")]):
            return line[end - 10:end].strip()
    return None


async def answer(client: ScreenClient, text: str) -> None:
    client.send("a")
    assert await client.wait_for("Your prediction"), client.text()
    client.send(text + "\r")


async def test_predict_reveal_histogram_late_joiner_and_csv(server, keys, tmp_path):
    server.klass.quiz_scores = tmp_path / "scores.csv"
    teacher = await join(server, key=keys["teacher"], user="teacher")
    ada = await join(server, password=PASSWORD, user="ada")
    bob = await join(server, password=PASSWORD, user="bob")
    teacher.send("Q")  # quiz mode on
    assert await teacher.wait_for("quiz on (Q stops it)"), teacher.text()
    teacher.send("n" * 8)  # step 8: forward, nothing hidden
    assert await at_step(ada, 8) and PROMPT not in ada.text()
    teacher.send("n")  # step 9: L's _backward writes d.grad and f.grad
    for student in (ada, bob):
        assert await at_step(student, 9)
        assert await student.wait_for(PROMPT), student.text()
        assert grad_of(student, "d") == "?" and grad_of(student, "f") == "?", student.text()
        assert grad_of(student, "L") == "1.0"  # the seed: not this step's to predict
    assert grad_of(teacher, "d") == "-2.0"  # the teacher sees them
    await answer(ada, "[/]x")  # not a number, and never read as markup
    assert await ada.wait_for("'[/]x' is not a number"), ada.text()
    await answer(ada, "-2")
    assert await ada.wait_for("quiz: you said -2: right ✓ (d.grad = -2)"), ada.text()
    assert grad_of(ada, "d") == "-2.0" and grad_of(ada, "f") == "4.0"
    assert grad_of(bob, "d") == "?"  # bob has not answered
    await answer(bob, "4")
    assert await bob.wait_for("quiz: you said 4: wrong ✗ (d.grad = -2)"), bob.text()
    assert await teacher.wait_for("1/2 right (50%)"), teacher.text()
    assert "quiz d.grad = -2: -2 █" in teacher.text() and "█ 4" in teacher.text()
    late = await join(server, password=PASSWORD, user="late")  # joins in quiz mode
    assert await at_step(late, 9)
    assert await late.wait_for(PROMPT), late.text()
    assert grad_of(late, "d") == "?"
    teacher.send("V")  # reveal for everyone
    assert await late.wait_for(lambda t: grad_of(late, "d") == "-2.0"), late.text()
    assert PROMPT not in late.text()
    assert await teacher.wait_for("revealed")
    teacher.send("nn")  # step 11: d's _backward: e.grad and c.grad asked
    assert await at_step(bob, 11) and await bob.wait_for("predict e.grad"), bob.text()
    await answer(bob, "-2.01")  # within ± 0.02
    assert await bob.wait_for("right ✓"), bob.text()
    teacher.send("q")
    assert await teacher.wait_for("End the class?")
    teacher.send("e")
    await asyncio.wait_for(teacher.closed.wait(), 20)  # (a session that stays fails, not hangs)
    await server.close()
    rows = list(csv.reader(io.StringIO(server.klass.quiz_scores.read_text())))
    assert rows[0] == ["lesson", "student", "right", "answered"]
    scores = {row[1].split(" #")[0]: row[2:] for row in rows[1:]}
    assert scores == {"ada": ["1", "1"], "bob": ["1", "2"]}
    assert all(row[0] == "chain.py" for row in rows[1:])


async def test_the_graph_pane_hides_the_grads_asked_for_too(server, keys):
    """The teacher opens the Graph pane: a student's boxes show the grads asked as ?
    (the pane gave them away before), until they answer."""
    teacher = await join(server, key=keys["teacher"], user="teacher")
    ada = await join(server, password=PASSWORD, user="ada")
    teacher.send("Q")
    assert await teacher.wait_for("quiz on (Q stops it)"), teacher.text()
    teacher.send("m")  # the Graph pane, followed by the class
    assert await ada.wait_for(lambda t: "id label op" not in t), ada.text()
    teacher.send("n" * 9)  # step 9: L's _backward writes d.grad = -2 and f.grad = 4
    assert await at_step(ada, 9)
    assert await ada.wait_for(PROMPT), ada.text()
    d_box = re.compile(r"d │\s+4\.0 │\s+(\S+) ")  # d: data 4.0, then its grad
    f_box = re.compile(r"f │\s+-2\.0 │\s+(\S+) ")
    assert await ada.wait_for(lambda t: d_box.search(t) is not None), ada.text()
    assert d_box.search(ada.text())[1] == "?" and f_box.search(ada.text())[1] == "?"
    assert await teacher.wait_for(lambda t: (d_box.search(t) or [0, 0])[1] == "-2.0")
    await answer(ada, "-2")
    assert await ada.wait_for("right ✓"), ada.text()
    assert await ada.wait_for(lambda t: (d_box.search(t) or [0, 0])[1] == "-2.0"), ada.text()
    assert f_box.search(ada.text())[1] == "4.0"


# -- hostile answers, reconnects (issue 34, point 2; issue 35, point 3) ---------------------------



def told_bound(text: str) -> bool:
    """The notice of an answer not taken, with the bound (its toast wraps it)."""
    return all(part in text for part in ("is not taken", "answers are numbers between",
                                         "-1e+12 and 1e+12"))


async def test_huge_answers_are_refused_and_the_teachers_console_holds(server, keys, caplog):
    """1.7e308 and -1.7e308 crashed the teacher's console (the histogram's int(nan)),
    and every reconnect of the teacher crashed again. Now they are refused, with the
    bound said; answers at the bound itself are taken and drawn."""
    teacher = await join(server, key=keys["teacher"], user="teacher")
    ada = await join(server, password=PASSWORD, user="ada")
    bob = await join(server, password=PASSWORD, user="bob")
    teacher.send("Q")
    assert await teacher.wait_for("quiz on (Q stops it)"), teacher.text()
    teacher.send("n" * 9)
    for student, huge in ((ada, "1.7e308"), (bob, "-1.7e308")):
        assert await at_step(student, 9) and await student.wait_for(PROMPT), student.text()
        await answer(student, huge)
        assert await student.wait_for(told_bound), student.text()
        assert grad_of(student, "d") == "?"  # not taken: still asked
    await answer(ada, "1e12")
    await answer(bob, "-1e12")
    assert await teacher.wait_for("0/2 right (0%)"), teacher.text()
    assert "-1e+12 █" in teacher.text() and "█ 1e+12" in teacher.text()
    teacher.send("n")  # the teacher's session goes on
    assert await at_step(teacher, 10), teacher.text()


async def test_a_student_who_reconnects_cannot_answer_again(server, keys, tmp_path):
    """One identity per login (the key's fingerprint, else the login name): a student
    who drops and comes back sees their answer, is not asked again, and has one row."""
    server.klass.quiz_scores = tmp_path / "scores.csv"
    teacher = await join(server, key=keys["teacher"], user="teacher")
    teacher.send("Q")
    assert await teacher.wait_for("quiz on (Q stops it)"), teacher.text()
    teacher.send("n" * 9)
    for login in ({"password": PASSWORD, "user": "bob"}, {"key": keys["student"]}):
        first = await join(server, **login)
        assert await at_step(first, 9) and await first.wait_for(PROMPT), first.text()
        await answer(first, "4")
        assert await first.wait_for("wrong ✗"), first.text()
        await first.close()
        again = await join(server, **login)
        assert await at_step(again, 9), again.text()
        assert await again.wait_for("quiz: you said 4: wrong ✗"), again.text()
        assert PROMPT not in again.text() and grad_of(again, "d") == "-2.0"
        again.send("a")  # no second answer
        await asyncio.sleep(0.5)
        assert "Your prediction" not in again.text()
    assert await teacher.wait_for("0/2 right (0%)"), teacher.text()
    cy = await join(server, password=PASSWORD, user="cy")  # asked, has not answered
    assert await at_step(cy, 9) and await cy.wait_for(PROMPT), cy.text()
    teacher.send("R")  # one row a login: its lesson, step, following, quiz answer
    assert await teacher.wait_for("The class: 3 connected"), teacher.text()
    rows = [re.sub(r"\s+", " ", line) for line in teacher.text().splitlines()]
    for row in ("name state lesson step quiz", "bob following chain.py 9 answered",
                "class following chain.py 9 answered", "cy following chain.py 9 not answered"):
        assert any(f"│ {row} │" in line for line in rows), teacher.text()
    teacher.send("\x1b")
    assert await teacher.wait_for(lambda t: "The class:" not in t), teacher.text()
    teacher.send("q")
    assert await teacher.wait_for("End the class?")
    teacher.send("e")
    await asyncio.wait_for(teacher.closed.wait(), 20)
    await server.close()
    rows = list(csv.reader(io.StringIO(server.klass.quiz_scores.read_text())))
    assert sorted(row[1] for row in rows[1:]) == ["bob", "class"], rows
    assert all(row[2:4] == ["0", "1"] for row in rows[1:]), rows


def test_the_histogram_takes_the_largest_floats_and_the_csv_prefixes_formulas(lessons):
    """(Headless.) Answers at the ends of the float range, as another process may relay
    them, no longer overflow the histogram (int(nan)); a name that starts with blanks
    then = is a formula to a spreadsheet too; a login's name shows, not its identity."""
    from mgtui.session.quiz import MAX_ANSWER, Quiz, class_csv, csv_safe

    quiz = Quiz(lessons["chain.py"].trace)
    quiz.answers = {"a": {9: 1.7e308}, "b": {9: -1.7e308}, "c": {9: 0.0}}
    bins = quiz.histogram(9)
    assert [n for *_r, n in bins] == [1, 0, 0, 0, 1, 0, 0, 1]  # (0 starts the 5th of 8)
    assert bins[0][0] == -1.7e308 and bins[-1][1] == 1.7e308
    assert "-1.7e+308" in quiz.histogram_line(9) and "0/3 right (0%)" in quiz.histogram_line(9)
    assert quiz.answer("d", 9, 2 * MAX_ANSWER) is None and "d" not in quiz.answers
    assert quiz.answer("login bob", 9, -2.0, name="bob") is True
    assert quiz.answer("key SHA256:x", 9, 4.0, name="bob") is False  # another "bob"
    assert quiz.answer("login bob", 9, 4.0, name="bob") is True  # the first answer stays
    rows = class_csv({"chain.py": quiz}).splitlines()
    assert "chain.py,bob (key SHA256:x),0,1" in rows and "chain.py,bob (login bob),1,1" in rows
    for name in (" =1+1", "\t=1", "  -2", " @SUM(A1)", "+1"):
        assert csv_safe(name) == "'" + name
    assert csv_safe("ada = 1") == "ada = 1"


def test_names_that_pass_for_the_teacher_or_another_login_are_marked():
    from mgtui.serve.names import marks
    from mgtui.session.follow import Member

    members = [Member("prof", identity="login prof"), Member("Ms Rivera", identity="login x"),
               Member("ada", identity="key A"), Member("ada", identity="key B"),
               Member("bob", identity="login bob"), Member("bob", identity="login bob"),
               Member("Ｔeacher.", identity="login t"), Member("Ms Rivera", teacher=True),
               Member("carl", identity="login carl")]
    said = marks(members, ["Ms Rivera"])
    assert said[0] == said[6] == "not a teacher"
    assert said[1] == "not a teacher · name shared by another login"  # the teacher's name
    assert said[2] == said[3] == said[7] == "name shared by another login"
    assert said[4] == said[5] == "2 sessions of one login"
    assert said[8] == ""


@pytest.mark.parametrize("workers", ["1", "2"])
async def test_the_scores_survive_w_and_sigterm_and_never_replace_another_file(tmp_path,
                                                                               workers):
    """The gradebook survives the class: a teacher's W writes it mid-class, a SIGTERM
    to the server writes it (it wrote nothing with one process), and a scores file
    that was there before (another class's) is kept: the scores go beside it, said."""
    from sshclient import PASSWORD as SERVER_PASSWORD, ServerProcess

    earlier = tmp_path / "scores.csv"
    earlier.write_text("lesson,student,right,answered\nother class,zoe,3,3\n")
    srv = ServerProcess(tmp_path, "--workers", workers, "--quiz", "--quiz-scores",
                        str(earlier))
    fresh = tmp_path / "scores-2.csv"
    try:
        assert f"{earlier} exists (another class's scores?): this class's go to {fresh}" in \
            "".join(srv.log).replace("\n", " ")
        teacher = await srv.join(key=srv.teacher_key, user="rivera", size=(120, 34))
        assert await teacher.wait_for("step "), teacher.text()
        ada = await srv.join(password=SERVER_PASSWORD, user="ada", size=(120, 34))
        assert await ada.wait_for("step "), ada.text()
        teacher.send("n" * 9)
        assert await ada.wait_for(PROMPT, 15), ada.text()
        await answer(ada, "-2")
        assert await ada.wait_for("right ✓"), ada.text()
        assert await teacher.wait_for("1/1 right"), teacher.text()
        teacher.send("W")  # mid-class
        assert await teacher.wait_for("quiz scores written to"), teacher.text()
        assert fresh.read_text().splitlines()[1:] == ["chain.py,ada,1,1"]
        fresh.unlink()
        srv.process.terminate()  # SIGTERM
        assert await asyncio.to_thread(srv.process.wait, 30) == 0
        assert fresh.read_text().splitlines()[1:] == ["chain.py,ada,1,1"]
        assert "zoe" in earlier.read_text()  # the other class's, untouched
        assert not list(tmp_path.glob(".*.part"))
    finally:
        await srv.close()
