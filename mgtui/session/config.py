"""The user's settings file, `$XDG_CONFIG_HOME/mgtui/config.toml` (by default
`~/.config/mgtui/config.toml`). Today it holds one table, the keymap:

    [keymap]
    next = "j"            # a binding id from mgtui.session.bindings = comma-separated keys
    prev = "k,backspace"

A file that cannot be used gives one message and the defaults, never an exception.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from mgtui.session.bindings import IDS

SECTIONS = ("keymap",)


@dataclass(frozen=True)
class Config:
    keymap: dict[str, str] = field(default_factory=dict)  # binding id -> keys
    problem: str = ""  # why the file was not used ("" when it was, or there is none)
    path: Path | None = None


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
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config(path=path)
    except (OSError, UnicodeDecodeError) as exc:
        return Config(problem=f"{path}: cannot be read ({exc}); using the default keys.", path=path)
    try:
        return Config(keymap=parse_keymap(tomllib.loads(text)), path=path)
    except tomllib.TOMLDecodeError as exc:
        problem = f"is not valid TOML ({exc})"
    except ConfigError as exc:
        problem = str(exc)
    return Config(problem=f"{path}: {problem}; using the default keys.", path=path)


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
            hint = f"did you mean {close[0]!r}?" if close else "the ids are in mgtui/session/bindings.py"
            raise ConfigError(f"no binding with the id {binding_id!r} ({hint})")
        if not isinstance(keys, str) or not all(k.strip() for k in keys.split(",")):
            raise ConfigError(f"keymap.{binding_id} must be a string of comma-separated keys, "
                              f"like \"j\" or \"j,down\", not {keys!r}")
        out[binding_id] = ",".join(k.strip() for k in keys.split(","))
    return out
