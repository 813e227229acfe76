"""Hostile text is shown, never obeyed: the one sanitising path and the output budget."""

from __future__ import annotations

import pytest

from mgtui.safe import bounded, inert, inert_line

HOSTILE = {
    "clear screen": "\x1b[2J",
    "leave the alternate screen": "\x1b[?1049l",
    "window title": "\x1b]0;pwned\x07",
    "clipboard (OSC 52)": "\x1b]52;c;aGVsbG8=\x07",
    "one-byte CSI": "\x9b31m",
    "carriage return": "safe\rEVIL",
    "backspace": "ab\x08\x08",
    "right-to-left override": "x\u202egnp.exe",
    "NUL": "a\x00b",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=list(HOSTILE))
def test_no_control_character_survives(text):
    for shown in (inert(text), inert_line(text)):
        assert not any(ord(c) < 0x20 and c not in "\n\t" for c in shown)
        assert not any(0x7f <= ord(c) <= 0x9f for c in shown)
        assert "\u202e" not in shown


def test_escapes_are_visible_and_the_rest_is_unchanged():
    assert inert("\x1b[2J") == "\\x1b[2J"
    assert inert("\x9b") == "\\x9b"
    assert inert("x\u202ey") == "x\\u202ey"
    assert inert("line 1\n\tline 2") == "line 1\n\tline 2"  # multi-line text keeps its shape
    assert inert_line("a\nb\tc\rd") == "a\\nb\\tc\\rd"
    assert inert("x[i] [/] [@click=app.quit]") == "x[i] [/] [@click=app.quit]"  # not markup here
    assert inert("∂L/∂a = −4 ✓") == "∂L/∂a = −4 ✓"
    assert inert(42) == "42"


def test_bounded_output_keeps_head_and_tail_and_says_what_it_left_out():
    lines = [f"line {k}" for k in range(1_000_000)]  # about 11 MB
    text = "\n".join(lines) + "\n"
    shown = bounded(text, 100_000)
    assert len(shown) < 110_000
    assert shown.startswith("line 0\nline 1\n") and shown.endswith("line 999999\n")
    assert "characters (" in shown and "lines) of output left out here" in shown
    head = shown.split("\n…")[0]
    assert head.splitlines()[-1].startswith("line ")  # no half line at the cut
    assert bounded("short", 100) == "short"
