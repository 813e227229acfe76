"""A recorded node as code outside the recording reads it while a run goes on (the
gradient doctor's `=`-for-`+=` check, `mgtui.doctor.overwrite_check`, which replays
`_backward` closures from a `before_backward` hook).

- `node_fields(obj)`: the node's fields as the probes see them, keyed by micrograd's
  names (its instance dict, or a view of it for a `__slots__` class or one whose fields
  go by other names); None for an object that is no node of an instrumented class.
- `node_id(fields)`: the node's id in the recording, read from those fields (-1 until
  it is numbered). `NODE_ID` is the key the fields hold it under.

`node_id_reader` makes the recording's own reader of a node's id from the object.
"""

from __future__ import annotations

from typing import Callable

from mgtui.recording.slots_hooks import NodeIds, node_dict as node_fields
from mgtui.recording.store import ID, ID as NODE_ID

__all__ = ["NODE_ID", "node_fields", "node_id", "node_id_reader"]


def node_id(fields) -> int:
    """The id of the node whose fields (`node_fields`) are `fields`; -1 if it has none."""
    return fields.get(NODE_ID, -1)


def node_id_reader(slots_ids: NodeIds) -> Callable[[object], int | None]:
    """`node_id(obj)`: the id of a recorded node, None for anything else; runs no code
    of `obj`'s. (It reads the id as an attribute: asking for `__dict__` would make
    Python build the node's dict, and slow down every later read of its fields.)"""
    plain_types: dict[type, bool] = {}
    slots_get = slots_ids.get
    get_attribute = object.__getattribute__

    def node_id(obj: object) -> int | None:
        cls = type(obj)
        plain = plain_types.get(cls)
        if plain is None:  # no class on the way defines the name: nothing of theirs runs
            plain = plain_types[cls] = not any(ID in vars(k) for k in cls.__mro__)
        nid = None
        if plain:
            try:
                nid = get_attribute(obj, ID)
            except (AttributeError, TypeError):
                nid = None
        if nid is None:
            nid = slots_get(id(obj))
        return nid if type(nid) is int else None

    return node_id
