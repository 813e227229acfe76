"""The Textual internals mgtui relies on (mgtui/tui/textual_private.py), one test each:
a Textual release that changes one fails here, naming it, not somewhere in a class's
server. And nothing else in the package reaches into Textual's private parts."""

from __future__ import annotations

import ast
import asyncio
import functools
import importlib
import inspect
import re
import textwrap
from pathlib import Path

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.driver import Driver
from textual.drivers.headless_driver import HeadlessDriver
from textual.geometry import Size
from textual.notifications import Notification
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Static

from mgtui.tui import textual_private as tp

PACKAGE = Path(__file__).resolve().parent.parent.parent / "mgtui"
ADAPTER = PACKAGE / "tui" / "textual_private.py"


# -- one test per use ----------------------------------------------------------------------------
def test_xterm_parser_turns_what_a_terminal_sends_into_key_events():
    parser = tp.xterm_parser()
    keys = [e.key for e in parser.feed("a\x1b[A\r") if isinstance(e, events.Key)]
    assert keys == ["a", "up", "enter"]


def test_release_parser_closes_the_parser_and_its_cache():
    parser = tp.xterm_parser()
    list(parser.feed("\x1b[1;5A"))  # (ctrl+up: an extended key, cached)
    tp.release_parser(parser)
    assert inspect.getgeneratorstate(parser._gen) == inspect.GEN_CLOSED
    cached = getattr(type(parser), "_parse_extended_key", None)
    if hasattr(cached, "cache_info"):
        assert cached.cache_info().currsize == 0


async def test_app_driver_is_the_driver_the_app_runs_on():
    app = App()
    assert tp.app_driver(app) is None
    async with app.run_test():
        assert isinstance(tp.app_driver(app), Driver)


async def test_set_driver_size_is_the_size_an_app_reports_before_a_resize():
    app = App()
    driver = HeadlessDriver(app, size=(80, 24))
    app._driver = driver  # (as App.run does, without running it)
    tp.set_driver_size(driver, (33, 11))
    assert app.size == Size(33, 11)


@pytest.mark.parametrize("environ, expected", [
    ({"TERM": "xterm-256color"}, "256"),
    ({"TERM": "xterm-256color", "COLORTERM": "truecolor"}, "truecolor"),
    ({"TERM": "xterm"}, "standard"),
])
def test_set_color_system_gives_an_apps_console_the_terminals_colours(environ, expected):
    console = App().console
    tp.set_color_system(console, environ)
    assert console.color_system == expected


async def test_forget_exception_lets_a_failed_apps_error_go():
    class Failing(App):
        def on_mount(self) -> None:
            raise ValueError("failing on purpose")

    app = Failing()
    with pytest.raises(ValueError):
        async with app.run_test():
            pass
    assert isinstance(tp.app_exception(app), ValueError)  # (Textual keeps it)
    tp.forget_exception(app)
    assert tp.app_exception(app) is None
    assert getattr(app, "_exception", "gone") is None  # (where it kept it)


async def test_stream_app_is_the_app_capturing_the_process_output():
    import sys

    class Printing(App):
        def on_mount(self) -> None:
            self.seen = tp.stream_app(sys.stdout), tp.stream_app(sys.stderr)
            self.exit()

    app = Printing()
    await app.run_async(headless=True)
    assert app.seen == (app, app)
    assert tp.stream_app(sys.__stdout__) is None


class Hooks:
    """What a `Hooked` app hands its frames and expiring notices to."""

    def __init__(self) -> None:
        self.sent = 0
        self.wanted = True
        self.expiring: list = []
        self.expired: list = []

    def frame_wanted(self) -> bool:
        return self.wanted

    def frame_sent(self) -> None:
        self.sent += 1

    def notice_expiring(self, notification) -> object:
        self.expiring.append(notification)
        return notification.message

    def notice_expired(self, before: object) -> None:
        self.expired.append(before)


class Hooked(App):
    def __init__(self) -> None:
        super().__init__()
        self.hooks = Hooks()
        tp.hook_frames(self, self.hooks)

    def compose(self) -> ComposeResult:
        yield Static("hooked")


async def test_app_hooks_see_every_frame_and_full_frame_sends_one():
    app = Hooked()
    async with app.run_test() as pilot:
        await pilot.pause()
        hooks = app.hooks
        assert hooks.sent > 0  # (Textual displays its frames through `_display`)
        sent = hooks.sent
        tp.full_frame(app)
        assert hooks.sent == sent + 1
        hooks.wanted = False
        tp.full_frame(app)
        assert hooks.sent == sent + 1


async def test_app_hooks_hear_a_notice_expire():
    app = Hooked()
    async with app.run_test(notifications=True) as pilot:
        app.notify("brief", timeout=0.1)
        for _ in range(100):
            await asyncio.sleep(0.05)
            if app.hooks.expired:
                break
        await pilot.pause()
        assert [n.message for n in app.hooks.expiring] == ["brief"]
        assert app.hooks.expired == ["brief"]
        assert tp.notifications(app) == []


async def test_notifications_their_toasts_and_dropping_them():
    app = Hooked()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.notify("one", timeout=60)
        app.notify("two", timeout=60)
        await pilot.pause()
        shown = tp.notifications(app)
        assert [n.message for n in shown] == ["one", "two"]
        assert all(isinstance(n, Notification) for n in shown)
        regions = tp.toast_regions(app.screen, shown[:1])
        assert len(regions) == 1 and regions[0].area > 0
        tp.drop_notifications(app, shown[:1])
        await pilot.pause()
        assert [n.message for n in tp.notifications(app)] == ["two"]
        assert tp.toast_regions(app.screen, shown[:1]) == []


class Sized(tp.SizedScrollView):
    def __init__(self) -> None:
        super().__init__()
        self.given: list[Size] = []
        self.resized_after: list[int] = []

    def size_given(self, size: Size) -> None:
        self.given.append(size)

    def on_resize(self) -> None:
        self.resized_after.append(len(self.given))


async def test_a_sized_scroll_view_is_told_its_size_before_its_resize_event():
    class One(App):
        def compose(self) -> ComposeResult:
            yield Sized()

    app = One()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        pane = app.query_one(Sized)
        assert pane.given and pane.given[-1] == pane.size == Size(40, 10)
        assert pane.resized_after and pane.resized_after[0] >= 1


async def test_refresh_scrollbars_shows_them_for_a_virtual_size_set_quietly():
    class One(App):
        def compose(self) -> ComposeResult:
            yield ScrollView()

    app = One()
    async with app.run_test(size=(40, 10)) as pilot:
        pane = app.query_one(ScrollView)
        await pilot.pause()
        assert not pane.show_vertical_scrollbar
        pane.set_reactive(ScrollView.virtual_size, Size(200, 200))
        tp.refresh_scrollbars(pane)
        assert pane.show_vertical_scrollbar and pane.show_horizontal_scrollbar


async def test_footer_keys_are_footer_keys_and_grey_out_in_place():
    class Keys(App):
        BINDINGS = [Binding("x", "nothing", "Nothing")]

        def compose(self) -> ComposeResult:
            yield Footer()

        def action_nothing(self) -> None:
            pass

    app = Keys()
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        footer = app.query_one(Footer)
        assert tp.footer_bindings_ready(footer) is True
        tp.mark_footer_bindings_ready(footer)
        keys = list(app.query(tp.FooterKey))
        key = next(k for k in keys if k.action == "nothing")
        assert (key.key, key.description) == ("x", "Nothing")
        before = key.render()
        tp.set_footer_key_enabled(key, False)
        assert key.has_class("-disabled")
        assert key.render() != before  # (drawn greyed out)
        tp.set_footer_key_enabled(key, True)
        assert not key.has_class("-disabled")


def test_a_strip_keeps_a_cache_mgtui_may_add_to():
    strip = Strip.blank(4)
    cache = tp.strip_cache(strip)
    marker = object()
    cache.set(marker, strip)
    assert tp.strip_cache(strip).get(marker) is strip


def test_draw_colour_systems_apart_draws_one_strip_in_each_consoles_colours():
    """Textual's `Strip.render` is replaced (it kept the text of the first colour system
    that drew a strip, and a style's codes in the style): what it relies on is each strip's
    segments and text cache, a console's colour system and rich's codes for a style."""
    import io

    from rich.console import Console
    from rich.segment import Segment
    from rich.style import Style

    tp.draw_colour_systems_apart()
    tp.draw_colour_systems_apart()  # (twice: still one layer)
    consoles = {system: Console(file=io.StringIO(), force_terminal=True, color_system=system)
                for system in ("truecolor", "256", "standard")}
    style = Style(color="#b47d2f", bgcolor="#121212", bold=True, link="https://example.org")
    for first in ("truecolor", "standard", "256"):
        strip = Strip([Segment("ab", style.copy()), Segment("c")])
        drawn = {first: strip.render(consoles[first])}
        for system, console in consoles.items():
            drawn[system] = strip.render(console)
            fresh = Style(color="#b47d2f", bgcolor="#121212", bold=True)
            codes = fresh._make_ansi_codes(console._color_system)
            assert f"\x1b[{codes}mab\x1b[0m" in drawn[system], (first, system)
            assert "https://example.org" in drawn[system] and drawn[system].endswith("c")
        assert drawn[first] == strip.render(consoles[first])
        assert "38;2;180;125;47" in drawn["truecolor"] and "38;5;" in drawn["256"]
        assert ";2;" not in drawn["standard"] and ";5;" not in drawn["standard"]
    assert Strip.join([strip, strip]).render(consoles["standard"]).count("\x1b[1;") == 2


# -- nothing else reaches in ---------------------------------------------------------------------
def textual_private_names() -> set[str]:
    """Every `_name` Textual and rich define or set (methods, attributes)."""
    import rich
    import textual

    names: set[str] = set()
    for root in (Path(textual.__file__).parent, Path(rich.__file__).parent):
        for f in root.rglob("*.py"):
            names.update(re.findall(r"(?:\.|def |^\s+)(_[a-z][a-z0-9_]*)\b",
                                    f.read_text(errors="replace"), re.M))
    return names


# Private names of objects that are mgtui's own (or the standard library's, or
# textual-serve's server, which is not Textual) that happen to share a name with
# something in Textual or rich; each is checked to be what it says in the test below.
NOT_TEXTUAL = {
    ("serve/web.py", "_process_messages"),  # textual-serve's Server (a separate package)
    ("serve/heap.py", "_ready"),  # asyncio's event loop: the callbacks due
}
STDLIB = {"os", "sys", "functools", "asyncio"}  # (`os._exit` is no Textual's)


def sees_textual(rel: str, source: str) -> bool:
    """Whether the module may hold Textual's objects: the app's rooms, or any module
    that imports textual or rich."""
    return rel.startswith(("tui/", "serve/")) or bool(
        re.search(r"^\s*(from|import) (textual|rich)\b", source, re.M))


def private_uses(rel: str, source: str, textual_names: set[str]) -> list[str]:
    """`textual._*` imports, and `x._name` / getattr(x, "_name") for any x but self and
    cls where `_name` is one of Textual's or rich's, in the module `rel` of mgtui."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = ([node.module or ""] if isinstance(node, ast.ImportFrom) else []) \
                + [a.name for a in node.names]
            if any(m.split(".")[0] in ("textual", "rich")
                   and any(part.startswith("_") for part in m.split(".")) for m in modules):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    ("textual", "rich")) and any(a.name.startswith("_") for a in node.names):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
        name = None
        if isinstance(node, ast.Attribute) and not (
                isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls", *STDLIB)):
            name = node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant)
              and not (isinstance(node.args[0], ast.Name) and node.args[0].id == "self")):
            name = node.args[1].value
        if (isinstance(name, str) and name.startswith("_") and not name.startswith("__")
                and name in textual_names and (rel, name) not in NOT_TEXTUAL):
            found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_textual_private_outside_the_adapter_by_attribute_or_import():
    names = textual_private_names()
    modules = {path.relative_to(PACKAGE).as_posix(): path.read_text()
               for path in sorted(PACKAGE.rglob("*.py")) if path != ADAPTER}
    found = [use for rel, source in modules.items() if sees_textual(rel, source)
             for use in private_uses(rel, source, names)]
    assert found == [], "Textual's private parts used outside mgtui/tui/textual_private.py:\n" \
        + "\n".join(found)


@functools.cache
def members_of(base: type) -> frozenset[str]:
    """The names a Textual (or rich) class defines or sets on `self`."""
    names = set(vars(base)) | set(getattr(base, "__slots__", ()))
    try:
        names.update(re.findall(r"self\.(_[A-Za-z0-9_]+)", inspect.getsource(base)))
    except (OSError, TypeError):
        pass
    return frozenset(names)


def textual_defines(cls: type, name: str) -> str | None:
    """The Textual (or rich) class in `cls`'s MRO that defines or sets `name`."""
    for base in cls.__mro__:
        if (base.__module__ or "").startswith(("textual", "rich")) and name in members_of(base):
            return f"{base.__module__}.{base.__qualname__}"
    return None


def is_mgtuis(cls: type) -> bool:
    return (cls.__module__ or "").startswith("mgtui.") and cls.__module__ != tp.__name__


@functools.cache
def private_names_in(cls: type) -> tuple[str, ...]:
    """Each `self._name` and `def _name` in the class body of `cls`."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "self"):
            name = node.attr
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = node.name
        else:
            continue
        if name.startswith("_") and not name.startswith("__"):
            out.append(name)
    return tuple(out)


def own_private_names(cls: type, is_own=is_mgtuis) -> list[tuple[str, str]]:
    """(`where`, `_name`) for each `self._name` and `def _name` in the classes of mgtui
    in `cls`'s MRO (the adapter's but for)."""
    return [(f"{base.__module__}.{base.__qualname__}", name)
            for base in cls.__mro__ if is_own(base) for name in private_names_in(base)]


def test_no_textual_private_through_self_outside_the_adapter():
    """A class of mgtui built on a Textual one (an App, a driver, a widget) neither
    overrides nor touches a private member of its Textual bases."""
    classes = set()
    for path in sorted((PACKAGE / "tui").rglob("*.py")) + sorted((PACKAGE / "serve").rglob("*.py")):
        module = importlib.import_module(".".join(path.relative_to(PACKAGE.parent)
                                                  .with_suffix("").parts))
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and any(
                    (b.__module__ or "").startswith("textual") for b in cls.__mro__):
                classes.add(cls)
    assert len(classes) > 20  # (the apps, screens, widgets and drivers were found)
    found = sorted({f"{where}.{name} is {owner}'s" for cls in classes
                    for where, name in own_private_names(cls)
                    if (owner := textual_defines(cls, name)) is not None})
    assert found == [], "Textual's private members used outside the adapter:\n" \
        + "\n".join(found)


def test_the_check_finds_a_private_use():
    """The checks above can fail: a module that reaches in is caught."""
    names = textual_private_names()
    found = private_uses("tui/reaching.py",
                         "from textual._xterm_parser import XTermParser\n"
                         "def size(app):\n    return app._driver._size\n"
                         "def notices(app):\n    return getattr(app, '_notifications')\n",
                         names)
    assert len(found) == 4, found

    class Reaching(ScrollView):
        def _size_updated(self, *args):
            return self._refresh_scrollbars()

    assert {name for _, name in own_private_names(Reaching, lambda c: c is Reaching)
            if textual_defines(Reaching, name)} == {"_size_updated", "_refresh_scrollbars"}
