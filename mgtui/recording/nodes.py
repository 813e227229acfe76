"""A recorded node as code outside the recording reads it while a run goes on (the
gradient doctor's `=`-for-`+=` check, `mgtui.doctor.overwrite_check`, which replays
`_backward` closures from a `before_backward` hook).

- `node_fields(obj)`: the node's fields as the probes see them, keyed by micrograd's
  names (its instance dict, or a view of it for a `__slots__` class or one whose fields
  go by other names); None for an object that is no node of an instrumented class.
- `node_id(fields)`: the node's id in the recording, read from those fields (-1 until
  it is numbered). `NODE_ID` is the key the fields hold it under.
"""

from __future__ import annotations

from mgtui.recording.slots_hooks import node_dict as node_fields
from mgtui.recording.store import ID as NODE_ID

__all__ = ["NODE_ID", "node_fields", "node_id"]


def node_id(fields) -> int:
    """The id of the node whose fields (`node_fields`) are `fields`; -1 if it has none."""
    return fields.get(NODE_ID, -1)
