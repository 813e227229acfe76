"""Hostile text is shown, never obeyed: the one sanitising path and the output budget."""

from __future__ import annotations

import pytest

import unicodedata

from mgtui.safe import bounded, cell_width, cells, clip_cells, inert, inert_line

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
    "zero-width space": "pass\u200bword",
    "right-to-left mark": "abc\u200f123",
    "line separator": "one\u2028two",
    "paragraph separator": "one\u2029two",
    "byte order mark": "\ufeffx",
    "tag characters": "flag\U000e0067\U000e0062\U000e007f",
    "lone surrogate (a file name not in UTF-8)": "name\udcff.py",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=list(HOSTILE))
def test_no_control_character_survives(text):
    for shown in (inert(text), inert_line(text)):
        assert not any(ord(c) < 0x20 and c not in "\n\t" for c in shown)
        assert not any(0x7f <= ord(c) <= 0x9f for c in shown)
        assert not any(unicodedata.category(c) in ("Cf", "Zl", "Zp", "Cs") for c in shown)


def test_escapes_are_visible_and_the_rest_is_unchanged():
    assert inert("\x1b[2J") == "\\x1b[2J"
    assert inert("\x9b") == "\\x9b"
    assert inert("x\u202ey") == "x\\u202ey"
    assert inert("line 1\n\tline 2") == "line 1\n\tline 2"  # multi-line text keeps its shape
    assert inert_line("a\nb\tc\rd") == "a\\nb\\tc\\rd"
    assert inert("x[i] [/] [@click=app.quit]") == "x[i] [/] [@click=app.quit]"  # not markup here
    assert inert("∂L/∂a = −4 ✓") == "∂L/∂a = −4 ✓"
    assert inert(42) == "42"
    assert inert_line("pass\u200bword") == "pass\\u200bword"
    assert inert("one\u2028two\u2029") == "one\\u2028two\\u2029"
    assert inert("\U000e0041") == "\\U000e0041"  # (not \\ue0041: that reads as U+E004 and 1)
    assert inert("naïve café 中文 😀 e\u0301") == "naïve café 中文 😀 e\u0301"  # text, shown


def test_every_control_format_and_separator_character_is_shown_as_an_escape():
    # the list in safe.py, checked against this Python's Unicode database
    wanted = ("Cc", "Cf", "Zl", "Zp", "Cs")
    for code in range(0x110000):
        ch = chr(code)
        category = unicodedata.category(ch)
        shown = inert_line(ch)
        if category in wanted:
            assert shown != ch and shown.startswith("\\"), (hex(code), category)
        else:  # (Cn: unassigned here, a format character in a later Unicode)
            assert shown == ch or category == "Cn", (hex(code), category)


def test_text_is_measured_and_clipped_in_terminal_cells():
    assert cell_width("abc") == 3 and cell_width("中文") == 4 and cell_width("😀x") == 3
    assert cell_width("e\u0301") == 1  # a combining mark takes no cell of its own
    assert cells("中a😀e\u0301") == ["中", "", "a", "😀", "", "e\u0301"]
    assert clip_cells("short", 10) == "short"
    assert clip_cells("中文标签很长", 5) == "中文…"  # 5 cells
    assert clip_cells("中文标签很长", 4) == "中…"  # 3: half a 文 cannot be shown
    assert all(cell_width(clip_cells("😀中a文" * 5, w)) <= w for w in range(1, 30))


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


def test_the_printable_fast_path_never_lets_an_unsafe_character_through():
    """`inert` and `inert_line` return text `str.isprintable` calls printable (tabs and
    newlines aside, for `inert`) without searching it: every character either would
    escape must be one Python calls unprintable, and each, put in printable text with
    tabs and newlines, still comes out escaped."""
    import sys

    from mgtui.safe import _UNSAFE, _UNSAFE_LINE

    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        if _UNSAFE_LINE.search(ch):
            assert not ch.isprintable(), hex(code)
            text = f"a\tb ∂ {ch}\nc"
            assert ch not in inert_line(text)
            if ch not in "\t\n":
                assert ch not in inert(text), hex(code)


def test_every_notification_is_shown_as_text_not_markup():
    """Textual reads a notification's message as markup unless told not to: a student's
    typed prediction with `[/]` in it ended their session. Every `notify` call in mgtui
    says `markup=False` (its text goes through `inert` or is mgtui's own)."""
    import ast
    from pathlib import Path

    import mgtui

    calls = []
    for path in Path(mgtui.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "notify"):
                calls.append(node)
                markup = next((k.value for k in node.keywords if k.arg == "markup"), None)
                assert isinstance(markup, ast.Constant) and markup.value is False, \
                    f"{path}:{node.lineno}: notify(...) without markup=False"
    assert len(calls) >= 10  # (the walk found mgtui's notices)
