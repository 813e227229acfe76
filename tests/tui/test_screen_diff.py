"""`ScreenDiff` sends fewer bytes and the terminal shows the same cells.

Writes shaped like Textual's (a cursor move, then segments each in a whole SGR code and a
reset, lines apart by newlines) are made from real Rich styles, and each is fed both as
it is and through a `ScreenDiff` to two terminal emulators (pyte), which must then show
the same characters in the same styles. pyte does not keep dim or the rarer attributes,
so a small terminal written here from ECMA-48, which keeps every SGR attribute, checks
them too.
"""

from __future__ import annotations

import re
import shutil

import pyte
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.color import ColorSystem
from rich.style import Style
from textual.strip import Strip

from mgtui.tui.screen_diff import Look, ScreenDiff, _Diffing, change, diffing, erases

COLS, ROWS = 30, 6

# -- an ECMA-48 terminal: every attribute an SGR code sets, cell by cell ------------------
ON = {1: "bold", 2: "dim", 3: "italic", 4: "underline", 5: "blink", 6: "blink2", 7: "reverse",
      8: "conceal", 9: "strike", 21: "underline2", 51: "frame", 52: "encircle", 53: "overline"}
OFF = {22: {"bold", "dim"}, 23: {"italic"}, 24: {"underline", "underline2"},
       25: {"blink", "blink2"}, 27: {"reverse"}, 28: {"conceal"}, 29: {"strike"},
       54: {"frame", "encircle"}, 55: {"overline"}}


class Ecma48:
    """Absolute and forward cursor moves, carriage return, SGR, erasing characters (in
    the background colour in use, as terminfo's `bce` says), one-cell characters."""

    def __init__(self) -> None:
        self.cells = [[(" ", frozenset(), None, None)] * COLS for _ in range(ROWS)]
        self.y = self.x = 0
        self.attrs: set[str] = set()
        self.fg = self.bg = None

    def feed(self, data: str) -> None:
        for token in re.findall(r"\x1b\[[0-9;]*[A-Za-z]|.", data, re.S):
            if token.startswith("\x1b["):
                self.escape(token[2:-1], token[-1])
            elif token == "\r":
                self.x = 0
            elif token == "\n":
                self.y += 1
            else:
                self.cells[self.y][self.x] = (token, frozenset(self.attrs), self.fg, self.bg)
                self.x += 1

    def escape(self, params: str, final: str) -> None:
        if final == "H":
            row, _, col = params.partition(";")
            self.y, self.x = int(row or 1) - 1, int(col or 1) - 1
        elif final == "C":
            self.x += int(params or 1)
        elif final == "X":  # erase in place, in the background colour in use (bce)
            for x in range(self.x, min(self.x + int(params or 1), COLS)):
                self.cells[self.y][x] = (" ", frozenset(), None, self.bg)
        elif final == "m":
            codes = [int(c or 0) for c in params.split(";")]
            while codes:
                code = codes.pop(0)
                if code == 0:
                    self.attrs, self.fg, self.bg = set(), None, None
                elif code in ON:
                    self.attrs.add(ON[code])
                elif code in OFF:
                    self.attrs -= OFF[code]
                elif code in (38, 48):
                    n = 2 if codes[0] == 5 else 4
                    colour = tuple(codes[: n])
                    del codes[:n]
                    self.fg, self.bg = (colour, self.bg) if code == 38 else (self.fg, colour)
                elif code in (39, 49):
                    self.fg, self.bg = (None, self.bg) if code == 39 else (self.fg, None)
                elif 30 <= code <= 37 or 90 <= code <= 97:
                    self.fg = (code % 10, code >= 90)
                elif 40 <= code <= 47 or 100 <= code <= 107:
                    self.bg = (code % 10, code >= 100)
                else:
                    raise AssertionError(f"SGR {code} is not one Rich writes")
        else:
            raise AssertionError(f"ScreenDiff sent ESC[{params}{final}")

    def shown(self) -> list[list[tuple]]:
        """Each cell as it looks: a blank shows only its background, unless reversed,
        underlined, struck through, overlined or framed."""
        shows = {"reverse", "underline", "underline2", "strike", "overline", "frame", "encircle"}
        return [[(" ", None, frozenset(), bg) if ch == " " and not attrs & shows
                 else (ch, fg, attrs, bg) for ch, attrs, fg, bg in row] for row in self.cells]


def pyte_shown(screen: pyte.Screen) -> list[list[tuple]]:
    rows = []
    for y in range(screen.lines):
        row = []
        for x in range(screen.columns):
            c = screen.buffer[y][x]
            if c.data == " " and not (c.underscore or c.reverse or c.strikethrough):
                row.append((" ", c.bg))
            else:
                row.append((c.data, c.fg, c.bg, c.bold, c.italics, c.underscore, c.reverse,
                            c.strikethrough, c.blink))
        rows.append(row)
    return rows


# -- writes as Textual makes them -------------------------------------------------------
COLOURS = st.sampled_from([None, "red", "bright_green", "color(71)", "color(234)", "#1c1c1c",
                           "#ff8800", "default"])
ATTRS = ("bold", "dim", "italic", "underline", "blink", "reverse", "strike", "overline",
         "underline2", "conceal", "frame")
STYLES = st.builds(
    lambda attrs, fg, bg: Style(color=fg, bgcolor=bg, **{a: True for a in attrs}),
    st.sets(st.sampled_from(ATTRS), max_size=3), COLOURS, COLOURS)
TEXT = st.one_of(st.text(alphabet=" ab│…▶x", min_size=1, max_size=8),
                 st.from_regex(r"a? {8,14}b?", fullmatch=True))  # a stretch to erase


@st.composite
def writes(draw, narrow_only: bool = False):
    """Chops: at a row and column, segments in styles, cut to the screen's width."""
    chops = []
    for _ in range(draw(st.integers(1, 5))):
        y, x = draw(st.integers(0, ROWS - 1)), draw(st.integers(0, COLS - 1))
        segments, width = [], COLS - x
        for _ in range(draw(st.integers(1, 4))):
            text = draw(TEXT if narrow_only else st.one_of(TEXT, st.just("中")))[:width]
            if not text or (text == "中" and width < 2):
                break
            segments.append((text, draw(STYLES)))
            width -= 2 if text == "中" else len(text)
        chops.append((y, x, segments))
    colour = draw(st.sampled_from([ColorSystem.EIGHT_BIT, ColorSystem.TRUECOLOR,
                                   ColorSystem.STANDARD]))
    out = []
    for k, (y, x, segments) in enumerate(chops):
        out.append(f"\x1b[{y + 1};{x + 1}H")
        out += [Strip.render_style(style, text, colour) for text, style in segments]
        if k < len(chops) - 1 and y < ROWS - 1 and draw(st.booleans()):
            # Textual's newline between lines: always followed by a move, never on the
            # last line (where it would scroll the screen)
            out.append("\n")
    out.append("\x1b[1;1H")  # where Textual leaves the cursor
    return "".join(out)


@settings(max_examples=200, deadline=None)
@given(st.lists(writes(), min_size=1, max_size=8), st.booleans())
def test_a_terminal_shows_what_the_writes_themselves_would_show(sequence, erase):
    as_is, cut = pyte.Screen(COLS, ROWS), pyte.Screen(COLS, ROWS)
    feed_as_is, feed_cut = pyte.Stream(as_is), pyte.Stream(cut)
    diff = ScreenDiff(erase)
    for data in sequence:
        feed_as_is.feed(data.replace("\n", "\r\n"))  # a pty's ONLCR
        feed_cut.feed(diff.write(data).replace("\n", "\r\n"))
        assert pyte_shown(cut) == pyte_shown(as_is)


@settings(max_examples=200, deadline=None)
@given(st.lists(writes(narrow_only=True), min_size=1, max_size=8), st.booleans())
def test_every_attribute_ends_as_the_writes_set_it(sequence, erase):
    as_is, cut = Ecma48(), Ecma48()
    diff = ScreenDiff(erase)
    for data in sequence:
        as_is.feed(data.replace("\n", "\r\n"))
        cut.feed(diff.write(data).replace("\n", "\r\n"))
        assert cut.shown() == as_is.shown()


def textual_line(y: int, segments: list[tuple[str, Style]]) -> str:
    return f"\x1b[{y + 1};1H" + "".join(Strip.render_style(style, text, ColorSystem.EIGHT_BIT)
                                        for text, style in segments)


ROW = [("  12 ", Style(color="color(253)", bgcolor="color(234)")),
       ("+= ", Style(bold=True, color="color(71)", bgcolor="color(234)")),
       ("0.5", Style(bold=True, reverse=True, color="color(71)", bgcolor="color(234)"))]


def test_a_line_drawn_again_the_same_sends_nothing_and_a_change_only_itself():
    diff = ScreenDiff()
    first = diff.write(textual_line(3, ROW) + "\x1b[1;1H")
    assert "12" in first and "0.5" in first
    assert diff.write(textual_line(3, ROW) + "\x1b[1;1H") == ""
    changed = ROW[:2] + [("0.7", ROW[2][1])]
    sent = diff.write(textual_line(3, changed) + "\x1b[1;1H")
    # the cursor to row 4, column 11 (the 7), no style (the terminal is in it), back home
    assert sent == "\x1b[4;11H7\x1b[1H"


def test_a_diff_that_takes_anothers_state_goes_on_as_that_one_would():
    """(A class's students who showed the same are sent one cut: `take`.)"""
    lead, same, taker = ScreenDiff(), ScreenDiff(), ScreenDiff()
    for diff in (lead, same):
        diff.write(textual_line(3, ROW) + "\x1b[1;1H")
    taker.write(textual_line(2, ROW))  # (another state: other cells, cursor elsewhere)
    changed = ROW[:2] + [("0.7", ROW[2][1])]
    taker.take(lead)
    assert (taker.rows, taker.cursor, taker.look) == (lead.rows, lead.cursor, lead.look)
    assert taker.rows[3] is not lead.rows[3]  # its own rows: a write to one leaves the other
    sent = lead.write(textual_line(3, changed) + "\x1b[1;1H")
    assert sent == "\x1b[4;11H7\x1b[1H"
    assert taker.write(textual_line(3, changed) + "\x1b[1;1H") == sent
    assert same.write(textual_line(3, changed) + "\x1b[1;1H") == sent
    assert taker.rows == lead.rows == same.rows


def test_styles_go_as_their_difference_from_the_last_or_whole_when_shorter():
    plain = Look(frozenset(), "38;5;253", "48;5;234")
    bold = Look(frozenset({"1"}), "38;5;71", "48;5;234")
    bold_reverse = Look(frozenset({"1", "7"}), "38;5;71", "48;5;234")
    assert change(bold, bold_reverse) == "\x1b[7m"
    assert change(bold_reverse, bold) == "\x1b[27m"
    assert change(bold_reverse, plain) == "\x1b[22;27;38;5;253m"
    dim_bold = Look(frozenset({"1", "2"}), "38;5;71", "48;5;234")
    assert change(dim_bold, Look(frozenset({"2"}), "38;5;71", "48;5;234")) == "\x1b[22;2m"
    assert change(plain, Look()) == "\x1b[m"
    assert change(None, bold) == "\x1b[0;1;38;5;71;48;5;234m"
    assert change(plain, plain) == ""


def test_blanks_need_only_their_background():
    diff = ScreenDiff()
    diff.write(textual_line(0, [("ab   ", Style(color="red", bgcolor="color(234)"))]))
    # the same blanks in another foreground colour look the same: nothing to send
    again = textual_line(0, [("ab", Style(color="red", bgcolor="color(234)")),
                             ("   ", Style(color="blue", bold=True, bgcolor="color(234)"))])
    assert diff.write(again) == ""
    # underlined, they do not
    underlined = textual_line(0, [("ab", Style(color="red", bgcolor="color(234)")),
                                  ("   ", Style(underline=True, bgcolor="color(234)"))])
    assert diff.write(underlined).count(" ") == 3


def test_what_it_does_not_read_goes_as_it_is_and_the_screen_is_sent_again_after_it():
    diff = ScreenDiff()
    line = textual_line(1, ROW)
    diff.write(line)
    # an erase, in the default style the write is in (the terminal was left bold): every
    # cell is unknown from then on
    assert diff.write("\x1b[2J") == "\x1b[m\x1b[2J"
    assert "12" in diff.write(line)
    assert diff.write("\x1b[?1049h") == "\x1b[?1049h"  # the other screen
    assert "12" in diff.write(line)
    assert diff.write("\x1b[?25l") == "\x1b[?25l"  # a mode that draws nothing
    assert diff.write(line) == ""


def test_cells_in_a_link_are_always_sent():
    diff = ScreenDiff()
    linked = "\x1b[1;1H\x1b]8;id=1;https://x.org\x1b\\ab\x1b]8;;\x1b\\"
    diff.write(linked)
    assert "ab" in diff.write(linked)


async def test_every_driver_the_app_runs_writes_through_a_screen_diff():
    from mgtui.tui.app import MgtuiApp
    from textual.driver import Driver

    written: list[str] = []

    class Recording(Driver):
        def write(self, data: str) -> None:
            written.append(data)

        def start_application_mode(self) -> None: ...
        def disable_input(self) -> None: ...
        def stop_application_mode(self) -> None: ...

    app = MgtuiApp(None)
    assert issubclass(app.driver_class, _Diffing)  # the terminal's own driver
    app.driver_class = Recording  # as `mgtui serve` sets its own
    driver = app.driver_class(app)
    assert isinstance(driver, Recording)
    line = textual_line(2, ROW)
    driver.write(line)
    driver.write(line)
    assert written[0] and written[1] == ""
    assert diffing(app.driver_class) is app.driver_class
    # an app that knows its terminal erases in place (`mgtui serve`, from a client's
    # TERM) says so, and long blanks are erased
    app.screen_erases = True
    served = app.driver_class(app)
    served.write(textual_line(0, [("x" * 20, Style(bgcolor="color(234)"))]))
    served.write(textual_line(0, [(" " * 20, Style(bgcolor="color(234)"))]))
    assert "\x1b[20X" in written[-1]


def test_long_blanks_are_erased_in_place_only_where_the_terminal_can():
    wide = [("a" + "x" * 20 + "b", Style(color="red", bgcolor="color(234)"))]
    blanked = [(" " * 22, Style(color="red", bgcolor="color(234)"))]
    for erase, expected in ((True, "\x1b[22X"), (False, " " * 22)):
        diff = ScreenDiff(erase)
        diff.write(textual_line(0, wide))
        assert expected in diff.write(textual_line(0, blanked))
    # which terminals can, their terminfo says
    assert erases("xterm-256color") and not erases("vt100") and not erases(None)


@pytest.mark.parametrize("data", ["plain text", "\x07", "\x1b[5;5Hé\u0301"])
def test_odd_writes_pass(data):
    """Text before any move, a bell, a combining accent: sent, nothing lost."""
    out = ScreenDiff().write(data)
    for piece in re.split(r"\x1b\[[0-9;]*[A-Za-z]", data):
        assert piece in out


@pytest.mark.skipif(shutil.which("tput") is None, reason="tput answers for the comparison")
def test_this_terminal_is_read_as_tput_reads_it():
    from mgtui.tui.screen_diff import erases, erases_here

    assert erases_here("xterm-256color") == erases("xterm-256color") is True
    assert erases_here(None) is False and erases("dumb") is False
