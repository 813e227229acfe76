"""What a run in the runner's child is asked to do (`RunSpec`), how a caller asks for one
(`RunOptions`: the defaults of every run decided here, once; `mgtui.run.runner.start_run`
starts it), and the settings the parent (`mgtui.run.runner`) and the child
(`mgtui.run.child`) share, so neither imports the other for them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

from mgtui.defaults import DEFAULT_MAX_MEMORY, DEFAULT_MAX_NODES

FLUSH_EVERY = 0.05  # seconds between the child's stream flushes
UI_FIRST = 5  # `RunSpec.nice` for the app's runs
# The keeper's (`mgtui.run.keeper`), and the parent's to wait for (without importing the
# keeper, which the child runs):
TERM_AFTER = 0.5  # seconds after SIGINT that a scenario still running is sent SIGTERM
KILL_AFTER = 1.0  # ... and SIGKILL
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


def job_reference(make: Callable[..., object]) -> str:
    """How a job travels to the child (`RunSpec.job`): the module and name of the
    function that makes it, from its job arguments, in the child (`mgtui.run.child.job_of`)."""
    return f"{make.__module__}:{make.__qualname__}"


@dataclass(frozen=True)
class RunOptions:
    """How a caller wants its scenario run, whatever the scenario: what the command line,
    the app, the doctor or a comparison knows. The defaults here are every run's."""

    seed: int = 0
    max_nodes: int = DEFAULT_MAX_NODES
    timeout: float | None = None
    max_memory: int | None = DEFAULT_MAX_MEMORY
    argv: tuple[str, ...] = ()  # the script's sys.argv[1:]
    # The Value class's fields where mgtui cannot tell them (`--fields`); None: those of
    # `[tool.mgtui] fields` in the pyproject.toml above the scenario, read in the child.
    fields: dict | None = None
    nice: int = 0  # (`RunSpec.nice`)

    @classmethod
    def for_app(cls, *, seed: int = 0, max_nodes: int = DEFAULT_MAX_NODES,
                timeout: float | None = None, max_memory: int | None = None,
                argv: tuple[str, ...] = ()) -> RunOptions:
        """The app's runs: its UI first (`UI_FIRST`), always within a memory limit (the
        default one where none is given), the fields of the pyproject.toml."""
        return cls(seed=seed, max_nodes=max_nodes, timeout=timeout,
                   max_memory=max_memory or DEFAULT_MAX_MEMORY, argv=tuple(argv), nice=UI_FIRST)

    def spec(self, path: str, job: Callable[..., object] | None = None,
             job_args: dict | None = None) -> RunSpec:
        """What the child is asked to do: run the scenario at `path` so, with the job
        `job` makes from `job_args` (`mgtui.run.child.job_of`), if any."""
        return RunSpec(str(path), seed=self.seed, max_nodes=self.max_nodes,
                       timeout=self.timeout, max_memory=self.max_memory, argv=tuple(self.argv),
                       job=None if job is None else job_reference(job),
                       job_args=dict(job_args or {}), nice=self.nice, fields=self.fields)
