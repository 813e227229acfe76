"""Compacted strips look the same on screen, cell by cell, with fewer style changes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from mgtui.tui.widgets.strips import changed_width, compact

STYLES = [
    None,
    Style(),
    Style(color="red"),
    Style(color="red", bgcolor="blue"),
    Style(color="green", bgcolor="blue"),
    Style(bgcolor="blue"),
    Style(bold=True, bgcolor="blue"),
    Style(italic=True, color="yellow", bgcolor="blue"),
    Style(reverse=True, color="yellow", bgcolor="blue"),
    Style(underline=True, bgcolor="blue"),
    Style(strike=True, color="red"),
    Style(color="red", bgcolor="blue", meta={"offset": (3, 1)}),
    Style(color="red", bgcolor="blue", meta={"offset": (9, 1)}),
    Style(link="https://example.org", bgcolor="blue"),
]


def cells(strip: Strip) -> list[tuple]:
    """What each cell shows. A space shows only its background, unless it is underlined,
    struck through or reversed (then its colour shows too) or part of a link."""
    out = []
    for text, style, _ in strip:
        style = style or Style()
        look = (style.color, style.bgcolor, style.bold, style.dim, style.italic,
                style.underline, style.strike, style.reverse, style.link)
        for ch in text:
            if ch == " " and not (style.underline or style.strike or style.reverse or style.link):
                out.append((" ", style.bgcolor))
            else:
                out.append((ch, look))
    return out


def codes(strip: Strip) -> int:
    """How many style codes Textual would send for the strip: one per styled segment."""
    return sum(1 for _, style, _ in strip if style)


segments = st.lists(st.tuples(st.sampled_from(["", " ", "  ", "ab", "x ", " y", "▶ ", "·"]),
                              st.sampled_from(range(len(STYLES)))), max_size=12)


@settings(max_examples=300, deadline=None)
@given(segments)
def test_a_compacted_strip_shows_the_same_cells(parts):
    strip = Strip([Segment(text, STYLES[k]) for text, k in parts])
    small = compact(strip)
    assert cells(small) == cells(strip)
    assert small.cell_length == strip.cell_length
    assert len(small) <= len(strip)


def test_a_row_of_one_style_becomes_one_segment():
    style = Style(color="red", bgcolor="blue")
    strip = Strip([Segment("  32700", style), Segment(" ", style), Segment("#32700", style),
                   Segment(" ", Style(bgcolor="blue"))])
    assert list(compact(strip)) == [Segment("  32700 #32700 ", style)]


def test_blanks_take_the_style_of_the_text_beside_them():
    pad, text = Style(bgcolor="blue"), Style(color="red", bgcolor="blue", meta={"offset": (0, 0)})
    strip = Strip([Segment(" ", pad), Segment("step 3", text), Segment("    ", pad)])
    small = compact(strip)
    assert codes(small) == 1 and small.text == " step 3    "


def test_what_a_blank_shows_is_kept():
    # an underlined, reversed or struck-through blank shows, and a new background shows
    for other in (Style(bgcolor="blue", underline=True), Style(bgcolor="blue", reverse=True),
                  Style(bgcolor="green")):
        strip = Strip([Segment("ab", Style(color="red", bgcolor="blue")), Segment("  ", other)])
        assert len(compact(strip)) == 2


def test_a_line_is_sent_only_as_far_as_it_changed():
    red, blue = Style(color="red"), Style(color="blue", bgcolor="black")
    old = [Segment("step 41/99  ", red), Segment("x.grad", blue)]
    assert changed_width(old, [Segment("step 42/99  ", red), Segment("x.grad", blue)], 30) == 7
    assert changed_width(old, [Segment("step 41/99  ", red), Segment("x.grad", red)], 30) == 18
    assert changed_width(old, old, 30) == 0
    assert changed_width(old, [Segment("step 41/99", red)], 30) == 18  # what went away, too
    assert changed_width(None, old, 30) == 30  # nothing known of what is on screen
    assert changed_width(old, [Segment("step 41/99  ", red), Segment("漢字", blue)], 30) == 30


def test_a_strip_is_compacted_once_and_one_that_cannot_be_does_not_keep_itself():
    import gc

    from mgtui.tui.widgets.strips import _compacted

    merges = Strip([Segment("a", Style(bold=True)), Segment("b", Style(bold=True))])
    small = _compacted(merges)
    assert small.text == "ab" and len(small) == 1 and _compacted(merges) is small
    kept = Strip([Segment("a", Style(bold=True)), Segment("b", Style(italic=True))])
    assert _compacted(kept) is kept and _compacted(kept) is kept
    # kept in its own cache it would be a reference cycle, which only the collector frees
    assert not any(thing is kept for thing in gc.get_referents(kept._style_cache._cache))
