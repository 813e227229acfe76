"""`--export cast`: the lesson as an asciicast v2 file, played back the way asciinema does
it: the file is checked against the format, and its output replayed into a terminal
emulator (pyte) of the recording's size, whose last screen must show the last step."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pyte
import pytest

from mgtui.cli import main
from mgtui.tui.export_cast import CastWriter, cast_steps, write_cast
from mgtui.run.runner import run

SCENARIOS = Path(__file__).resolve().parent.parent.parent / "scenarios"
PRIVATE_MODE = re.compile(r"\x1b\[\?(\d+)[hl]")
POINTER_SHAPE = re.compile(r"\x1b\]22;[a-z-]*\x07")

pytestmark = pytest.mark.usefixtures("clean_env")


def read_cast(text: str) -> tuple[dict, list[list]]:
    """The header and events of an asciicast v2 file, checked against the format."""
    assert "\x1b" not in text and "\x07" not in text  # control characters only as JSON escapes
    lines = text.splitlines()
    header = json.loads(lines[0])
    assert header["version"] == 2
    assert isinstance(header["width"], int) and isinstance(header["height"], int)
    assert isinstance(header.get("timestamp", 0), int)
    assert isinstance(header.get("title", ""), str)
    events = [json.loads(line) for line in lines[1:]]
    last = 0.0
    for event in events:
        at, code, data = event
        assert isinstance(at, (int, float)) and at >= last  # monotonic
        assert code in ("o", "i", "m", "r") and isinstance(data, str)
        last = at
    return header, events


def played(header: dict, events: list[list]) -> pyte.Screen:
    screen = pyte.Screen(header["width"], header["height"])
    stream = pyte.Stream(screen)
    for _, code, data in events:
        if code == "o":
            stream.feed(data)
    return screen


def grad_of(screen: pyte.Screen, label: str) -> str:
    """The grad the node table shows for `label`, read by its header's columns."""
    header = next(line for line in screen.display if " label " in line and " grad " in line)
    label_at = slice(header.index("label"), header.index(" op "))
    grad_at = slice(header.index("data") + 4, header.index("grad") + 4)
    for line in screen.display:
        if line[label_at].strip() == label:
            return line[grad_at].strip()
    raise AssertionError(f"no row for {label} in:\n" + "\n".join(screen.display))


def test_the_writer_keeps_to_the_format():
    out = io.StringIO()
    cast = CastWriter(out, 100, 30, title="a class\x1b]0;x\x07", timestamp=1_700_000_000)
    cast.output("\x1b[1;1Hhello", at=0.5)
    cast.output("late", at=0.25)  # a time that goes back is held at the last one
    cast.resize(120, 40, at=2)
    cast.marker("step 3", at=2.5)
    header, events = read_cast(out.getvalue())
    assert header["width"] == 100 and header["height"] == 30
    assert header["timestamp"] == 1_700_000_000
    assert "\x1b" not in header["title"]  # made inert: `\x1b` shown as text
    assert events == [[0.5, "o", "\x1b[1;1Hhello"], [0.5, "o", "late"], [2.0, "r", "120x40"],
                      [2.5, "m", "step 3"]]


def test_a_stream_of_output_and_times_becomes_a_cast():
    """What the class server would call with a session's output (`serve --record`)."""
    out = io.StringIO()
    write_cast(out, [(0.0, "\x1b[2Jone"), (1.5, "\x1b[1;1Htwo")], 80, 24, title="class")
    header, events = read_cast(out.getvalue())
    assert played(header, events).display[0].startswith("two")


def test_a_long_lesson_is_recorded_pass_by_pass():
    trace = run(SCENARIOS / "mlp.py").trace
    steps = cast_steps(trace)
    assert steps[0] == 1 and steps[-1] == len(trace)
    assert len(steps) == len(trace.passes) + 1  # each pass's first step, then the end
    short = run(SCENARIOS / "chain.py").trace
    assert cast_steps(short) == list(range(1, len(short) + 1))


def test_the_neuron_cast_ends_on_the_lecture_figures(capsys):
    code = main([str(SCENARIOS / "neuron.py"), "--export", "cast", "--cast-delay", "0.5"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    header, events = read_cast(out)
    assert (header["width"], header["height"]) == (80, 24)
    assert header["title"] == "One neuron with a tanh activation"
    times = sorted({at for at, _, _ in events})
    assert times == [0.5 * k for k in range(len(times))]  # a step every half second
    assert len(times) == 21 + 2  # the start, 21 steps, and the last held a while
    screen = played(header, events)
    text = "\n".join(screen.display)
    assert "step 21/21" in text
    # the lecture's neuron: x1.grad = w1 × 0.5 = -1.5, w1.grad = x1 × 0.5 = 1.0
    assert grad_of(screen, "x1") == "-1.5" and grad_of(screen, "w1") == "1.0"
    assert grad_of(screen, "x2") == "0.5" and grad_of(screen, "w2") == "0.0"
    modes = {m for _, _, data in events for m in PRIVATE_MODE.findall(data)}
    assert modes <= {"25", "2026"}  # the cursor and synchronized output: nothing left on


def test_scenario_text_reaches_the_cast_inert(write_scenario, capsys):
    path = write_scenario("evil", '''
        """Evil\x1b]0;owned\x07 title"""
        from engine import Value

        a = Value(2.0, label="a\\x1b]52;c;b3duZWQ=\\x07\\x1b[2J")
        b = a * a
        b.backward()
    ''')
    code = main([str(path), "--export", "cast", "--cast-delay", "0.1"])
    out, _ = capsys.readouterr()
    assert code == 0
    header, events = read_cast(out)
    data = POINTER_SHAPE.sub("", "".join(d for _, _, d in events))  # (Textual's own)
    assert "\x1b]" not in data and "\x07" not in data and "\x1b[2J" not in data[20:]
    assert "\\x1b" in "\n".join(played(header, events).display)  # shown as text


def test_cast_delay_goes_with_the_cast(capsys):
    code = main([str(SCENARIOS / "chain.py"), "--export", "json", "--cast-delay", "2"])
    assert code == 2 and "--cast-delay" in capsys.readouterr().err
    code = main([str(SCENARIOS / "chain.py"), "--export", "cast", "--cast-delay", "nan"])
    assert code == 2
