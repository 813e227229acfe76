"""Handouts (issue 35 point 7): `--print` carries the lesson's own notes, a line too long
for the width goes on indented under its start (on a terminal of any width), `--pass N`
and `--steps A:B` print part of a lesson, `-o FILE` writes it to a file, and
`--export html` takes the same range. The chain lesson's figures: dL/dd = f = -2,
dL/df = d = 4, dL/de = dL/dc = -2."""

from __future__ import annotations

import base64
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from mgtui.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent.parent
SCENARIOS = ROOT / "scenarios"
LONG_NOTE = ("a product: backward, each input gets the other input times e.grad; " * 5).strip()


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def on_terminal(args: list[str], columns: int) -> str:
    """What `mgtui ARGS` prints on a terminal COLUMNS wide."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "mgtui.cli", *args], stdout=follower,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env,
                            cwd=ROOT)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # (the terminal closed: the command is done)
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.fixture
def noted(tmp_path):
    path = tmp_path / "noted.py"
    path.write_text(f'''"""A lesson of our own

Its own notes: the docstring after the title, which a handout must carry.
"""
from engine import Value

a = Value(2.0, label='a')
b = Value(-3.0, label='b')
e = a*b; e.label = 'e'  #: {LONG_NOTE}
e.backward()
''', encoding="utf-8")
    return path


def test_print_carries_the_lessons_own_notes(capsys):
    code, out, _ = run(capsys, "chain", "--print")
    assert code == 0
    notes_at = out.index("Each step only needs its own local derivative")
    assert out.index("The first graph of the lecture") < notes_at < out.index("Pass 1/2")
    # a list item's lines go on under its text, not at column 0
    lines = out.splitlines()
    item = next(k for k, line in enumerate(lines) if line.startswith("- **`L = d * f`**"))
    assert lines[item + 1].startswith("  ") and lines[item + 1].strip(), lines[item:item + 2]


@pytest.mark.parametrize("columns", [60, 200])
def test_a_long_note_goes_on_under_its_start_at_any_width(noted, columns):
    out = on_terminal([str(noted), "--print"], columns)
    lines = out.splitlines()
    starts = [k for k, line in enumerate(lines) if "✎ a product" in line]
    assert len(starts) == 2, out  # e made (step 3), e's _backward (step 5)
    for k in starts:
        column = lines[k].index("✎") + 2
        follow = []
        for line in lines[k + 1:]:
            if line[:column].strip() or not line.strip():
                break
            follow.append(line)
        text = " ".join([lines[k][column:].strip()] + [line.strip() for line in follow])
        assert text == LONG_NOTE, (columns, lines[k:k + 6])
        assert follow and all(len(line) <= columns for line in [lines[k], *follow])
        assert all(line[column] != " " for line in follow)  # under the note's first word


def step_numbers(out: str) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(r"^  step +(\d+)  ", out, re.M)]


def test_a_pass_or_a_range_of_steps_is_printed_alone(capsys):
    code, out, _ = run(capsys, "chain", "--print", "--pass", "2")
    assert code == 0 and "Pass 1/2" not in out and "Pass 2/2: backward, steps 8–15" in out
    assert step_numbers(out) == list(range(8, 16))
    code, out, _ = run(capsys, "chain", "--print", "--steps", "9:11")
    assert code == 0 and step_numbers(out) == [9, 10, 11] and "steps 9–11 of 15" in out
    # the nodes these steps touch, as they are after step 11: the lecture's grads
    table = out[out.index("Nodes of these steps, after step 11 (5)"):]
    rows = {cells[2]: cells[4:6] for cells in
            (line.split("│") for line in table.splitlines()) if len(cells) > 6}
    rows = {label.strip(): [v.strip() for v in values] for label, values in rows.items()}
    assert rows == {"c": ["10.0", "-2.0"], "e": ["-6.0", "-2.0"], "d": ["4.0", "-2.0"],
                    "f": ["-2.0", "4.0"], "L": ["-8.0", "1.0"]}
    code, out, _ = run(capsys, "chain", "--print", "--pass", "2", "--steps", ":9")
    assert code == 0 and step_numbers(out) == [8, 9]
    code, out, _ = run(capsys, "chain", "--print", "--steps", "14:")
    assert code == 0 and step_numbers(out) == [14, 15]


@pytest.mark.parametrize("args, message", [
    (["--steps", "20:30"], "--steps: the trace has 15 steps"),
    (["--pass", "3"], "--pass 3: the trace has 2 passes"),
    (["--pass", "1", "--steps", "9:"], "no step is in both (the pass is steps 1–7)"),
])
def test_a_range_the_trace_does_not_have_is_refused(capsys, args, message):
    code, out, err = run(capsys, "chain", "--print", *args)
    assert code == 2 and out == "" and message in err, err


@pytest.mark.parametrize("args, message", [
    (["--check", "--pass", "1"], "--pass and --steps go with --print or --export html"),
    (["--export", "json", "--steps", "1:2"], "--pass and --steps go with --print or --export"),
    (["-o", "x.txt"], "-o goes with --print or --export"),
])
def test_range_and_output_options_go_with_their_modes(capsys, args, message):
    code, _out, err = run(capsys, "chain", *args)
    assert code == 2 and message in err, err


def test_bad_ranges_are_usage_errors(capsys):
    for bad in ("3:1", "0:4", "a:b", "-2"):
        with pytest.raises(SystemExit) as exit_:
            main(["chain", "--print", "--steps", bad])
        assert exit_.value.code == 2
        assert "not a range of steps" in capsys.readouterr().err


def test_output_goes_to_the_file_named(capsys, tmp_path):
    target = tmp_path / "handout.txt"
    code, out, _ = run(capsys, "chain", "--print", "--pass", "2", "-o", target)
    assert code == 0 and out == ""
    text = target.read_text(encoding="utf-8")
    assert "Pass 2/2: backward" in text and step_numbers(text) == list(range(8, 16))
    assert [p.name for p in tmp_path.iterdir()] == ["handout.txt"]  # nothing left beside it
    code, out, err = run(capsys, "chain", "--print", "-o", tmp_path / "no" / "such" / "x.txt")
    assert code == 2 and "cannot write" in err and "nothing was written there" in err


def packed_of(html: str) -> dict:
    meta = json.loads(re.search(r'id="mgtui-lesson">(.*?)</script>', html, re.S).group(1))
    return meta, json.loads(zlib.decompress(base64.b64decode(meta["packed"]), -15))


def test_the_html_export_takes_the_same_range(capsys, tmp_path):
    page = tmp_path / "chain.html"
    code, out, _ = run(capsys, "chain", "--export", "html", "--pass", "2", "--steps", "9:11",
                       "-o", page)
    assert code == 0 and out == ""
    meta, lesson = packed_of(page.read_text(encoding="utf-8"))
    assert lesson["range"] == [9, 11] and meta["title"].endswith("· steps 9–11")
    shown = [k for k, text in enumerate(lesson["detail"]) if text]
    assert shown == [9, 10, 11]
    assert "d.grad" in lesson["detail"][9]  # L's _backward: dL/dd = f
    # the page still replays every step before the range to get there
    assert len(lesson["events"]["kind"]) == 15
    _meta, whole = packed_of(run(capsys, "chain", "--export", "html")[1])
    assert "range" not in whole and all(whole["detail"])


def test_the_help_says_how_to_print_part_of_a_lesson():
    text = build_parser().format_help()
    for option in ("--pass N", "--steps A:B", "-o FILE, --output FILE"):
        assert option in text, option


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="needs Node.js to run the page's script")
@pytest.mark.parametrize("hash_, opened", [("", 9), ("#step=10", 10), ("#step=3", 9)])
def test_the_pages_script_moves_among_the_range_only(capsys, tmp_path, hash_, opened):
    code, html, _ = run(capsys, "chain", "--export", "html", "--steps", "9:11")
    assert code == 0
    meta = tmp_path / "meta.json"
    meta.write_text(re.search(r'id="mgtui-lesson">(.*?)</script>', html, re.S).group(1),
                    encoding="utf-8")
    out = subprocess.run([NODE, str(ROOT / "tests" / "page_range.js"),
                          str(ROOT / "mgtui" / "tui" / "lesson_page.js"), str(meta), hash_],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    moves = json.loads(out.stdout)
    assert moves == {"ready": "1", "first": 9, "last": 11, "opened": opened, "afterStart": 9,
                     "afterEnd": 11, "g": 9, "n": 10, "G": 11, "nAtEnd": 11}, moves
