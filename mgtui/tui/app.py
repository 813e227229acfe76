"""The Textual app: loads a scenario (or a saved trace) with the loader it holds
(`mgtui.tui.app_loading`), which hands the trace to the debugger screen; runs the gradient
doctor on request. `run_app` is what `mgtui FILE` calls."""

from __future__ import annotations

import os
import time
from functools import partial
from pathlib import Path

from textual import work
from textual.app import App, SystemCommand
from textual.driver import Driver
from textual.screen import Screen

# (the loading's timings are read where they live, in mgtui.tui.app_loading: patch them there)
from mgtui.tui.app_loading import (
    FIRST_POLL,
    FIRST_STEPS,
    GROWING_EVERY,
    GROWING_SHARE,
    LOADING_SCREEN_AFTER,
    QUICK_RECORDING,
    STEPPING,
    STEPPING_AT_MOST,
    TraceLoader,
    is_scenario,
    showing,
)
from mgtui.settings.bindings import APP_KEYS, palette_rows, with_panes
from mgtui.settings.config import load_config
from mgtui.memory import return_freed_memory
from mgtui.safe import inert
from mgtui.tui.screen_diff import diffing
from mgtui.tui.textual_private import draw_colour_systems_apart
from mgtui.tui.messages import (ChecksDone, ChecksFailed, ChecksProgress, LoadFailed, LoadProgress,
                                OpenScenario, RunChecks, TraceGrowing, TraceLoaded)
from mgtui.trace import Trace
from mgtui.defaults import DEFAULT_MAX_NODES
from mgtui.tui.widgets.debugger import DebuggerScreen
from mgtui.tui.widgets.keys import bindings_of

__all__ = ["DEFAULT_MAX_NODES", "FIRST_POLL", "FIRST_STEPS", "GROWING_EVERY", "GROWING_SHARE",
           "LOADING_SCREEN_AFTER", "QUICK_RECORDING", "STEPPING", "STEPPING_AT_MOST",
           "ChecksCancelled", "MgtuiApp", "is_scenario", "run_app", "showing"]



class ChecksCancelled(BaseException):
    """Raised from the doctor's progress callback to stop it when its worker is cancelled."""


def go_to_provider():
    """The palette's go-to provider, imported when the palette first opens."""
    from mgtui.tui.widgets.palette import GoToProvider

    return GoToProvider


class MgtuiApp(App[int]):
    """The debugger. `path` is a scenario, a saved `.json` trace, or None for the picker."""

    CSS_PATH = Path(__file__).with_name("mgtui.tcss")
    TITLE = "mgtui"
    COMMANDS = App.COMMANDS | {go_to_provider}
    BINDINGS = bindings_of(APP_KEYS)

    def __init__(self, path: Path | None = None, *, step: int | None = None, seed: int = 0,
                 max_nodes: int = DEFAULT_MAX_NODES, timeout: float | None = None,
                 max_memory: int | None = None, run=None, argv: tuple[str, ...] = (),
                 trace: Trace | None = None) -> None:
        """`run` is a `mgtui.run.runner.Run` of `path` already started (the command line
        starts it before it imports the app, so the two start up side by side). `argv`
        is the script's `sys.argv[1:]`, for every run and reload. `trace` is one made
        already (`mgtui.show`): it is shown, with no path to run or reload."""
        super().__init__()
        draw_colour_systems_apart()  # (a process may draw for terminals of several kinds)
        self.path = Path(path) if path is not None else None
        self.lesson_dir: Path | None = None  # `mgtui lessons/`: what `o` and the picker list
        self.start_step = step
        self.seed = seed
        self.max_nodes = max_nodes
        self.timeout = timeout
        self.max_memory = max_memory
        self.argv = tuple(argv)
        self.loader = TraceLoader(self, run, given=trace)  # the trace, recorded or read
        self._checks_for: Trace | None = None  # the trace the doctor ran (or runs) on
        self.config = load_config()
        self.keymap = self.config.keymap  # the user's keys, by binding id
        self.set_keymap(with_panes(self.keymap))
        self.debugger = DebuggerScreen(self.keymap)

    @property
    def driver_class(self) -> type[Driver]:
        return self._driver_class

    @driver_class.setter
    def driver_class(self, driver_class: type[Driver]) -> None:
        """Whatever the driver (a terminal's, `mgtui serve`'s), its writes send only the
        cells that change (mgtui/tui/screen_diff.py): the bytes a step costs over SSH.
        MGTUI_SCREEN_DIFF=0 in the environment sends what Textual writes, as it is."""
        keep = os.environ.get("MGTUI_SCREEN_DIFF", "1") == "0"
        self._driver_class = driver_class if keep else diffing(driver_class)

    def get_default_screen(self) -> Screen:
        return self.debugger

    @property
    def loading(self) -> bool:
        """A load is under way (its whole trace not yet shown)."""
        return self.loader.loading

    def on_load(self) -> None:
        self.loader.first_frame()

    def on_mount(self) -> None:
        self.call_after_refresh(self.loader.resume_collector)  # paused since on_load
        # A big trace, built again as it grows, must not stay twice: set once the first
        # frame is drawn (it loads ctypes and the C library, ~2 ms, that frame can do
        # without; a trace recorded before it is a quick one, and small).
        self.call_after_refresh(return_freed_memory)
        if self.config.problem:  # (its text quotes the user's file: never markup)
            self.notify(inert(self.config.problem), title="mgtui settings", severity="error",
                        timeout=10, markup=False)
        if self.config.warnings:
            self.notify(inert("\n".join(self.config.warnings)), title="mgtui settings",
                        severity="warning", timeout=10, markup=False)
        self.loader.open_first()

    def on_unmount(self) -> None:
        self.loader.resume_collector()  # (an app that ends before its first paint)

    # -- the loading (`TraceLoader`) and the screens over the debugger -----------------------
    async def on_trace_growing(self, message: TraceGrowing) -> None:
        await self.loader.trace_growing(message)

    async def on_trace_loaded(self, message: TraceLoaded) -> None:
        await self.loader.trace_loaded(message)

    async def on_load_failed(self, message: LoadFailed) -> None:
        await self.loader.load_failed(message)

    def on_load_progress(self, message: LoadProgress) -> None:
        self.loader.load_progress(message)

    def on_open_scenario(self, message: OpenScenario) -> None:
        self.loader.open_path(message.path)

    def action_cancel_loading(self) -> None:
        """ctrl+c: a recording in progress is stopped."""
        self.loader.cancel()

    def stop_recording_now(self) -> None:
        """After the app has ended, however it ended: a child still recording is ended."""
        self.loader.stop_now()

    def is_showing(self, name: str) -> bool:
        """Is the dialog `name` on top? (Never while the app shuts down: its screen stack
        is empty then, and a late message from the loading worker must not fail on it.)"""
        return bool(self.screen_stack) and showing(self.screen, name)

    _showing = is_showing  # (the name the served app calls)

    async def clear_to_debugger(self) -> None:
        """Close the screens over the debugger (the picker, an error, the loading screen)."""
        while len(self.screen_stack) > 1 and self.screen is not self.debugger:
            await self.pop_screen()

    _clear_to_debugger = clear_to_debugger  # (the name the served app calls)

    # -- the gradient doctor ------------------------------------------------------------------
    def on_run_checks(self, message: RunChecks) -> None:
        """Run the doctor on the scenario on screen, once per trace, in a worker."""
        trace = self.debugger.trace
        if trace is not None and self.path is None and not self.loading:
            self.debugger.post_message(ChecksFailed(
                "The gradient doctor re-runs a scenario, and this graph came from your own "
                "code (mgtui.show): check it there with mgtui.check(a function that builds "
                "it), or open a scenario file."))
            return
        if trace is None or self.path is None or self.loading:
            return
        if not is_scenario(self.path):
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
        from mgtui.errors import ScenarioLoadError

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

    def say(self, text: str, *, severity: str = "information", timeout: float = 4) -> None:
        """A notification: scenario text in it is shown inert, never read as markup."""
        self.notify(inert(text), severity=severity, timeout=timeout, markup=False)

    # -- app-wide actions ------------------------------------------------------------------------
    def action_reload(self) -> None:
        if self.path is None or self.loading:
            return
        self.loader.open_path(self.path, position=self.debugger.position,
                              reload=self.debugger.trace is not None)

    def action_pick(self) -> None:
        """The picker of the lesson directory's files (`mgtui lessons/`), else of the
        bundled scenarios; escape goes back to the trace on screen, if there is one."""
        from mgtui.tui.widgets.dialogs import PickerScreen

        if self.lesson_dir is not None:
            from mgtui.run.lessons import lessons_in

            found = [(f.name, f.path, f.title) for f in lessons_in(self.lesson_dir)]
        else:
            from mgtui.run.bundled import bundled, title_of

            found = [(name, path, title_of(path)) for name, path in bundled()]
        self.push_screen(PickerScreen(found, closable=self.debugger.trace is not None))

    async def action_quit(self) -> None:
        """Quit, always and at once: a recording's process is ended, not asked to stop,
        and its trace is not built."""
        self.loader.quitting = True
        await self.loader.stop(now=True)
        self.exit(0)

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
            max_nodes: int = DEFAULT_MAX_NODES, timeout: float | None = None,
            max_memory: int | None = None, run=None, argv: tuple[str, ...] = (),
            lesson_dir: Path | None = None, quiz: bool = False) -> int:
    """Run the debugger until the user quits. Returns the exit code. With `lesson_dir`
    (and no `path`) it opens on a picker of that directory's lesson files. `quiz`:
    quiz mode for self-study (each backward step's grads hidden until predicted)."""
    app = MgtuiApp(path, step=step, seed=seed, max_nodes=max_nodes, timeout=timeout,
                   max_memory=max_memory, run=run, argv=argv)
    app.lesson_dir = lesson_dir
    app.debugger.quiz = quiz
    try:
        code = app.run()
    finally:
        app.stop_recording_now()
    score = app.debugger.self_quiz.score()
    if score:  # (the score of a self-study quiz stays on the terminal)
        print(f"mgtui: {score}")
    return code if isinstance(code, int) else 0


def diff_app(comparison) -> MgtuiApp:
    """The debugger on side A's trace of a comparison (`mgtui.diff.Comparison`), opening
    at its first difference, with both sides' values and lines in a pane of their own."""
    from mgtui.tui.diff_report import comparison_pane

    side = comparison.a
    app = MgtuiApp(side.path, trace=side.trace)
    d = comparison.difference
    at = (d.a.step, d.a.node, d.message) if d is not None and d.a is not None \
        and d.a.step is not None else None
    app.debugger.show_comparison(comparison_pane(comparison), at)
    return app


def run_diff_app(comparison) -> int:
    """`mgtui diff A B` on a terminal, until the user quits."""
    app = diff_app(comparison)
    try:
        code = app.run()
    finally:
        app.stop_recording_now()
    return code if isinstance(code, int) else 0
