"""What a run in the runner's child is asked to do (`RunSpec`), and the settings the
parent (`mgtui.run.runner`) and the child (`mgtui.run.child`) share, so neither imports
the other for them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from mgtui.defaults import DEFAULT_MAX_MEMORY, DEFAULT_MAX_NODES

FLUSH_EVERY = 0.05  # seconds between the child's stream flushes
UI_FIRST = 5  # `RunSpec.nice` for the app's runs
# The exit code of a child whose stream to the parent the scenario closed (or replaced)
STREAM_CLOSED = 86
# The exit code of a recording process that failed in mgtui's own code (an uncaught
# exception, its traceback in the output; a fork refused): never read as the scenario's
INTERNAL_ERROR = 87


@dataclass(frozen=True)
class RunSpec:
    """What the child runs, as it travels to it (JSON on its stdin)."""

    path: str
    seed: int = 0
    max_nodes: int = DEFAULT_MAX_NODES
    timeout: float | None = None
    max_memory: int | None = DEFAULT_MAX_MEMORY
    argv: tuple[str, ...] = ()
    job: str | None = None  # "module:function" giving the doctor's hooks, in the child
    job_args: dict = field(default_factory=dict)
    # How much lower the child's CPU priority is than this process's: the app's runs
    # (its UI comes before the recording on a busy machine); 0 for the headless modes.
    nice: int = 0
    # The Value class's fields, role -> attribute, where mgtui cannot tell them
    # (`mgtui.recording.shapes`, `--fields`), over those of `[tool.mgtui] fields` in pyproject.toml.
    fields: dict | None = None

    def to_json(self) -> str:
        d = dict(self.__dict__)
        d["argv"] = list(self.argv)
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> RunSpec:
        d = json.loads(text)
        d["argv"] = tuple(d.get("argv", ()))
        return cls(**d)
