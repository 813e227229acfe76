"""Re-running a scenario for the doctor, with recorder hooks that nudge nodes as they
are made and end the run before a given `_backward` call (`jobs.rerun_hooks`): each run
of a scenario file in a child process (`mgtui.run.runner`, as the job `jobs.rerun`), each run
of a function (`mgtui.check(fn)`) a call of it in this process (`CallReruns`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mgtui.doctor.jobs import job_args, rerun, rerun_hooks
from mgtui.recording.scenario import Scenario
from mgtui.run.spec import RunOptions
from mgtui.trace import Trace


@dataclass
class Reruns:
    """The doctor's re-runs of one scenario, counted."""

    scenario: Scenario
    seed: int
    max_nodes: int
    timeout: float | None
    count: int = 0
    argv: tuple[str, ...] = ()  # the script's sys.argv[1:]
    fields: dict[str, str] | None = None  # the Value class's fields, if named (`mgtui.recording.shapes`)

    @property
    def options(self) -> RunOptions:
        """How each re-run is run: as the first run was."""
        return RunOptions(seed=self.seed, max_nodes=self.max_nodes, timeout=self.timeout,
                          argv=tuple(self.argv), fields=self.fields)

    def __call__(self, nudge: dict[int, float], stop_after: int,
                 on_progress: Callable[[int], None] | None = None) -> Trace:
        """Re-run the scenario with `nudge` added to nodes' data at their creation,
        stopping before `_backward` call number `stop_after + 1`: just before the
        checked pass."""
        return self.pair((nudge,), stop_after, (on_progress,))[0]

    def pair(self, nudges: tuple[dict[int, float], ...], stop_after: int,
             on_progress: tuple[Callable[[int], None] | None, ...],
             restore: dict[int, list[int]] | None = None) -> list[Trace]:
        """Re-runs as `__call__` makes them, one per nudge, side by side (each in a
        process of its own: two cores do a pair in the time of one). `restore` maps a
        number of `_backward` calls to the nodes whose own nudge is taken back then."""
        return self.wait(self.start(nudges, stop_after, on_progress, restore))

    def start(self, nudges: tuple[dict[int, float], ...], stop_after: int,
              on_progress: tuple[Callable[[int], None] | None, ...],
              restore: dict[int, list[int]] | None = None) -> list:
        """The re-runs of `pair`, started: `wait` gives their traces."""
        from mgtui.run.runner import start_run

        runs = []
        for nudge, progress in zip(nudges, on_progress):
            self.count += 1
            runs.append(start_run(self.scenario.path, self.options, job=rerun,
                                  job_args=job_args(nudge, stop_after, restore),
                                  on_progress=progress))
        return runs

    def start_jobs(self, args: list[dict]) -> list:
        """Array re-runs (`mgtui.doctor.array_runs.array_rerun`, one per set of job
        arguments), started side by side: `wait_jobs` gives what each reported."""
        from mgtui.doctor.array_runs import array_rerun
        from mgtui.run.runner import start_run

        runs = []
        for arguments in args:
            self.count += 1
            runs.append(start_run(self.scenario.path, self.options, job=array_rerun,
                                  job_args=arguments))
        return runs

    @staticmethod
    def wait_jobs(runs: list) -> list[object]:
        """What started array re-runs reported (None for one that reported nothing)."""
        results = []
        try:
            for run in runs:
                done = run.wait()
                raise_if_interrupted(done.trace)
                results.append(done.job_result)
        except BaseException:
            for run in runs[len(results) + 1:]:
                run.cancel("the doctor stopped")
                run.wait()
            raise
        return results

    @staticmethod
    def wait_quietly(runs: list) -> None:
        """Stop started re-runs that are no longer wanted, and wait for them to end."""
        for run in runs:
            run.cancel("the doctor stopped")
        for run in runs:
            try:
                run.wait()
            except BaseException:  # noqa: BLE001 - it is being thrown away
                pass

    @staticmethod
    def wait(runs: list) -> list[Trace]:
        """The traces of started re-runs; ctrl+c (or an error) in one stops them all."""
        traces = []
        try:
            for run in runs:
                traces.append(run.wait().trace)
                raise_if_interrupted(traces[-1])
        except BaseException:
            for run in runs[len(traces):]:
                run.cancel("the doctor stopped")
                run.wait()
            raise
        return traces


@dataclass
class CallReruns:
    """The doctor's re-runs of a function, in this process, with the same hooks a
    re-run's child process makes (`Reruns`' interface: the numerical check takes either)."""

    fn: Callable[[], object]
    seed: int
    count: int = 0
    fields: dict[str, str] | None = None  # the Value class's fields, if named (`mgtui.recording.shapes`)

    def __call__(self, nudge: dict[int, float], stop_after: int,
                 on_progress: Callable[[int], None] | None = None) -> Trace:
        return self.pair((nudge,), stop_after, (on_progress,))[0]

    def pair(self, nudges: tuple[dict[int, float], ...], stop_after: int,
             on_progress: tuple[Callable[[int], None] | None, ...] = (),
             restore: dict[int, list[int]] | None = None) -> list[Trace]:
        return self.wait(self.start(nudges, stop_after, on_progress, restore))

    @staticmethod
    def wait(runs: list) -> list[Trace]:
        return list(runs)  # run as they were started: they are traces already

    def start_jobs(self, args: list[dict]) -> list[object]:
        """`Reruns.start_jobs`, each a call of the function, at once."""
        from mgtui.doctor.array_runs import array_rerun
        from mgtui.recording.inprocess import record_call

        import numpy as np

        results = []
        state = np.random.get_state()  # (each job seeds it: the caller's is put back)
        try:
            for kwargs in args:
                self.count += 1
                job = array_rerun(**kwargs)
                record_call(self.fn, seed=self.seed, on_create=job.hooks.on_create,
                            before_backward=job.hooks.before_backward, fields=self.fields)
                results.append(job.result())
        finally:
            np.random.set_state(state)
        return results

    @staticmethod
    def wait_jobs(runs: list) -> list[object]:
        return list(runs)

    @staticmethod
    def wait_quietly(runs: list) -> None:
        pass

    def start(self, nudges: tuple[dict[int, float], ...], stop_after: int,
              on_progress: tuple[Callable[[int], None] | None, ...] = (),
              restore: dict[int, list[int]] | None = None) -> list[Trace]:
        """One re-run per nudge, one after the other, at once (`Reruns.start`: the
        process's own function cannot run in a child)."""
        from mgtui.recording.inprocess import record_call

        traces = []
        for nudge in nudges:
            self.count += 1
            hooks = rerun_hooks(nudge, stop_after, restore)
            traces.append(record_call(self.fn, seed=self.seed, on_create=hooks.on_create,
                                      before_backward=hooks.before_backward,
                                      fields=self.fields))
        return traces


def raise_if_interrupted(trace: Trace) -> None:
    """ctrl+c during a recording ends the whole check, not just that run."""
    error = trace.error
    if error is not None and error.type == "Stopped" and error.message.endswith("interrupted"):
        raise KeyboardInterrupt
