"""Every use mgtui makes of Textual's (and rich's console's) private parts, in one place.

Textual offers no public way to do what these do. Each has a test in
tests/architecture/test_textual_private.py that fails loudly, naming the use, when a Textual release
changes what it relies on; tests/architecture/test_textual_private.py also checks that nothing else
in the package imports `textual._*` or touches a private attribute of a Textual object.
An upgrade that breaks one is mended here, and nowhere else.

What each is for:

- a served terminal's input is parsed by Textual's own xterm parser (`xterm_parser`,
  `release_parser`); a driver's size (`set_driver_size`), and an app's driver
  (`app_driver`);
- a served session's colours are its client's terminal's (`set_color_system`), and a
  failed session's app is let go once its failure is logged (`app_exception`,
  `forget_exception`), and its capture of the process's output too (`stream_app`);
- a class's students are drawn by one of them (mgtui/serve/unison.py): the frame an app
  would send (`hook_frames`), the whole screen drawn at once (`full_frame`), its
  notices (`notifications`, `drop_notifications`, `toast_regions`,
  `hook_frames`);
- the Graph pane draws in the frame that first lays it out (`SizedScrollView`) and sets
  its virtual size without a layout (`refresh_scrollbars`);
- the footer restyles a key in place (`FooterKey`, `footer_bindings_ready`,
  `set_footer_key_enabled`), and a strip keeps its compacted form (`strip_cache`);
- one process draws for terminals of different colours, each in its own
  (`draw_colour_systems_apart`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping

from rich.color import ColorSystem
from rich.console import Console
from rich.style import Style
from textual.scroll_view import ScrollView
from textual.widgets._footer import FooterKey
from textual.widgets._toast import Toast

if TYPE_CHECKING:
    from textual._xterm_parser import XTermParser
    from textual.app import App
    from textual.cache import FIFOCache
    from textual.driver import Driver
    from textual.geometry import Region, Size
    from textual.screen import Screen
    from textual.strip import Strip
    from textual.widgets import Footer

__all__ = [
    "FooterKey", "SizedScrollView", "app_driver", "app_exception", "draw_colour_systems_apart",
    "drop_notifications", "footer_bindings_ready", "forget_exception", "full_frame", "hook_frames",
    "mark_footer_bindings_ready",
    "notifications", "refresh_scrollbars", "release_parser", "set_color_system",
    "set_driver_size", "set_footer_key_enabled", "stream_app", "strip_cache", "toast_regions",
    "xterm_parser",
]


# -- drivers and input ---------------------------------------------------------------------------
def xterm_parser(debug: bool = False) -> XTermParser:
    """Textual's parser of what a terminal sends (keys, mouse reports) into events.
    (Imported here: a terminal's own driver imports it as it starts, not the first frame.)"""
    from textual._xterm_parser import XTermParser

    return XTermParser(debug)


def release_parser(parser: XTermParser) -> None:
    """Let the app go when its session ends. Textual's parser caches the keys it parsed
    (in an lru_cache on the class, keyed by the parser) and its generator keeps the last
    one; each key holds its app as sender. One parser per process never notices; a
    server with a parser per session would keep every ended session's app alive."""
    parser._gen.close()
    parse_extended_key = getattr(type(parser), "_parse_extended_key", None)
    if hasattr(parse_extended_key, "cache_clear"):
        parse_extended_key.cache_clear()


def app_driver(app: App) -> Driver | None:
    """The driver `app` runs on (None before it runs)."""
    return getattr(app, "_driver", None)


def set_driver_size(driver: Driver, size: tuple[int, int]) -> None:
    """The terminal's size, as `driver` reports it (the app's size until a Resize)."""
    driver._size = size


# -- an app's console and failures ---------------------------------------------------------------
def set_color_system(console: Console, environ: Mapping[str, str]) -> None:
    """`console` writes in the colours a terminal with the environment `environ` (its
    TERM, COLORTERM) shows, as rich detects them."""
    probe = Console(force_terminal=True, color_system="auto", _environ=dict(environ))
    console._color_system = probe._color_system


def app_exception(app: App) -> BaseException | None:
    """The failure that ended `app` (Textual keeps it to raise again), if one did."""
    return getattr(app, "_exception", None)


def forget_exception(app: App) -> None:
    """`app` keeps no failure to raise again (it has been logged)."""
    if getattr(app, "_exception", None) is not None:
        app._exception = None


def stream_app(stream: object) -> App | None:
    """The app whose capture of `sys.stdout` or `sys.stderr` `stream` is, if it is one."""
    return getattr(stream, "app", None)


# -- drawing for terminals of different colours in one process --------------------------------------
def draw_colour_systems_apart() -> None:
    """Every strip is drawn in the colours of the console that draws it. Textual keeps a
    strip's terminal text in the strip (`Strip._render_cache`) and a style's SGR codes in the
    style (`Style._ansi`, as rich does), made in the colour system of whichever console drew
    them first, and apps share styles (and some strips) through caches. One process draws for
    several: the class server's students (a 16-colour terminal beside a 24-bit one, the
    browser), an SVG export beside a 256-colour terminal, the test run: a 16-colour terminal
    was sent a 24-bit colour, wrong or unshown, until that cell was drawn again. From this
    call, a strip keeps only text drawn in 24-bit colour, and SGR codes are kept here by style
    and colour system, never in the style. (Idempotent.)"""
    from textual.strip import Strip

    if getattr(Strip.render, "_mgtui_apart", False):
        return
    truecolor = ColorSystem.TRUECOLOR

    def render(strip: Strip, console: Console) -> str:
        system = console._color_system or truecolor
        if system is truecolor and strip._render_cache is not None:
            return strip._render_cache
        known = _SGR.get(system)
        if known is None or len(known) > _SGR_KEPT:
            known = _SGR[system] = {}
        parts: list[str] = []
        add = parts.append
        for part, style, _ in strip._segments:
            if style is None:
                add(part)
                continue
            hit = known.get(id(style))
            codes = hit[1] if hit is not None else _sgr_codes(known, style, system)
            if style._link:
                add(_linked(style, part, codes))
            else:
                add(f"\x1b[{codes}m{part}\x1b[0m" if codes else part)
        text = "".join(parts)
        if system is truecolor:
            strip._render_cache = text
        return text

    render._mgtui_apart = True
    Strip.render = render


# SGR codes by colour system, then by style's id: each entry holds its style, so that id is
# not another style's while it is kept (a few thousand styles; forgotten past `_SGR_KEPT`)
_SGR: dict[ColorSystem, dict[int, tuple[Style, str]]] = {}
_SGR_KEPT = 20_000


def _sgr_codes(known: dict, style: Style, system: ColorSystem) -> str:
    """Rich's codes for `style` in `system`, kept in `known`, leaving the style's own cache
    as it was."""
    kept, style._ansi = style._ansi, None
    try:
        codes = style._make_ansi_codes(system)
    finally:
        style._ansi = kept
    known[id(style)] = (style, codes)
    return codes


def _linked(style: Style, text: str, codes: str) -> str:
    out = f"\x1b[{codes}m{text}\x1b[0m" if codes else text
    return f"\x1b]8;id={style._link_id};{style._link}\x1b\\{out}\x1b]8;;\x1b\\"


# -- drawing a screen and its notices ------------------------------------------------------------
def hook_frames(app: App, hooks) -> None:
    """Hand `app`'s frames and expiring notices to `hooks`, an object the app holds:
    `hooks.frame_wanted()` (False: the frame is not drawn), `frame_sent()`,
    `notice_expiring(notification)` and `notice_expired(what that returned)`."""
    display, unnotify = app._display, app._unnotify

    def hooked_display(screen: Screen, renderable) -> None:
        if hooks.frame_wanted():
            display(screen, renderable)
            hooks.frame_sent()

    def hooked_unnotify(notification, refresh: bool = True) -> None:
        before = hooks.notice_expiring(notification)
        unnotify(notification, refresh)
        hooks.notice_expired(before)

    app._display, app._unnotify = hooked_display, hooked_unnotify


def full_frame(app: App) -> None:
    """Send `app`'s whole screen now (as its driver's writes cut it)."""
    screen = app.screen
    app._display(screen, screen._compositor.render_update(
        full=True, screen_stack=app._background_screens))


def notifications(app: App) -> list:
    """The notices `app` shows (or is about to)."""
    return list(app._notifications)


def drop_notifications(app: App, notices: Iterable) -> None:
    """`notices` go now."""
    for notice in notices:
        del app._notifications[notice]
    app._refresh_notifications()


def toast_regions(screen: Screen, notices: list) -> list[Region]:
    """Where the toasts of `notices` are on `screen` (their own regions: their holders'
    are empty)."""
    return [toast.region for toast in screen.query(Toast)
            if toast._notification in notices and toast.region]


# -- widgets -------------------------------------------------------------------------------------
class SizedScrollView(ScrollView):
    """A ScrollView told its size as the screen is laid out, before the frame is drawn
    (`size_given`), not only when its Resize event comes after it."""

    def size_given(self, size: Size) -> None:
        pass

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size,
                      layout: bool = True) -> bool:
        changed = super()._size_updated(size, virtual_size, container_size, layout)
        self.size_given(size)
        return changed


def refresh_scrollbars(widget: ScrollView) -> None:
    """`widget`'s scrollbars as its virtual size says (set without a layout)."""
    widget._refresh_scrollbars()


def footer_bindings_ready(footer: Footer) -> bool:
    """Whether `footer` has composed its keys since its bindings were first ready."""
    return footer._bindings_ready


def mark_footer_bindings_ready(footer: Footer) -> None:
    footer._bindings_ready = True


def set_footer_key_enabled(key: FooterKey, enabled: bool) -> None:
    """`key` shows enabled or greyed out, restyled where it is."""
    if key._disabled == enabled:
        key._disabled = not enabled
        key.set_class(not enabled, "-disabled")


def strip_cache(strip: Strip) -> FIFOCache:
    """The small cache a strip keeps of its restyled forms (mgtui keeps one more)."""
    return strip._style_cache
