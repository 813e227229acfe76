"""The Textual app: loads a scenario (or a saved trace) in a worker, then hands the trace
to the debugger screen. `run_app` is what `mgtui FILE` calls."""

from __future__ import annotations

import gc
import io
import sys
import threading
import time
from functools import partial
from pathlib import Path

from textual import work
from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.worker import WorkerState

from mgtui.bindings import APP_KEYS, palette_rows, with_panes
from mgtui.config import load_config
from mgtui.messages import (
    ChecksDone,
    ChecksFailed,
    ChecksProgress,
    LoadFailed,
    LoadProgress,
    OpenScenario,
    RunChecks,
    TraceLoaded,
)
from mgtui.trace import Trace
from mgtui.widgets.debugger import DebuggerScreen
from mgtui.widgets.keys import bindings_of
from mgtui.widgets.source_view import highlighter_ready, warm_highlighter

# mgtui.recorder.DEFAULT_MAX_NODES, without importing the recorder before the first paint
# (a test checks they agree).
DEFAULT_MAX_NODES = 2_000_000


QUICK_RECORDING = 0.2  # seconds: a scenario recorded within this is shown at once
QUICK_STOPPED = "taking longer than a moment: recording again with progress"


class ChecksCancelled(BaseException):
    """Raised from the doctor's progress callback to stop it when its worker is cancelled."""


def showing(screen: Screen, name: str) -> bool:
    """Is `screen` the dialog class `name`? (The dialogs are imported when first needed.)"""
    dialogs = sys.modules.get("mgtui.widgets.dialogs")
    return dialogs is not None and isinstance(screen, getattr(dialogs, name))


def go_to_provider():
    """The palette's go-to provider, imported when the palette first opens."""
    from mgtui.widgets.palette import GoToProvider

    return GoToProvider


class MgtuiApp(App[int]):
    """The debugger. `path` is a scenario, a saved `.json` trace, or None for the picker."""

    CSS_PATH = Path(__file__).with_name("mgtui.tcss")
    TITLE = "mgtui"
    COMMANDS = App.COMMANDS | {go_to_provider}
    BINDINGS = bindings_of(APP_KEYS)

    def __init__(self, path: Path | None = None, *, step: int | None = None, seed: int = 0,
                 max_nodes: int = DEFAULT_MAX_NODES, timeout: float | None = None) -> None:
        super().__init__()
        self.path = Path(path) if path is not None else None
        self.start_step = step
        self.seed = seed
        self.max_nodes = max_nodes
        self.timeout = timeout
        self.loading = False
        self._recorder = None  # the Recorder while one runs
        self._last_progress = 0.0
        self._loading_timer = None
        self._idle = threading.Event()  # set while no recording runs
        self._idle.set()
        self._position = 0
        self._checks_for: Trace | None = None  # the trace the doctor ran (or runs) on
        self.config = load_config()
        self.keymap = self.config.keymap  # the user's keys, by binding id
        self.set_keymap(with_panes(self.keymap))
        self.debugger = DebuggerScreen(self.keymap)

    def get_default_screen(self) -> Screen:
        return self.debugger

    def on_load(self) -> None:
        """Record a quick scenario before the first paint, so the first screen already
        shows it. One that takes longer than QUICK_RECORDING is stopped and recorded
        again in a worker, with progress and ctrl+c (so its code runs twice)."""
        self._quick: Trace | None = None
        if self.path is None or self.path.suffix == ".json" or not self.path.is_file():
            return
        from mgtui.recorder import Recorder, ScenarioLoadError, load_scenario

        try:
            scenario = load_scenario(self.path)
        except ScenarioLoadError:
            return  # the worker reports it, on the error screen
        budget = min(QUICK_RECORDING, self.timeout or QUICK_RECORDING)
        recorder = Recorder(scenario, seed=self.seed, max_nodes=self.max_nodes)
        timer = threading.Timer(budget, recorder.cancel, (QUICK_STOPPED,))
        timer.start()
        try:
            trace = recorder.run()
        finally:
            timer.cancel()
        if recorder.stop_reason != QUICK_STOPPED:
            self._quick = trace
            self.debugger.preload(trace, self.start_step or 0)  # in the first frame

    def on_mount(self) -> None:
        if self.config.problem:
            self.notify(self.config.problem, title="mgtui settings", severity="error",
                        timeout=10)
        if self.path is None:
            self.action_pick()
        elif self._quick is not None:
            trace, self._quick = self._quick, None
            self.loading = True
            self._position = self.start_step or 0
            self.post_message(TraceLoaded(trace, self.path))
        else:
            self.open_path(self.path, position=self.start_step or 0)

    # -- loading -----------------------------------------------------------------------------
    def open_path(self, path: Path, position: int = 0, reload: bool = False) -> None:
        self.path = Path(path)
        self.loading = True
        self._position = position
        if self.debugger.trace is None:
            self.debugger.show_loading(self.path)
        # A quick load never shows the loading screen: it would only cost a frame.
        self._loading_timer = self.set_timer(0.25, self._show_loading)
        self.record(self.path, reload)

    def _show_loading(self) -> None:
        if self.loading and not showing(self.screen, "LoadingScreen"):
            from mgtui.widgets.dialogs import LoadingScreen

            self.push_screen(LoadingScreen(self.path))

    async def _hide_loading(self) -> None:
        self.loading = False
        if self._loading_timer is not None:
            self._loading_timer.stop()
            self._loading_timer = None
        if showing(self.screen, "LoadingScreen"):
            await self.pop_screen()

    @work(thread=True, exclusive=True, group="load")
    def record(self, path: Path, reload: bool) -> None:
        """Record (or read) the trace off the UI thread and report it as a message."""
        self._idle.clear()
        from mgtui.recorder import Recorder, ScenarioLoadError, load_scenario

        try:
            if path.suffix == ".json":
                from mgtui.export import load

                trace = load(path)
            else:
                scenario = load_scenario(path)
                self._recorder = Recorder(scenario, seed=self.seed, max_nodes=self.max_nodes,
                                          timeout=self.timeout, on_progress=self._progress)
                try:
                    trace = self._recorder.run()
                finally:
                    self._recorder = None
            # build the derived indexes here, not on the first backward step
            trace.build_indexes()
            if trace.node_count > 20_000:
                # The scenario's Values are cyclic garbage now (closures hold their
                # `out`); free them here, or a full collection on the UI thread pauses.
                gc.collect()
            self.post_message(TraceLoaded(trace, path, reload))
        except ScenarioLoadError as exc:
            self.post_message(LoadFailed(path, exc.message, exc.detail))
        except BaseException as exc:  # noqa: BLE001 - shown to the user, never a traceback
            self.post_message(LoadFailed(path, f"{path}: {type(exc).__name__}: {exc}"))
        finally:
            self._idle.set()
        if not highlighter_ready():
            # pygments builds its lexer on first use: do that after the first paint
            try:
                warm_highlighter()
                self.call_from_thread(self.debugger.redraw_source)
            except Exception:  # noqa: BLE001 - the app has gone; plain source is fine
                pass

    def _progress(self, nodes: int) -> None:
        now = time.monotonic()
        if now - self._last_progress > 0.1:
            self._last_progress = now
            self.post_message(LoadProgress(nodes))

    # -- the gradient doctor ------------------------------------------------------------------
    def on_run_checks(self, message: RunChecks) -> None:
        """Run the doctor on the scenario on screen, once per trace, in a worker."""
        trace = self.debugger.trace
        if trace is None or self.path is None or self.loading:
            return
        if self.path.suffix == ".json":
            self.debugger.post_message(ChecksFailed(
                "The gradient doctor re-runs the scenario, and a saved trace has no code to "
                "run: open the scenario's .py file."))
            return
        if self._checks_for is trace:
            return  # done, or running
        self._checks_for = trace
        self.debugger.post_message(ChecksProgress(0, 0, "recording"))
        self.run_checks(self.path, trace)

    @work(thread=True, exclusive=True, group="checks")
    def run_checks(self, path: Path, trace: Trace) -> None:
        """The doctor's progress and its report go to the debugger screen as messages."""
        from textual.worker import get_current_worker

        from mgtui.doctor import diagnose
        from mgtui.recorder import ScenarioLoadError

        worker, screen = get_current_worker(), self.debugger
        last = [0.0]

        def progress(done: int, total: int, phase: str) -> None:
            if worker.is_cancelled:
                raise ChecksCancelled()
            now = time.monotonic()
            if now - last[0] > 0.1:
                last[0] = now
                screen.post_message(ChecksProgress(done, total, phase))

        try:
            report = diagnose(path, seed=self.seed, max_nodes=self.max_nodes,
                              timeout=self.timeout, on_progress=progress)
        except ChecksCancelled:
            return
        except ScenarioLoadError as exc:
            screen.post_message(ChecksFailed(exc.message))
            return
        except Exception as exc:  # noqa: BLE001 - shown to the user, never a traceback
            screen.post_message(ChecksFailed(f"the doctor stopped: {type(exc).__name__}: {exc}"))
            return
        if not worker.is_cancelled and screen.trace is trace:
            screen.post_message(ChecksDone(report, path))

    def on_checks_failed(self, message: ChecksFailed) -> None:
        """(Heard after the debugger screen shows it.) The doctor may run again."""
        self._checks_for = None

    def on_load_progress(self, message: LoadProgress) -> None:
        if showing(self.screen, "LoadingScreen"):
            self.screen.progress(message.nodes)

    async def _clear_to_debugger(self) -> None:
        while len(self.screen_stack) > 1 and self.screen is not self.debugger:
            await self.pop_screen()

    async def on_trace_loaded(self, message: TraceLoaded) -> None:
        await self._hide_loading()
        await self._clear_to_debugger()
        trace = message.trace
        if message.reload and self.debugger.trace is not None:
            keep = self.debugger.selected
            if keep is not None and keep >= trace.node_count:
                keep = None
            self.debugger.load_trace(trace, self.debugger.position, select=keep)
            self.notify(f"Reloaded {message.path.name}: {len(trace):,} steps.", timeout=3)
        elif trace is not self.debugger.trace:  # (a quick trace is on screen already)
            self.debugger.load_trace(trace, self._position)
        if trace.error is not None:
            self.notify(f"The scenario stopped: {trace.error}. The trace up to there is "
                        "shown; the error is the last step.", severity="warning", timeout=6)
        self.refresh_bindings()

    async def on_load_failed(self, message: LoadFailed) -> None:
        await self._hide_loading()
        if showing(self.screen, "ErrorScreen"):
            await self.pop_screen()
        from mgtui.widgets.dialogs import ErrorScreen

        await self.push_screen(ErrorScreen(message.path, message.message, message.detail))

    def on_open_scenario(self, message: OpenScenario) -> None:
        self.open_path(message.path)

    def action_cancel_loading(self) -> None:
        recorder = self._recorder
        if recorder is not None:
            recorder.cancel("cancelled with ctrl+c")

    # -- app-wide actions ------------------------------------------------------------------------
    def action_reload(self) -> None:
        if self.path is None or self.loading:
            return
        self.open_path(self.path, position=self.debugger.position,
                       reload=self.debugger.trace is not None)

    def action_pick(self) -> None:
        from mgtui.bundled import bundled, title_of
        from mgtui.widgets.dialogs import PickerScreen

        self.push_screen(PickerScreen([(name, path, title_of(path)) for name, path in bundled()]))

    async def action_quit(self) -> None:
        await self.stop_loading()
        self.exit(0)

    async def stop_loading(self) -> None:
        """Cancel a recording in progress and wait for its thread, so that the recorder
        has put sys.stdout back before the app restores its own."""
        self.action_cancel_loading()
        for worker in list(self.workers):
            if worker.group == "checks":
                worker.cancel()
        for worker in list(self.workers):
            if worker.group in ("load", "checks") and worker.state == WorkerState.RUNNING:
                try:
                    await worker.wait()
                except Exception:  # noqa: BLE001 - cancelled or failed: it has stopped
                    pass

    def stop_recording_now(self) -> None:
        """After the app has ended, however it ended: stop a recording still running and
        wait for it, then make sure sys.stdout and sys.stderr are the real ones again
        (the recorder swaps them while it runs, and restores what it found)."""
        self.action_cancel_loading()
        self._idle.wait(timeout=10)
        if sys.stdout is not sys.__stdout__ and not isinstance(sys.stdout, io.TextIOWrapper):
            sys.stdout = sys.__stdout__
        if sys.stderr is not sys.__stderr__ and not isinstance(sys.stderr, io.TextIOWrapper):
            sys.stderr = sys.__stderr__

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_loading":
            return self.loading
        if action == "reload":
            return None if self.path is None or self.loading else True
        return True

    def get_system_commands(self, screen: Screen):
        """Textual's own commands, then the debugger's from its table of keys."""
        yield from super().get_system_commands(screen)
        if screen is not self.debugger or self.debugger.trace is None:
            return
        for title, keys, action in palette_rows(self.keymap):
            yield SystemCommand(title, keys, partial(self.debugger.run_action, action))


def run_app(path: Path | None, step: int | None = None, seed: int = 0,
            max_nodes: int = DEFAULT_MAX_NODES, timeout: float | None = None) -> int:
    """Run the debugger until the user quits. Returns the exit code."""
    app = MgtuiApp(path, step=step, seed=seed, max_nodes=max_nodes, timeout=timeout)
    try:
        code = app.run()
    finally:
        app.stop_recording_now()
    return code if isinstance(code, int) else 0
