"""How the app loads a trace: a scenario recorded in a child process (its first steps
on screen while it still records, updated as it grows), or a saved trace read, off the
UI thread in a worker; the loading and error screens meanwhile. `TraceLoader` is an
object the `MgtuiApp` holds.
"""

from __future__ import annotations

import asyncio
import sys
import time
from functools import partial
from pathlib import Path

from textual.screen import Screen
from textual.worker import WorkerState

from mgtui.defaults import DEFAULT_MAX_MEMORY
from mgtui.memory import pause_collector, trim
from mgtui.tui.messages import LoadFailed, LoadProgress, TraceGrowing, TraceLoaded
from mgtui.trace import Trace
from mgtui.session.view import prepare as prepare_views

QUICK_RECORDING = 0.05  # seconds: a scenario recorded within this is shown at once
FIRST_STEPS = 0.3  # seconds before the first update of a recording whose first steps show
FIRST_POLL = 0.02  # seconds between looks for a recording's first steps while none show
GROWING_EVERY = 1.0  # seconds between the trace's updates while it still records
GROWING_SHARE = 5  # ... or this many times what the last update cost, if more
LOADING_SCREEN_AFTER = 0.6  # seconds before a recording with no steps yet says so
STEPPING = 0.5  # seconds after the user's last move that a recording's update waits
STEPPING_AT_MOST = 3.0  # ... at most, in all, before the update comes anyway
QUIT_WAIT = 0.3  # seconds quitting waits for a worker still loading (its child is ended)


def showing(screen: Screen, name: str) -> bool:
    """Is `screen` the dialog class `name`? (The dialogs are imported when first needed.)"""
    dialogs = sys.modules.get("mgtui.tui.widgets.dialogs")
    return dialogs is not None and isinstance(screen, getattr(dialogs, name))


def open_saved(path: Path):
    """A saved trace's file, opened to be read (tests slow it down)."""
    return open(path, "rb")


def is_scenario(path: Path) -> bool:
    """A scenario to run, rather than a saved trace to read."""
    from mgtui.trace.saved import is_saved_trace

    return not is_saved_trace(path)


class TraceLoader:
    """The loading of a trace, from the first frame to the last update: an object the
    `MgtuiApp` holds (`app.loader`), which hands it the app's messages about the load. It
    loads the app's `path` (or the trace it was `given`) at its `start_step`, with its
    run settings (`seed`, `max_nodes`, `timeout`, `max_memory`, `argv`), and shows it on
    the app's `debugger` screen.

    Its state: `loading` (a load is under way, its whole trace not yet shown); `run`,
    the runner's `Run` while a recording goes on; `quitting`, the app quits (a
    recording's trace is not wanted); `_position`, the step to open at; `_growing`,
    the trace on screen is one still being recorded, and `_last_shown` the last of
    those (in the loading worker), `_growth_cost` what its update cost the UI; `_quick`,
    a trace recorded (or given) before the first frame, and `first_steps`, the first
    steps of a longer recording are in the first frame."""

    def __init__(self, app, run=None, given: Trace | None = None) -> None:
        """`run` is a `Run` of the app's path already started; `given`, a trace made
        already (`mgtui.show`), shown with no path to run."""
        self.app = app
        self.loading = False
        self.run = run  # the runner's Run while a recording goes on
        if run is not None:
            run.on_progress = self._progress
        self._given = given
        self._last_progress = 0.0
        self._loading_timer = None
        self._position = 0
        self._growing = False  # the trace on screen is one still being recorded
        self._last_shown: Trace | None = None  # the last of those, in the loading worker
        self._growth_cost = 0.0
        self.quitting = False  # the app quits: a recording's trace is not wanted
        self.resume_collector = lambda: None  # (`first_frame` pauses it until the first paint)
        self._quick: Trace | None = None
        self._quick_stopped = ""
        self.first_steps = False  # the first steps of a longer recording are preloaded

    # -- the first frame -------------------------------------------------------------------
    def first_frame(self) -> None:
        """(At the app's load.) Start recording at once, and show a scenario that is
        recorded within QUICK_RECORDING in the first frame. A slower one goes on in its
        child process, and the loading worker takes it from there. The cyclic collector
        waits until the first paint (`MgtuiApp.on_mount` resumes it)."""
        self.resume_collector = pause_collector()
        if self._given is not None:
            self._quick, self._given = self._given, None
            self.loading = True
            self.app.debugger.preload(self._quick, self.app.start_step or 0)
            return
        if self.app.path is None or not is_scenario(self.app.path):
            return
        self.loading = True  # from the start: a preloaded first frame is not the whole trace
        run = self.run or self.start_run(self.app.path)
        budget = min(QUICK_RECORDING, self.app.timeout or QUICK_RECORDING)
        if not run.done_within(budget):
            # a longer one: its first steps are in the first frame all the same
            first_steps = run.snapshot()
            if first_steps is not None and len(first_steps):
                self.first_steps = True
                self.app.debugger.preload(first_steps, self.app.start_step or 0)
            return
        try:
            result = run.wait()
        except Exception:  # noqa: BLE001 - ScenarioLoadError: the worker reports it
            return
        self.run = None
        trace, self._quick_stopped = result.trace, result.message
        self._quick = trace
        self.app.debugger.preload(trace, self.app.start_step or 0)  # in the first frame

    def open_first(self) -> None:
        """Once mounted: show the trace recorded (or given) before the first frame, else
        load the path given, else open the picker."""
        if self.app.path is None and self._quick is None:
            self.app.action_pick()
        elif self._quick is not None:
            trace, self._quick = self._quick, None
            self.loading = True
            self._position = self.app.start_step or 0
            self.app.post_message(TraceLoaded(trace, self.app.path, stopped=self._quick_stopped))
        else:
            self.open_path(self.app.path, position=self.app.start_step or 0)
            if self.first_steps:
                self._growing = True
                self.app.debugger.show_recording("recording…")

    def start_run(self, path: Path):
        from mgtui.run.runner import RunOptions, start_run

        options = RunOptions.for_app(seed=self.app.seed, max_nodes=self.app.max_nodes,
                                     timeout=self.app.timeout, max_memory=self.app.max_memory,
                                     argv=self.app.argv)
        self.run = start_run(path, options, on_progress=self._progress)
        return self.run

    # -- loading, off the UI thread ------------------------------------------------------------
    def open_path(self, path: Path, position: int = 0, reload: bool = False) -> None:
        self.app.path = Path(path)
        self.loading = True
        self._growing = False  # the first steps of this load are not on screen yet
        self._position = position
        if self.app.debugger.trace is None:
            self.app.debugger.show_loading(self.app.path)
        # A quick load never shows the loading screen: it would only cost a frame.
        self._loading_timer = self.app.set_timer(LOADING_SCREEN_AFTER, self._show_loading)
        self.app.run_worker(partial(self._record, self.app.path, reload), name="record",
                            group="load", exclusive=True, thread=True)

    def _show_loading(self) -> None:
        # not once steps are on screen (the first steps of a recording, shown at once, or
        # an update): the user may be stepping, and the screen would take their keys
        if self.loading and not self._growing and not self.app.is_showing("LoadingScreen"):
            from mgtui.tui.widgets.dialogs import LoadingScreen

            self.app.push_screen(LoadingScreen(self.app.path))

    async def _hide_loading(self) -> None:
        self.loading = False
        if self._loading_timer is not None:
            self._loading_timer.stop()
            self._loading_timer = None
        if self.app.is_showing("LoadingScreen"):
            await self.app.pop_screen()

    def _record(self, path: Path, reload: bool) -> None:
        """Record (in a child process) or read the trace, off the UI thread, and report
        it as a message."""
        from mgtui.errors import ScenarioLoadError

        try:
            if is_scenario(path):
                run = self.run if self.run is not None else self.start_run(path)
                try:
                    result = self._steps_while_recording(run, path, show=not reload)
                finally:
                    self.run = None
                if self.quitting:
                    return
                trace, stopped = result.trace, result.message
            else:
                trace, stopped = self._read_saved(path), ""
            # here, not on the first backward step; from those shown while it recorded;
            # and the final state, so that `G` costs a copy of it
            older = self._last_shown if is_scenario(path) else None
            trace.index.build_indexes(older=None if older is None else older.index, final=True)
            self._last_shown = None
            prepare_views(trace, (self._position, self.app.debugger.position, 0, len(trace) + 1))
            self.app.post_message(TraceLoaded(trace, path, reload, stopped))
        except ScenarioLoadError as exc:
            self.app.post_message(LoadFailed(path, exc.message, exc.detail))
        except BaseException as exc:  # noqa: BLE001 - shown to the user, never a traceback
            self.app.post_message(LoadFailed(path, f"{path}: {type(exc).__name__}: {exc}"))
        from mgtui.tui.widgets.source_view import highlighter_ready, warm_highlighter

        if not highlighter_ready():
            # pygments builds its lexer on first use: do that after the first paint
            try:
                warm_highlighter()
                self.app.call_from_thread(self.app.debugger.side_tabs.redraw_source)
            except Exception:  # noqa: BLE001 - the app has gone; plain source is fine
                pass

    def _read_saved(self, path: Path) -> Trace:
        """Read a saved trace; a binary one is shown as soon as its first steps have
        been read (as a recording's are), the rest read behind them."""
        from mgtui.trace import binary
        from mgtui.trace.export import READ_ERRORS, load, load_error
        from mgtui.trace.load_limits import LoadLimits

        # (within --max-nodes and --max-memory, as a recording is)
        limits = LoadLimits(self.app.max_nodes, self.app.max_memory or DEFAULT_MAX_MEMORY)
        if not (path.is_file() and binary.is_trace_file(path)):
            # (JSON, or the error for a path that is not a file)
            return load(path, max_nodes=limits.max_nodes, max_memory=limits.max_memory)
        shown: list[Trace] = []

        def first_steps(decoder) -> None:
            b = decoder.builder
            if shown or b is None or not b.event_count or not b.consistent:
                return
            trace = b.build()
            trace.index.build_indexes()
            prepare_views(trace, (self._position, 0))
            shown.append(trace)
            self.app.post_message(TraceGrowing(trace, path))

        try:
            with open_saved(path) as f:
                return binary.read(f, first_steps, limits)
        except READ_ERRORS as exc:
            raise load_error(path, exc) from None

    def _steps_while_recording(self, run, path: Path, show: bool):
        """Wait for the run, showing the trace recorded so far every GROWING_EVERY
        seconds, so its first steps can be stepped through while it still records."""
        shown = None
        # steps on screen already (the first frame's, or the last run's): the first update
        # in a moment; else the first steps as soon as there are any (the child may still
        # be starting when the app is)
        wait = FIRST_STEPS if self.first_steps or self.app.debugger.trace is not None else FIRST_POLL
        self._last_shown = None
        self._growth_cost = 0.0  # seconds the UI thread spent on the last update
        held = 0.0  # seconds the next update has waited for the user
        while not run.done_within(wait):
            pause = self._user_stepping()
            if pause and held < STEPPING_AT_MOST:
                held += pause
                wait = pause
                continue
            held = 0.0
            start = time.perf_counter()
            trace = run.snapshot() if show else None
            if trace is not None and len(trace) > (len(shown) if shown else 0):
                trace.index.build_indexes(older=None if shown is None else shown.index,
                                          users=False)  # from the last one's
                prepare_views(trace, (self._position, self.app.debugger.position, 0))
                shown = self._last_shown = trace
                self.app.post_message(TraceGrowing(trace, path))
            # Updates take at most a fifth of the time, so that the user's own steps
            # stay quick while a big scenario records (moons: 0.1-0.3 s an update).
            cost = time.perf_counter() - start + self._growth_cost
            wait = max(GROWING_EVERY, GROWING_SHARE * cost) if shown is not None or \
                wait != FIRST_POLL else FIRST_POLL
        return run.wait()

    def _user_stepping(self) -> float:
        """How long the next update of a recording should wait (0: not at all) because
        the user is stepping through what is on screen: an update costs the UI a frame
        or more (moons: 0.1-0.3 s), felt as a slow key. Not when they are at the last
        step shown, where they wait for more, and not while nothing is shown."""
        d = self.app.debugger
        on_screen = d.trace
        since = time.monotonic() - d.moved_at
        if on_screen is None or since >= STEPPING or d.position + 1 >= len(on_screen):
            return 0.0
        return STEPPING - since

    async def trace_growing(self, message: TraceGrowing) -> None:
        if not self.loading or message.path != self.app.path or not self.app.is_running:
            return  # the whole trace is here already, another file is loading, or it quits
        if self._loading_timer is not None:
            self._loading_timer.stop()
        if self.app.is_showing("LoadingScreen"):
            await self.app.pop_screen()
        d = self.app.debugger
        started = time.perf_counter()
        if not self._growing:
            await self.app.clear_to_debugger()  # the picker or an error screen: not the user's
            d.load_trace(message.trace, self._position)
            self._growing = True
        elif self.app.is_running:  # (not while it quits: the panes are going)
            d.grow_trace(message.trace, wanted=self._position)
        doing = "recording" if is_scenario(message.path) else "loading"
        d.show_recording(f"{doing}… {len(message.trace):,} steps")
        self._growth_cost = time.perf_counter() - started

    def _progress(self, nodes: int) -> None:
        now = time.monotonic()
        if now - self._last_progress > 0.1:
            self._last_progress = now
            self.app.post_message(LoadProgress(nodes))

    def load_progress(self, message: LoadProgress) -> None:
        if self.app.is_showing("LoadingScreen"):
            self.app.screen.progress(message.nodes)

    async def trace_loaded(self, message: TraceLoaded) -> None:
        if not self.app.is_running:
            return  # it quits: the panes are going
        await self._hide_loading()
        d, say = self.app.debugger, self.app.say
        d.show_recording("")
        grown, self._growing = self._growing, False
        if not grown:
            await self.app.clear_to_debugger()
        if not self.app.is_running:
            return
        trace = message.trace
        if message.reload and d.trace is not None:
            keep = d.selected
            if keep is not None and keep >= trace.node_count:
                keep = None
            d.load_trace(trace, d.position, select=keep)
            say(f"Reloaded {message.path.name}: {len(trace):,} steps.", timeout=3)
        elif grown:
            # the first steps were shown while it recorded: stay where the user is
            d.grow_trace(trace, wanted=self._position)
        elif trace is not d.trace:  # (a quick trace is on screen already)
            d.load_trace(trace, self._position)
        if message.stopped:
            say(f"Recording stopped: {message.stopped}. The trace up to there is shown.",
                severity="warning", timeout=6)
        elif trace.error is not None:
            say(f"The scenario stopped: {trace.places.error_text()}. The trace up to there is shown; "
                "the error is the last step.", severity="warning", timeout=6)
        self.app.refresh_bindings()
        self.app.call_after_refresh(trim)  # what loading it freed goes back to the system

    async def load_failed(self, message: LoadFailed) -> None:
        await self._hide_loading()
        if self.app.is_showing("ErrorScreen"):
            await self.app.pop_screen()
        from mgtui.tui.widgets.dialogs import ErrorScreen

        await self.app.push_screen(ErrorScreen(message.path, message.message, message.detail))

    def cancel(self) -> None:
        """A recording in progress is stopped (ctrl+c)."""
        run = self.run
        if run is not None:
            run.cancel("cancelled with ctrl+c")

    async def stop(self, now: bool = False) -> None:
        """Stop a recording in progress and the doctor, and wait for their workers.
        `now`: the scenario's process is ended at once (the app quits), not asked to
        stop (SIGINT, then SIGTERM and SIGKILL if it goes on: `mgtui.run.keeper`)."""
        run = self.run
        if now and run is not None:
            run.end_now("the debugger was closed")
        self.cancel()
        for worker in list(self.app.workers):
            if worker.group == "checks":
                worker.cancel()
        for worker in list(self.app.workers):
            if worker.group in ("load", "checks") and worker.state == WorkerState.RUNNING:
                try:  # (quitting, a moment at most: what is left ends with the app)
                    await asyncio.wait_for(worker.wait(), QUIT_WAIT if now else None)
                except Exception:  # noqa: BLE001 - cancelled, failed, or still going
                    pass

    def stop_now(self) -> None:
        """After the app has ended, however it ended: a child still recording is ended,
        with every process it started."""
        run = self.run
        if run is not None and run.started:
            run.end_now("the debugger was closed")
            try:
                run.wait()
            except Exception:  # noqa: BLE001 - nothing is shown any more
                pass
