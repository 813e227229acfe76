"""Textual `Binding`s from the table of keys in `mgtui.settings.bindings` (which is plain data)."""

from __future__ import annotations

from typing import Iterable

from textual.binding import Binding

from mgtui.settings.bindings import Key


def bindings_of(keys: Iterable[Key]) -> list[Binding]:
    """One `Binding` per entry that has keys, with the entry's id for the user keymap."""
    return [Binding(k.keys, k.action, k.footer, show=k.show, key_display=k.display,
                    priority=k.priority, id=k.id) for k in keys if k.keys]
