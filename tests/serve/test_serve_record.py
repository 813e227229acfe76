"""`mgtui serve --record FILE` (issue 23, item 4): the class recorded for a student who
missed it, as the students saw it, run as a user runs it (the server in its own
process, in one process and across two workers) with real asyncssh clients. The file
is asciicast v2 (checked as test_export_cast checks an exported lesson); played in a
terminal emulator, it ends on the teacher's last step with the Graph pane open and the
line the teacher sent; each step is a marker; the teacher's roster is not in it."""

from __future__ import annotations

import os

import pytest

asyncssh = pytest.importorskip("asyncssh")
pyte = pytest.importorskip("pyte")

from sshclient import PASSWORD, ServerProcess  # noqa: E402
from tests.cli.test_export_cast import read_cast  # noqa: E402
from tests.serve.test_serve_workers import at_step  # noqa: E402


@pytest.mark.parametrize("workers", ["1", "2"])
async def test_the_class_is_recorded_as_the_students_saw_it(tmp_path, workers):
    if workers != "1" and not hasattr(os, "fork"):
        pytest.skip("workers are forked")
    cast = tmp_path / "class.cast"
    server = ServerProcess(tmp_path, "--workers", workers, "--record", str(cast))
    try:
        await server.logged(f"recording the class to {cast}")
        teacher = await server.join(key=server.teacher_key, user="rivera", size=(120, 34))
        student = await server.join(password=PASSWORD, user="ada", size=(100, 30))
        assert await at_step(teacher, 0) and await at_step(student, 0)
        teacher.send("nnnn")
        assert await at_step(student, 4)
        teacher.send("m")  # the Graph pane, followed by the class (and the recording)
        assert await student.wait_for(lambda t: "id label op" not in t), student.text()
        teacher.send("!")
        assert await teacher.wait_for("One line to the class"), teacher.text()
        teacher.send("look at e\r")
        assert await student.wait_for("teacher: look at e"), student.text()
        teacher.send("q")
        assert await teacher.wait_for("End the class?"), teacher.text()
        teacher.send("e")
        await server.logged("the class's recording ended", 20)
    finally:
        await server.close()
    header, events = read_cast(cast.read_text(encoding="utf-8"))
    assert (header["width"], header["height"], header["idle_time_limit"]) == (120, 40, 2.0)
    assert header["title"] == "mgtui class: chain.py"
    markers = [data for _, code, data in events if code == "m"]
    assert markers[:5] == [f"chain.py step {n}" for n in range(5)], markers
    screen = pyte.Screen(header["width"], header["height"])
    stream = pyte.Stream(screen)
    for _, code, data in events:
        if code == "o":
            stream.feed(data)
    shown = "\n".join(screen.display)
    assert "step 4/" in shown and "teacher: look at e" in shown, shown
    assert "(*)─" in shown or "(+)─" in shown, shown  # the Graph pane, as the class had it
    assert "rivera" not in shown and "connected ·" not in shown  # no roster, no console
    assert all(at >= 0 for at, *_ in events)


async def test_an_earlier_recording_is_kept_and_the_new_name_said(tmp_path):
    """(issue 35: `--record class.cast` wrote over last week's class without a word.)"""
    cast = tmp_path / "class.cast"
    cast.write_text("last week's class\n", encoding="utf-8")
    (tmp_path / "class-2.cast").write_text("the week before\n", encoding="utf-8")
    server = ServerProcess(tmp_path, "--workers", "1", "--record", str(cast))
    try:
        await server.logged(f"{cast} is an earlier recording, kept: this class is recorded "
                            f"to {tmp_path / 'class-3.cast'}")
        await server.logged(f"recording the class to {tmp_path / 'class-3.cast'}")
        teacher = await server.join(key=server.teacher_key, user="rivera", size=(120, 34))
        assert await at_step(teacher, 0)
        teacher.send("q")
        assert await teacher.wait_for("End the class?"), teacher.text()
        teacher.send("e")
        await server.logged("the class's recording ended", 20)
    finally:
        await server.close()
    assert cast.read_text(encoding="utf-8") == "last week's class\n"
    assert (tmp_path / "class-2.cast").read_text(encoding="utf-8") == "the week before\n"
    header, _ = read_cast((tmp_path / "class-3.cast").read_text(encoding="utf-8"))
    assert header["title"] == "mgtui class: chain.py"


def test_a_recording_that_cannot_be_named_is_a_clear_message(tmp_path, monkeypatch):
    from mgtui.serve import class_cast

    monkeypatch.setattr(class_cast, "NAMES_TRIED", 3)
    for name in ("c.cast", "c-2.cast", "c-3.cast"):
        (tmp_path / name).write_text("kept\n")
    with pytest.raises(OSError, match="are taken: name another file"):
        class_cast.open_recording(tmp_path / "c.cast")
    assert all((tmp_path / n).read_text() == "kept\n" for n in ("c.cast", "c-2.cast", "c-3.cast"))
