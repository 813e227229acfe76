"""The limits and settings a recording starts from, defined once for the command line,
the app, the runner and the recorder. Imports nothing, so the app can read them before
its first paint without loading the recorder."""

from __future__ import annotations

DEFAULT_MAX_NODES = 2_000_000  # nodes a recording makes before it stops (--max-nodes)
DEFAULT_MAX_MEMORY = 8 << 30  # bytes of address space for a recording child (--max-memory)
DEFAULT_TIMEOUT: float | None = None  # seconds a recording may run (--timeout): no limit
# The cyclic collector's generation-0 threshold while a scenario runs: every node is in
# a reference cycle with its `_backward` closure, so a big graph makes the collector
# rescan the heap over and over at Python's default (700). Put back once a node holds a
# big array (`mgtui.recording.sandbox.collect_as_found`): the cycles would keep every
# step's arrays alive until a collection.
GC_GEN0_THRESHOLD = 100_000
