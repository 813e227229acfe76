"""A scenario whose file name is not UTF-8 (issue 22 item 14): it gave a traceback and
"ended its process with os._exit(1)", and in a lesson directory it stopped the class
server from starting. Now it records, its name shows with the odd bytes made visible
(`mgtui.safe` writes each byte as `\\xNN`, as Python writes bytes), a saved trace
keeps the name, and the server serves it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mgtui.trace.export import load
from mgtui.run.lessons import lessons_in, record_lesson
from mgtui.safe import inert

from tests.conftest import ROOT, SCENARIOS

NAME = b"bad\xff.py"


@pytest.fixture
def odd_scenario(tmp_path) -> Path:
    """chain.py, in a directory of its own, under a name that is not UTF-8."""
    folder = tmp_path / "lessons"
    folder.mkdir()
    path = os.path.join(os.fsencode(folder), NAME)
    with open(path, "wb") as f:
        f.write((SCENARIOS / "chain.py").read_bytes())
    return Path(os.fsdecode(path))


def mgtui(*args) -> subprocess.CompletedProcess:
    args = [a if isinstance(a, bytes) else os.fsencode(str(a)) for a in args]
    return subprocess.run([sys.executable, "-m", "mgtui.cli", *args], cwd=ROOT,
                          capture_output=True, timeout=120)


def test_it_records_and_prints_with_its_name_made_visible(odd_scenario):
    result = mgtui(os.fsencode(odd_scenario), "--print")
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    out = result.stdout.decode("utf-8")  # (all of it UTF-8: no byte of the name raw)
    assert f"{inert(str(odd_scenario))}: 7 nodes," in out.replace("\n", "")  # (wrapped)
    assert "bad\\xff.py" in out


def test_a_saved_trace_keeps_the_name_as_shown_and_reads_back(odd_scenario, tmp_path):
    saved = tmp_path / "odd.mgtrace"
    result = mgtui(os.fsencode(odd_scenario), "--save", saved, "--export", "json")
    assert result.returncode == 0, result.stderr
    shown = inert(str(odd_scenario))  # (a trace's text is made inert as it is built)
    assert shown.endswith("bad\\xff.py")
    assert json.loads(result.stdout)["scenario"] == shown
    trace = load(saved)
    assert trace.scenario == shown and len(trace) == 15


def test_a_lesson_directory_lists_and_records_it(odd_scenario):
    (found,) = lessons_in(odd_scenario.parent)
    assert found.name == os.fsdecode(NAME) and found.path == odd_scenario
    lesson = record_lesson(found.path, found.name)
    assert lesson.message == "" and len(lesson.trace) == 15
    assert lesson.title == "The chain rule on a tiny expression"


def test_the_class_server_serves_it(odd_scenario, tmp_path, clean_env):
    """Recorded when the server starts, and a student connecting over SSH steps it."""
    pytest.importorskip("asyncssh")
    pytest.importorskip("pyte")
    from mgtui.serve.auth import Auth, host_key
    from sshclient import ScreenClient
    from mgtui.serve.server import Class, Limits, start_server

    lessons = {f.name: record_lesson(f.path, f.name) for f in lessons_in(odd_scenario.parent)}
    password = tmp_path / "password"
    password.write_text("correct horse\n")
    password.chmod(0o600)

    async def student_sees() -> str:
        klass = Class(lessons, Auth.from_files(None, None, password), Limits(max_sessions=2))
        server = await start_server(klass, "127.0.0.1", 0, host_key(tmp_path / "state"))
        client = await ScreenClient.connect(server.port, password="correct horse")
        try:
            await client.wait_for(lambda t: "step 0/15" in t, 15)
            client.send("n")
            await client.wait_for(lambda t: "step 1/15" in t, 15)
            return client.text()
        finally:
            await client.close()
            await server.close()

    try:
        screen = asyncio.run(student_sees())
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__  # (the app redirected them)
    assert "The chain rule on a tiny expression" in screen and "step 1/15" in screen
