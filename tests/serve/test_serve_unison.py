"""Students who follow the teacher and show the same thing are drawn once a worker
(mgtui/serve/unison.py): one of them, the group's leader, draws the step; the others'
apps sleep, and each of their terminals gets the cells that differ from what it shows. Real asyncssh clients on
an in-process server; their screens read through pyte, colours and attributes too.

What a grouped student sees must be what they would have seen alone (the same class,
with grouping off, MGTUI_UNISON=0); a key wakes that student only, on the class's step
and look; a leader that leaves hands over; a resize wakes too; quiz mode (hidden grads
are a student's own) wakes everyone."""

from __future__ import annotations

import asyncio

import pytest

asyncssh = pytest.importorskip("asyncssh")
pytest.importorskip("pyte")

from mgtui.serve.auth import Auth, host_key  # noqa: E402
from mgtui.serve.server import Class, Limits, start_server  # noqa: E402
from sshclient import ScreenClient  # noqa: E402
from tests.serve.test_serve import PASSWORD, at_step, keys, lessons, step_of  # noqa: E402,F401
from tests.serve.test_serve_quiz import grad_of  # noqa: E402

TABLE = "id label op"  # the node table's heading: not on screen while the Graph pane is
TOAST = "Following the teacher"  # a student's notice, for 5 s after joining


async def start(lessons, keys, monkeypatch, unison: bool):
    monkeypatch.setenv("MGTUI_UNISON", "1" if unison else "0")
    auth = Auth.from_files(keys["dir"] / "students", keys["dir"] / "teachers",
                           keys["dir"] / "password")
    klass = Class(lessons, auth, Limits(max_sessions=12))
    assert (klass.unison is not None) == unison
    return await start_server(klass, "127.0.0.1", 0, host_key(keys["dir"] / "state"))


async def connect(srv, clients: list, size=(80, 24), **options) -> ScreenClient:
    client = await ScreenClient.connect(srv.port, size=size, **options)
    clients.append(client)
    assert await client.wait_for(lambda t: "step " in t or "pick a" in t, 15), client.text()
    if "pick a" in client.text():
        client.send("\r")
    assert await client.wait_for(lambda t: "step " in t and "pick a" not in t, 15)
    return client


def cells(client: ScreenClient) -> list:
    """Every cell of the client's screen as a person sees it: its character, colours
    and attributes (of a blank, what shows: its background, and lines or reversal)."""
    client.text()
    screen = client.screen
    return [[seen(screen.buffer[y][x]) for x in range(screen.columns)]
            for y in range(screen.lines)]


def seen(c) -> tuple:
    if c.data == " " and not (c.reverse or c.underscore or c.strikethrough):
        return (" ", c.bg)
    return (c.data, c.fg, c.bg, c.bold, c.italics, c.underscore, c.reverse, c.strikethrough)


async def settled(clients: list, step: int, test=None) -> None:
    """Every client shows `step` (and `test` holds), and nothing more comes for a moment."""
    for client in clients:
        assert step is None or await at_step(client, step), client.text()
        if test is not None:
            assert await client.wait_for(test), client.text()
        # (the key footer too: Textual composes it again after a step, blank meanwhile)
        assert await client.wait_for(lambda t: t.splitlines()[-1].strip()), client.text()
    while True:
        before = [c.received for c in clients]
        await asyncio.sleep(0.4)
        if [c.received for c in clients] == before:
            return


async def drawn(srv) -> None:
    """Every group's leader has a whole screen drawn (10 s at most)."""
    for _ in range(200):
        if all(g.complete() for g in srv.klass.unison.groups.values()):
            return
        await asyncio.sleep(0.05)


def members(srv) -> list[int]:
    """The size of each group (its leader and those it draws for)."""
    return sorted(1 + len(g.members) for g in srv.klass.unison.groups.values())


def asleep(srv) -> list[str]:
    """The students whose group's leader draws for them."""
    return sorted(s.user for s in srv.klass.sessions if s.app is not None and s.app.membership.asleep)


async def a_class(lessons, keys, monkeypatch, unison: bool) -> tuple[list, list]:
    """A teacher, three students at 80x24 and two at 100x30 (one group each, with
    grouping), through steps with the node table, the Graph pane, a pan-free turn of
    it, and the notes; every student's cells after each step, and the groups' sizes."""
    srv = await start(lessons, keys, monkeypatch, unison)
    clients: list[ScreenClient] = []
    shots, groups = [], []
    try:
        teacher = await connect(srv, clients, key=keys["teacher"], user="teacher")
        students = [await connect(srv, clients, password=PASSWORD, user=f"s{k}",
                                  size=(80, 24) if k < 3 else (100, 30)) for k in range(5)]
        for student in students:  # (a screen with it is not the group's; it lasts 5 s)
            assert await student.wait_for(lambda t: TOAST not in t, 30), student.text()
        keys_steps = [("n", 1, None), ("n", 2, None), ("n", 3, None),
                      ("m", 3, lambda t: TABLE not in t), ("n", 4, lambda t: TABLE not in t),
                      ("N", None, lambda t: "Notes · " in t), ("N", 4, lambda t: TABLE not in t),
                      ("m", 4, lambda t: TABLE in t), ("n", 5, None)]
        for key, step, test in keys_steps:
            teacher.send(key)
            await settled(students, step, test)
            if unison:
                await drawn(srv)
            shots.append([cells(s) for s in students])
            groups.append(members(srv) if unison else [])
    finally:
        for client in clients:
            await client.close()
        await srv.close()
    return shots, groups


async def test_grouped_students_see_what_they_would_have_drawn_alone(lessons, keys, clean_env,
                                                                     monkeypatch):
    alone, _ = await a_class(lessons, keys, monkeypatch, unison=False)
    grouped, groups = await a_class(lessons, keys, monkeypatch, unison=True)
    # after the first step drawn by each (the groups start then, and draw it too),
    # every student of a size is in its group: sizes differ, groups differ
    assert groups[-1] == [2, 3], groups
    assert all(g == [2, 3] for g in groups[1:]), groups
    for k, (a, g) in enumerate(zip(alone, grouped)):
        for student, (mine, theirs) in enumerate(zip(a, g)):
            assert mine == theirs, f"step {k}, student {student}: the screens differ:\n" + \
                "\n".join(f"row {y}: {''.join(c[0] for c in a)!r}\n    vs {''.join(c[0] for c in b)!r}"
                          f"{[(x, a[x], b[x]) for x in range(len(a)) if a[x] != b[x]][:3]}"
                          for y, (a, b) in enumerate(zip(mine, theirs)) if a != b)


def app_of(srv, user: str):
    return next(s.app for s in srv.klass.sessions if s.app is not None and s.user == user)


async def grouped_class(srv, keys, clients: list, n: int, size=(80, 24)) -> tuple:
    """A teacher and `n` students of one size, all in one group, on step 3 with the
    Graph pane open."""
    teacher = await connect(srv, clients, key=keys["teacher"], user="teacher")
    students = [await connect(srv, clients, password=PASSWORD, user=f"s{k}", size=size)
                for k in range(n)]
    for student in students:  # (its notice lasts 5 s: at a load of 8, 10 s were too few)
        assert await student.wait_for(lambda t: TOAST not in t, 30), student.text()
    for key, step, test in [("n", 1, None), ("n", 2, None), ("m", 2, lambda t: TABLE not in t),
                            ("n", 3, lambda t: TABLE not in t)]:
        teacher.send(key)
        await settled(students, step, test)
        await drawn(srv)
    assert members(srv) == [n]
    return teacher, students


async def test_a_key_wakes_only_its_student_where_the_group_is(lessons, keys, clean_env,
                                                              monkeypatch):
    srv = await start(lessons, keys, monkeypatch, unison=True)
    clients: list[ScreenClient] = []
    try:
        teacher, students = await grouped_class(srv, keys, clients, 3)
        teacher.send("nn")  # (two apps sleep: the leader's draws steps 4 and 5)
        await settled(students, 5, lambda t: TABLE not in t)
        by_user = dict(zip(("s0", "s1", "s2"), students))
        sleepers = asleep(srv)
        assert len(sleepers) == 2, sleepers
        leader = next(u for u in by_user if u not in sleepers)
        ada, bob = by_user[sleepers[0]], by_user[sleepers[1]]
        assert app_of(srv, sleepers[0]).debugger.session.position.step < 5  # not stepped
        ada.send("p")  # woken: first where the class is (step 5, the pane open), then p
        assert await at_step(ada, 4) and await ada.wait_for("following paused"), ada.text()
        assert TABLE not in ada.text()  # the teacher's look came before the key
        woken = app_of(srv, sleepers[0])
        assert woken.membership.group is None and woken.debugger.session.position.step == 4
        assert woken.debugger.graph_shown
        assert members(srv) == [2] and asleep(srv) == [sleepers[1]]
        teacher.send("n")
        await settled([bob, by_user[leader]], 6)
        assert step_of(ada) == 4 and "teacher at step 6" in ada.text()
        # the leader leaves (its own move): bob leads, and is drawn for by nobody
        by_user[leader].send("p")
        assert await at_step(by_user[leader], 5), by_user[leader].text()
        teacher.send("n")
        await settled([bob], 7, lambda t: TABLE not in t)
        assert app_of(srv, sleepers[1]).debugger.session.position.step == 7  # awake, leads
        assert asleep(srv) == []
        ada.send("f")  # follows again, drawing for itself, and joins at a later step
        by_user[leader].send("f")
        assert await at_step(ada, 7) and await at_step(by_user[leader], 7)
        for step in (8, 9):
            teacher.send("n")
            await settled(students, step)
        assert members(srv) == [3] and len(asleep(srv)) == 2
        assert cells(ada) == cells(bob) == cells(by_user[leader])
    finally:
        for client in clients:
            await client.close()
        await srv.close()


async def test_a_resize_wakes_its_student_at_the_new_size(lessons, keys, clean_env,
                                                         monkeypatch):
    srv = await start(lessons, keys, monkeypatch, unison=True)
    clients: list[ScreenClient] = []
    try:
        teacher, (ada, bob) = await grouped_class(srv, keys, clients, 2)
        teacher.send("n")
        await settled([ada, bob], 4)
        ada.resize(100, 30)
        # (the header's right end, drawn again at the new width)
        assert await ada.wait_for(lambda t: t.splitlines()[0][80:].rstrip().endswith(
            "step 4/15")), ada.text()
        assert app_of(srv, "s0").membership.group is None and members(srv) == [1]
        assert app_of(srv, "s0").size == (100, 30) and asleep(srv) == []
        teacher.send("n")  # each follows: bob drawn by the group, ada by herself
        await settled([ada, bob], 5)
        assert TABLE not in ada.text() and TABLE not in bob.text()
    finally:
        for client in clients:
            await client.close()
        await srv.close()


async def test_quiz_mode_wakes_everyone_and_hidden_grads_stay_each_ones(lessons, keys,
                                                                       clean_env, monkeypatch):
    from tests.serve.test_serve_quiz import PROMPT, answer

    srv = await start(lessons, keys, monkeypatch, unison=True)
    clients: list[ScreenClient] = []
    try:
        teacher, (ada, bob, cy) = await grouped_class(srv, keys, clients, 3, size=(120, 34))
        teacher.send("m")  # (the node table: the grads are read there)
        await settled([ada, bob, cy], 3, lambda t: TABLE in t)
        assert members(srv) == [3]
        teacher.send("Q")
        assert await teacher.wait_for("quiz on (Q stops it)"), teacher.text()
        teacher.send("n" * 6)
        await settled([ada, bob, cy], 9, lambda t: PROMPT in t)
        assert asleep(srv) == []
        assert grad_of(ada, "d") == grad_of(bob, "d") == grad_of(cy, "d") == "?"
        await answer(ada, "-2")
        assert await ada.wait_for("right ✓"), ada.text()
        assert await ada.wait_for(lambda _: grad_of(ada, "d") == "-2.0"), ada.text()
        await asyncio.sleep(0.5)
        assert grad_of(bob, "d") == grad_of(cy, "d") == "?"  # bob's and cy's own
        teacher.send("n")  # nobody joins a group while the quiz is on
        await settled([ada, bob, cy], 10)
        assert asleep(srv) == []
    finally:
        for client in clients:
            await client.close()
        await srv.close()


async def test_students_join_their_group_once_their_notice_has_gone(lessons, keys, clean_env,
                                                                   monkeypatch):
    """Not only at the teacher's next step: the first step after a class has come in is
    drawn once a worker too (each student's 5 s notice kept it out of the group)."""
    srv = await start(lessons, keys, monkeypatch, unison=True)
    clients: list[ScreenClient] = []
    try:
        teacher = await connect(srv, clients, key=keys["teacher"], user="teacher")
        teacher.send("n")
        students = []
        for k in range(3):
            students.append(await connect(srv, clients, password=PASSWORD, user=f"s{k}"))
            assert await students[-1].wait_for(TOAST), students[-1].text()  # (each sees it)
        await settled(students, 1)
        for student in students:
            assert await student.wait_for(lambda t: TOAST not in t, 30), student.text()
        for _ in range(100):  # no key from the teacher meanwhile
            if members(srv) == [3]:
                break
            await asyncio.sleep(0.1)
        assert members(srv) == [3] and len(asleep(srv)) == 2
        before = [cells(s) for s in students]
        assert before[0] == before[1] == before[2]
        teacher.send("n")  # drawn by one, shown to all three alike
        await settled(students, 2)
        after = [cells(s) for s in students]
        assert after[0] == after[1] == after[2] != before[0]
        assert members(srv) == [3]
    finally:
        for client in clients:
            await client.close()
        await srv.close()


async def test_a_students_join_notice_goes_with_the_teachers_step(lessons, keys, clean_env,
                                                                  monkeypatch):
    """Up for NOTICE_READ seconds, a student's "Following the teacher" goes at the
    teacher's next step, and the student joins its group at that step: the group's frame
    is drawn over the notice (left for its 5 s, every student who had just come in drew
    the class's first steps alone, the class's slowest). A notice younger than that
    stays through a step."""
    from mgtui.serve import app, unison

    monkeypatch.setattr(unison, "NOTICE_READ", 1.0)
    monkeypatch.setattr(app, "JOINED_FOR", 2.0)  # (the first student's: gone by itself)
    srv = await start(lessons, keys, monkeypatch, unison=True)
    clients: list[ScreenClient] = []
    try:
        teacher = await connect(srv, clients, key=keys["teacher"], user="teacher")
        first = await connect(srv, clients, password=PASSWORD, user="first")
        assert await first.wait_for(lambda t: TOAST not in t, 30), first.text()
        monkeypatch.setattr(app, "JOINED_FOR", 120.0)  # (the others': up till a step)
        for _ in range(100):  # (its notice gone, it leads a group of its own)
            if members(srv) == [1]:
                break
            await asyncio.sleep(0.1)
        assert members(srv) == [1]
        students = [first]
        for k in range(2):
            students.append(await connect(srv, clients, password=PASSWORD, user=f"s{k}"))
            assert await students[-1].wait_for(TOAST), students[-1].text()
        await asyncio.sleep(1.5)  # (up NOTICE_READ seconds, and not yet its 5)
        assert all(TOAST in s.text() for s in students[1:]), students[-1].text()
        teacher.send("n")
        await settled(students, 1)
        await drawn(srv)
        assert members(srv) == [3] and asleep(srv) == ["s0", "s1"]
        for user in ("s0", "s1"):  # joined at this step, not after drawing it alone
            assert app_of(srv, user).debugger.session.step == 0
        shots = [cells(s) for s in students]
        assert shots[0] == shots[1] == shots[2]  # (the notices drawn over)
        assert TOAST not in students[1].text(), students[1].text()

        monkeypatch.setattr(unison, "NOTICE_READ", 60.0)  # (a notice just raised)
        late = await connect(srv, clients, password=PASSWORD, user="late")
        assert await late.wait_for(TOAST), late.text()
        teacher.send("n")
        await settled([*students, late], 2)
        assert TOAST in late.text(), late.text()
        assert "late" not in asleep(srv)
    finally:
        for client in clients:
            await client.close()
        await srv.close()


@pytest.fixture(scope="module")
def mlp_lesson():
    """mlp: a graph too big to draw whole, laid out around each step's node."""
    from tests.serve.test_serve import ROOT, record_lesson

    return {"mlp.py": record_lesson(ROOT / "scenarios" / "mlp.py", "mlp.py")}


async def test_the_next_steps_graph_is_laid_out_in_the_quiet_after_a_step(mlp_lesson, keys,
                                                                         clean_env,
                                                                         monkeypatch):
    """(mgtui/serve/server.py, `lay_out_ahead`: the teacher's `n` finds it made.)"""
    from mgtui.graph.layout import shared_model

    srv = await start(mlp_lesson, keys, monkeypatch, unison=True)
    clients: list[ScreenClient] = []
    try:
        teacher = await connect(srv, clients, key=keys["teacher"], user="teacher")
        student = await connect(srv, clients, password=PASSWORD, user="s0")
        teacher.send("nnm")
        await settled([student], 2, lambda t: TABLE not in t)
        app = app_of(srv, "s0")
        session, pane = app.debugger.session, app.debugger.query_one("GraphPane")
        view = session.state.view
        model = shared_model(view.trace, [*view.used, *view.made])
        model._pictures.clear()  # (whatever this process laid out before)
        teacher.send("n")
        await settled([student], 3, lambda t: TABLE not in t)
        next_view, node = session.next_centre()
        assert node is not None and node != session.state.node
        model = shared_model(next_view.trace, [*next_view.used, *next_view.made])
        assert not model.whole
        for _ in range(100):  # (the quiet after the step: 1 s at most, on a busy machine)
            laid_out = [key for key in model._pictures if key[0] == node]  # (before asking)
            if laid_out:
                break
            await asyncio.sleep(0.05)
        orientation, compact = pane._best_form(model, node)
        assert (node, orientation, int(compact)) in laid_out, (node, list(model._pictures))
    finally:
        for client in clients:
            await client.close()
        await srv.close()


CHAIN, NEURON = "The chain rule on a tiny expression", "One neuron with a tanh activation"


async def test_the_lesson_switch_with_grouping_on_two_students(lessons, keys, clean_env,
                                                              monkeypatch):
    """The teacher opens lesson 1, steps, opens lesson 2 with `o` and steps: two
    students of one size, one drawn for by the other, are both on lesson 2, and stay
    there when the one asleep wakes (a key: `f`, or quiz mode). A member's app slept
    through the switch on lesson 1's trace; told only that it was on lesson 2, it
    woke onto lesson 1 at the teacher's step, and `f` left it there."""
    srv = await start(lessons, keys, monkeypatch, unison=True)
    clients: list[ScreenClient] = []
    try:
        teacher = await connect(srv, clients, key=keys["teacher"], user="teacher",
                                size=(120, 40))
        students = [await connect(srv, clients, password=PASSWORD, user=f"s{k}",
                                  size=(100, 30)) for k in range(2)]
        for student in students:
            assert await student.wait_for(lambda t: TOAST not in t, 30), student.text()
        for step in (1, 2):
            teacher.send("n")
            await settled(students, step, lambda t: CHAIN in t)
            await drawn(srv)
        assert members(srv) == [2] and len(asleep(srv)) == 1
        sleeper = asleep(srv)[0]
        teacher.send("o")  # the picker: the second lesson
        assert await teacher.wait_for("pick a scenario"), teacher.text()
        teacher.send("\x1b[B")
        await asyncio.sleep(0.3)
        teacher.send("\r")
        assert await teacher.wait_for(lambda t: NEURON in t and step_of(teacher) == 0)
        for step in (1, 2):
            teacher.send("n")
            assert await at_step(teacher, step), teacher.text()
            await settled(students, step, lambda t: NEURON in t and CHAIN not in t)
        by_user = dict(zip(("s0", "s1"), students))
        by_user[sleeper].send("f")  # woken: where the class is, then `f` (following)
        await asyncio.sleep(1)
        await settled(students, 2, lambda t: NEURON in t and CHAIN not in t)
        teacher.send("Q")  # quiz mode: each draws for itself (their hidden grads)
        assert await teacher.wait_for("quiz on (Q stops it)"), teacher.text()
        teacher.send("n")
        await settled(students, 3, lambda t: NEURON in t and CHAIN not in t)
        assert asleep(srv) == []
        for user in ("s0", "s1"):
            app = app_of(srv, user)
            assert app.debugger.trace is lessons["neuron.py"].trace, by_user[user].text()
            assert app.lesson == "neuron.py" and app.follower.following
        teacher.send("Q")  # (quiz off) and a student opens lesson 1 on their own: paused
        assert await teacher.wait_for(lambda t: "quiz on" not in t), teacher.text()
        ada = by_user["s0"]
        ada.send("o")
        assert await ada.wait_for("pick a scenario"), ada.text()
        ada.send("\r")  # (chain.py, the first)
        assert await ada.wait_for(lambda t: CHAIN in t and "following paused" in t), ada.text()
        teacher.send("n")
        assert await at_step(teacher, 4), teacher.text()
        ada.send("f")  # the teacher's lesson and step at once
        assert await ada.wait_for(lambda t: NEURON in t and CHAIN not in t
                                  and step_of(ada) == 4 and "paused" not in t), ada.text()
    finally:
        for client in clients:
            await client.close()
        await srv.close()
