"""The user's settings file, `$XDG_CONFIG_HOME/mgtui/config.toml` (by default
`~/.config/mgtui/config.toml`). Today it holds one table, the keymap:

    [keymap]
    next = "j"            # a binding id from mgtui.settings.bindings = comma-separated keys
    prev = "k,backspace"

A file that cannot be used gives one message and the defaults, never an exception; a
key that cannot be used gives a warning, and the binding keeps its other keys (or its
default). Only a regular file is read (a FIFO or a device there would hang start-up).
"""

from __future__ import annotations

import difflib
import os
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from mgtui.safe import inert_line
from mgtui.settings.bindings import BY_ID, IDS

SECTIONS = ("keymap",)
MAX_BYTES = 1 << 20  # a settings file is a few lines: a bigger one is not read
MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})
# Textual's names of the keys that are not characters, and the short names it gives
# some characters (a character is also named by its Unicode name: question_mark)
NAMED_KEYS = frozenset({
    "escape", "enter", "return", "newline", "tab", "space", "backspace", "delete",
    "insert", "home", "end", "pageup", "pagedown", "up", "down", "left", "right",
    "slash", "backslash", "at", "minus", "plus", "underscore",
    *(f"f{n}" for n in range(1, 25)),
})


@dataclass(frozen=True)
class Config:
    keymap: dict[str, str] = field(default_factory=dict)  # binding id -> keys
    problem: str = ""  # why the file was not used ("" when it was, or there is none)
    path: Path | None = None
    warnings: tuple[str, ...] = ()  # keys of the file that were not used, and why


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the settings file is: under $XDG_CONFIG_HOME if set, else ~/.config."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path(environ.get("HOME") or Path.home()) / ".config"
    return root / "mgtui" / "config.toml"


class ConfigError(ValueError):
    """The file is not a usable settings file; the message says why."""


def load_config(path: Path | None = None) -> Config:
    """Read the settings file. Missing: the defaults. Unusable: the defaults and a
    message naming the file and the problem."""
    path = config_path() if path is None else path
    try:
        text = read_regular(path)
    except FileNotFoundError:
        return Config(path=path)
    except (OSError, UnicodeDecodeError, ConfigError) as exc:
        return Config(problem=f"{path}: cannot be read ({exc}); using the default keys.", path=path)
    import tomllib  # (here: a start-up with no settings file imports no TOML parser)

    try:
        keymap, warnings = checked_keys(parse_keymap(tomllib.loads(text)))
        return Config(keymap=keymap, path=path,
                      warnings=tuple(f"{path}: {warning}" for warning in warnings))
    except tomllib.TOMLDecodeError as exc:
        problem = f"is not valid TOML ({exc})"
    except RecursionError:  # (tomllib recurses into nested arrays and tables)
        problem = "is nested too deeply to be a settings file"
    except ConfigError as exc:
        problem = str(exc)
    return Config(problem=f"{path}: {problem}; using the default keys.", path=path)


def read_regular(path: Path) -> str:
    """The text of `path` if it is a regular file of at most MAX_BYTES. Opened without
    waiting (a FIFO would wait for a writer) and checked before it is read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError("it is not a regular file")
        if info.st_size > MAX_BYTES:
            raise ConfigError(f"it is {info.st_size:,} bytes, more than a settings file")
        data = os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    return data.decode("utf-8")


def parse_keymap(settings: dict) -> dict[str, str]:
    """The `[keymap]` table of parsed settings, checked: known ids, non-empty key strings."""
    unknown = [name for name in settings if name not in SECTIONS]
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r} (the file has a [keymap] table)")
    keymap = settings.get("keymap", {})
    if not isinstance(keymap, dict):
        raise ConfigError("keymap must be a table: [keymap] then lines like next = \"j\"")
    out = {}
    for binding_id, keys in keymap.items():
        if binding_id not in IDS:
            close = difflib.get_close_matches(binding_id, sorted(IDS), n=1)
            hint = f"did you mean {close[0]!r}?" if close else "the ids are in mgtui/settings/bindings.py"
            raise ConfigError(f"no binding with the id {binding_id!r} ({hint})")
        if not isinstance(keys, str) or not all(k.strip() for k in keys.split(",")):
            raise ConfigError(f"keymap.{binding_id} must be a string of comma-separated keys, "
                              f"like \"j\" or \"j,down\", not {keys!r}")
        out[binding_id] = ",".join(k.strip() for k in keys.split(","))
    return out


def known_key(key: str) -> bool:
    """Whether `key` names a key as Textual does: modifiers (`ctrl+`, `shift+`, `alt+`)
    and a named key (`enter`, `pageup`, `f5`), a printable character (`j`, `G`, `?`),
    or a character by its Unicode name (`question_mark`)."""
    *modifiers, name = key.split("+")
    if not name or any(m not in MODIFIERS for m in modifiers):
        return False
    if name in NAMED_KEYS:
        return True
    if len(name) == 1:
        return name.isprintable() and not name.isspace()
    for spelled in (name.replace("_", " "), name.replace("_", "-")):
        try:
            char = unicodedata.lookup(spelled.upper())
        except KeyError:
            continue
        return len(char) == 1 and char.isprintable() and not char.isspace()
    return False


def checked_keys(keymap: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """`keymap` without the keys it cannot use, and a warning for each: a name that is
    no key, and a key that would take the last way to quit away (`next = "q"` while
    quit is still `q`: it stays quit's)."""
    warnings = []
    out = {}
    for binding_id, keys in keymap.items():
        known = [k for k in keys.split(",") if known_key(k)]
        unknown = [k for k in keys.split(",") if not known_key(k)]
        if unknown:
            names = ", ".join(f'"{inert_line(k)}"' for k in unknown)
            warnings.append(f"keymap.{binding_id}: {names} {'is' if len(unknown) == 1 else 'are'} "
                            "not a key's name (like j, G, ctrl+f, pageup, question_mark); "
                            + ("left out" if known else "its default keys are kept"))
        if known:
            out[binding_id] = ",".join(known)
    quits = set(out.get("quit", BY_ID["quit"].keys).split(","))
    taken = {k for binding_id, keys in out.items() if binding_id != "quit"
             for k in keys.split(",")}
    if quits <= taken:  # no key would be left to quit with
        for binding_id in [b for b in out if b != "quit"]:
            keys = out[binding_id].split(",")
            kept = [k for k in keys if k not in quits]
            if len(kept) == len(keys):
                continue
            names = ", ".join(f'"{k}"' for k in keys if k in quits)
            warnings.append(f"keymap.{binding_id}: {names} would leave no key to quit with: it "
                            f"stays quit's (give quit another key too, like quit = \"ctrl+q\")")
            if kept:
                out[binding_id] = ",".join(kept)
            else:
                del out[binding_id]
    return out, warnings
