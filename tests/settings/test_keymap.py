"""The user keymap: `$XDG_CONFIG_HOME/mgtui/config.toml` rebinds the debugger's keys by
binding id; a file that cannot be used gives one message and the default keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from mgtui.settings.bindings import IDS, help_rows, palette_rows
from mgtui.settings.config import config_path, load_config
from tests.conftest import notices_of

SCENARIOS = Path(__file__).resolve().parent.parent.parent / "scenarios"

pytestmark = pytest.mark.usefixtures("clean_env")


@pytest.fixture
def config_home(tmp_path, monkeypatch):
    """An empty XDG config home; write(text) puts a config.toml in it."""
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))

    def write(text: str) -> Path:
        path = home / "mgtui" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write


# -- where the file is, and what it may say ------------------------------------------------------

def test_the_file_is_under_xdg_config_home(tmp_path):
    assert config_path({"XDG_CONFIG_HOME": str(tmp_path), "HOME": "/home/x"}) == (
        tmp_path / "mgtui" / "config.toml")


def test_without_xdg_config_home_it_is_under_dot_config():
    expected = Path("/home/x/.config/mgtui/config.toml")
    assert config_path({"HOME": "/home/x"}) == expected
    assert config_path({"HOME": "/home/x", "XDG_CONFIG_HOME": ""}) == expected
    # the XDG spec: a relative XDG_CONFIG_HOME is ignored
    assert config_path({"HOME": "/home/x", "XDG_CONFIG_HOME": "rel/dir"}) == expected


def test_no_file_means_the_defaults_and_no_message(config_home):
    config = load_config()
    assert config.keymap == {} and config.problem == ""


def test_a_keymap_is_read(config_home):
    config_home('[keymap]\nnext = "l"\nprev = "h, backspace"\n')
    config = load_config()
    assert config.keymap == {"next": "l", "prev": "h,backspace"} and not config.problem


@pytest.mark.parametrize("text, problem", [
    ("[keymap\nnext = 'l'", "is not valid TOML"),
    ('[keymap]\nnxet = "l"\n', "no binding with the id 'nxet' (did you mean 'next'?)"),
    ("[keymap]\nnext = 3\n", "keymap.next must be a string"),
    ('[keymap]\nnext = ""\n', "keymap.next must be a string"),
    ('keymap = "next=l"\n', "keymap must be a table"),
    ('[keymaps]\nnext = "l"\n', "unknown setting 'keymaps'"),
])
def test_a_bad_file_gives_one_message_and_the_defaults(config_home, text, problem):
    path = config_home(text)
    config = load_config()
    assert config.keymap == {}
    assert config.problem.startswith(str(path)) and problem in config.problem
    assert "default keys" in config.problem


def test_a_name_that_is_no_key_is_left_out_with_a_warning(config_home):
    path = config_home('[keymap]\nnext = "j, nope"\nprev = "ctrl+nope"\nfind = "question_mark"\n'
                       'checks = "\\u001b]0;pwned\\u0007"\n')
    config = load_config()
    assert config.keymap == {"next": "j", "find": "question_mark"} and not config.problem
    text = "\n".join(config.warnings)
    assert len(config.warnings) == 3 and all(w.startswith(f"{path}: ") for w in config.warnings)
    assert 'keymap.next: "nope" is not a key\'s name' in text and "left out" in text
    assert 'keymap.prev: "ctrl+nope"' in text and "its default keys are kept" in text
    assert 'keymap.checks: "\\x1b]0;pwned\\x07"' in text and "\x1b" not in text


@pytest.mark.parametrize("keymap, left, warned", [
    ('next = "q"', {}, ["next"]),  # q would no longer quit: it stays quit's
    ('next = "n,q"', {"next": "n"}, ["next"]),
    ('prev = "q"\n"next.alt" = "q"', {}, ["prev", "next.alt"]),
    ('next = "q"\nquit = "ctrl+q"', {"next": "q", "quit": "ctrl+q"}, []),  # quit has another
    ('quit = "x"', {"quit": "x"}, []),
])
def test_a_keymap_that_leaves_no_key_to_quit_is_refused_for_that_key(config_home, keymap, left,
                                                                     warned):
    config_home(f"[keymap]\n{keymap}\n")
    config = load_config()
    assert config.keymap == left
    assert [w.split("keymap.")[1].split(":")[0] for w in config.warnings] == warned
    assert all("would leave no key to quit with: it stays quit's" in w for w in config.warnings)


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_only_a_regular_file_is_read(tmp_path, kind):
    import os
    import subprocess
    import sys

    path = tmp_path / "mgtui" / "config.toml"
    path.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(path)  # no writer ever comes: reading it would wait for ever
    elif kind == "device":
        path.symlink_to("/dev/zero")  # endless
    else:
        path.mkdir()
    code = ("from pathlib import Path; from mgtui.settings.config import load_config; "
            f"c = load_config(Path({str(path)!r})); print(c.problem); print(c.keymap)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30, cwd=Path(__file__).resolve().parent.parent.parent)
    problem, keymap = done.stdout.splitlines()
    assert problem.startswith(str(path)) and "default keys" in problem, done.stderr
    assert ("not a regular file" in problem) or kind == "directory" and "cannot be read" in problem
    assert keymap == "{}"


# -- the one table ---------------------------------------------------------------------------------

def test_every_binding_has_an_id_and_the_help_and_palette_come_from_the_table():
    from mgtui.settings.bindings import ALL_KEYS

    ids = [k.id for k in ALL_KEYS]
    assert len(ids) == len(set(ids)) and IDS <= set(ids)
    rows = dict(help_rows())
    assert rows["n / right / space"] == "next step (forward in time)"
    assert rows["]"] == "first step of the next pass"
    titles = {title: keys for title, keys, _ in palette_rows()}
    assert titles["Next step"] == "n / right / space"
    assert titles["Show the lesson notes"] == "t"  # reached with the tab key


def test_a_users_key_is_taken_from_the_panes_that_have_it():
    from mgtui.settings.bindings import with_panes

    keymap = with_panes({"next": "j", "prev": "k"})
    assert keymap["next"] == "j" and keymap["table.down"] == "down"
    assert keymap["topo.up"] == "up" and keymap["text.down"] == "down"
    assert "table.pageup" not in keymap
    assert with_panes({"table.down": "j,down", "next": "j"})["table.down"] == "j,down"


def test_the_help_shows_the_users_keys():
    rows = dict(help_rows({"next": "l", "find": "ctrl+f"}))
    assert rows["l / right / space"] == "next step (forward in time)"
    assert rows["ctrl+f"] == "find a node of the current graph by label"


# -- in the app --------------------------------------------------------------------------------------

async def loaded(pilot):
    app = pilot.app
    for _ in range(500):
        await pilot.pause(0.02)
        if not app.loading and app.debugger.trace is not None:
            break
    await app.workers.wait_for_complete()
    await pilot.pause()
    return app.debugger


async def test_a_rebound_key_moves_the_step_and_shows_in_the_footer_and_help(config_home, kept_notices):
    from mgtui.tui.app import MgtuiApp

    config_home('[keymap]\nnext = "j"\nprev = "k"\n')  # the node table's own keys
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert type(app.focused).__name__ == "NodeTable"
        await pilot.press("j", "j")
        assert screen.position == 2
        await pilot.press("n")  # no longer bound
        assert screen.position == 2
        await pilot.press("k")
        assert screen.position == 1
        await pilot.press("right")  # the other keys of "next" stay
        assert screen.position == 2
        footer = {key.key: key.action for key in screen.query("FooterKey")}
        assert footer.get("j") == "next" and "n" not in footer
        await pilot.press("question_mark")
        assert ("j / right / space", "next step (forward in time)") in app.screen.keys
        assert not notices_of(app)


async def test_a_bad_file_gives_a_notification_and_the_default_keys(config_home, kept_notices):
    from mgtui.tui.app import MgtuiApp

    path = config_home("[keymap]\nnext = [1, 2]\n")
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        messages = notices_of(app)
        assert len(messages) == 1
        assert str(path) in messages[0] and "keymap.next must be a string" in messages[0]
        await pilot.press("n")
        assert screen.position == 1


async def test_a_key_with_escapes_never_reaches_the_footer_and_q_still_quits(config_home, kept_notices):
    from mgtui.tui.app import MgtuiApp

    config_home('[keymap]\nnext = "\\u001b]0;pwned\\u0007"\nprev = "q"\n')
    app = MgtuiApp(SCENARIOS / "chain.py")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        footer = [(key.key, key.key_display or "") for key in screen.query("FooterKey")]
        assert footer and not any("\x1b" in k or "\x07" in k or "pwned" in k
                                  for pair in footer for k in pair)
        assert ("n", "n") in [(k, d or k) for k, d in footer]  # next kept its own key
        messages = notices_of(app)
        assert len(messages) == 1 and "\\x1b]0;pwned\\x07" in messages[0]
        assert "would leave no key to quit with" in messages[0]
        await pilot.press("n")
        assert screen.position == 1
        await pilot.press("q")  # still quits
        await pilot.pause()
    assert app.return_code == 0
