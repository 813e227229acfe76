"""What a probe of one recording may read and write: `RecordingContext`.

The recorder (`mgtui.recording.recorder`) makes one context per run and hands it to
each probe (`mgtui.recording.probes.Probe`) instead of itself, the way coverage.py's
collector hands its tracers only the data they write into. A probe reads the tables
here and writes into `records`; the one thing it may change otherwise is the reason the
run stops (`stop_reason`, `over_limit`). Starting, stopping and the limits' timers stay
the recorder's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, NoReturn, Protocol

from mgtui.recording.backward_calls import BackwardCalls
from mgtui.recording.probes import Hooks, LineFinder, StopRecording
from mgtui.recording.store import Records

if TYPE_CHECKING:
    from mgtui.recording.naming import Namer
    from mgtui.recording.scenario import Scenario


class NodeAdopter(Protocol):
    """Which objects are nodes of the run's Value classes, and recording one made
    before the run as made now (`mgtui.recording.classes.ValueClasses`)."""

    def is_node(self, obj: object) -> bool: ...

    def adopt(self, node: object) -> None: ...


@dataclass(eq=False)
class RecordingContext:
    """One recording as its probes see it (made by `Recorder`, one per run).

    Read: the scenario, the caller's `hooks`, the `max_nodes` limit, the line table
    (`lines`), the `namer`, the reader of any node's id (`node_id`,
    `mgtui.recording.nodes.node_id_reader`), the `_backward` call recorder (`calls`,
    `mgtui.recording.backward_calls`), the scenario's namespace once it runs
    (`globals`), the code the inline rewrite made (`inlined_codes`: the hooks leave its
    writes to it) and the Value classes (`value_classes`: which objects are nodes, and
    adopting a node made before the run).
    Written: the rows, into `records`; why the run stops, into `stop_reason` (a probe
    sets it through `over_limit`; `Recorder.cancel` sets it from another thread)."""

    scenario: Scenario
    records: Records
    hooks: Hooks
    max_nodes: int
    namer: Namer
    lines: LineFinder
    node_id: Callable[[object], int | None]
    stop_reason: str | None = None
    globals: dict = field(default_factory=dict)
    # Number a node's children made before the recording started, as it is made
    # (`mgtui.record()`: a block that uses parameters made before it).
    adopt_strangers: bool = False
    inlined_codes: dict | None = None  # (None: the run rewrites no code)
    calls: BackwardCalls = field(init=False)
    value_classes: NodeAdopter = field(init=False)

    def __post_init__(self) -> None:
        self.calls = BackwardCalls(self, self.lines.scenario_line)

    def over_limit(self) -> NoReturn:
        """A node is to be made past `max_nodes`, or once the run is to stop: end the
        run there (`StopRecording`), with the reason (too many nodes, unless it has one)."""
        if self.stop_reason is None:
            self.stop_reason = f"more than {self.max_nodes:,} nodes (--max-nodes)"
        raise StopRecording(self.stop_reason)
