"""The debugger as a class sees it: the served lessons' shared traces instead of a
recording, the teacher's moves published to the `Classroom`, each student following
them until they navigate on their own (`f` rejoins). Nothing here runs code or opens a
file: a served session can only move through the traces it was given.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Mapping

from rich.console import Console
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.filter import Monochrome, NoColor
from textual.screen import Screen
from textual.widgets import Static

from mgtui.tui.app import MgtuiApp, showing
from mgtui.session.follow import Classroom, Follower
from mgtui.run.lessons import Lesson
from mgtui.tui.messages import OpenScenario, RunChecks
from mgtui.tui.screen_diff import erases
from mgtui.session import Position, StepState
from mgtui.trace import Trace
from mgtui.tui.widgets.debugger import DebuggerScreen
from mgtui.tui.widgets.node_table import NodeTable

NO_CODE = ("In a class the gradient doctor is off: it re-runs the scenario's code, and a "
           "served lesson runs none.")


class ClassScreen(DebuggerScreen):
    """The debugger screen with the follow mode: a status line while following is paused."""

    DEFAULT_CSS = """
    #follow-status { dock: top; height: 1; width: 1fr; display: none; text-style: bold reverse; }
    #follow-status.-shown { display: block; }
    """
    BINDINGS = [Binding("f", "rejoin", "Follow the teacher", id="follow", show=False)]

    def __init__(self, keymap: dict[str, str] | None = None) -> None:
        super().__init__(keymap)
        self.quiet = 0  # > 0 while a move is the teacher's or a lesson loading, not the user's

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield Static("", id="follow-status", markup=False)

    def show_status(self, text: str) -> None:
        # (a class on the status line, not on the screen: a screen's class restyles
        # every widget in it, some 100 ms of the server's one CPU per student)
        for status in self.query("#follow-status").results(Static):
            status.set_class(bool(text), "-shown")
            status.update(Text(text))

    def load_trace(self, trace: Trace, position: int = 0, select: int | None = None) -> None:
        self.quiet += 1  # a lesson loading is not a move of the user's
        try:
            super().load_trace(trace, position, select)
        finally:
            self.quiet -= 1

    def follow(self, position: Position, trace: Trace | None) -> None:
        """Go where the teacher is (loading `trace` first when it is another lesson)."""
        self.quiet += 1
        try:
            if trace is not None:
                self.load_trace(trace, position.step, position.node)
            if self.session is not None:
                self.state = self.session.seek(position)
        finally:
            self.quiet -= 1

    def watch_state(self, old: StepState | None, new: StepState | None) -> None:
        super().watch_state(old, new)
        if new is not None:
            self.app.arrived(new.position, own=not self.quiet)

    def on_node_table_selected(self, event: NodeTable.Selected) -> None:
        event.prevent_default()  # (the base class's handler, with the follow mode after it)
        if self.session is not None:
            self.set_reactive(DebuggerScreen.state, self.session.select(event.nid))
            self._refresh_keys()
            self.app.arrived(self.session.position, own=not self.quiet)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "rejoin":
            return None if self.app.teacher else True
        return super().check_action(action, parameters)

    def action_rejoin(self) -> None:
        self.app.rejoin()

    def action_help(self) -> None:
        """The debugger's help, with the follow mode's key for a student."""
        from mgtui.session.bindings import help_rows
        from mgtui.tui.widgets.dialogs import HelpScreen

        rows = help_rows(self.keymap)
        if not self.app.teacher:
            rows.insert(0, ("f", "follow the teacher again, after your own moves paused it"))
        self.app.push_screen(HelpScreen(rows))


class ServedApp(MgtuiApp):
    """One person's session in a class. `terminal` is their SSH connection (None for a
    session on this process's own terminal, the teacher's `mgtui serve --teach`)."""

    def __init__(self, lessons: Mapping[str, Lesson], classroom: Classroom, *,
                 teacher: bool = False, terminal=None, term: str | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        super().__init__(None)
        self.lessons = dict(lessons)
        self.classroom = classroom
        self.teacher = teacher
        self.follower = None if teacher else Follower(classroom)
        self.terminal = terminal
        if terminal is not None:
            from mgtui.serve.driver import ChannelDriver

            self.driver_class = ChannelDriver
        if env is not None or term is not None:
            self.use_terminal(term, env or {})
        self.debugger = ClassScreen(self.keymap)
        self.lesson = next(iter(self.lessons))
        self._unsubscribe = None

    def use_terminal(self, term: str | None, env: Mapping[str, str]) -> None:
        """Colours for the client's terminal: its TERM and COLORTERM, and NO_COLOR when
        its environment has it (not this server's)."""
        environ = {k: v for k, v in os.environ.items()
                   if k not in ("TERM", "COLORTERM", "NO_COLOR")}
        if term:
            environ["TERM"] = term
        if env.get("COLORTERM"):
            environ["COLORTERM"] = env["COLORTERM"]
        probe = Console(force_terminal=True, color_system="auto", _environ=environ)
        self.console._color_system = probe._color_system
        self.screen_erases = erases(term)  # blanks erased in place, if its terminfo can
        self.no_color = "NO_COLOR" in env
        self._filters = [f for f in self._filters if not isinstance(f, (Monochrome, NoColor))]
        if self.no_color:
            self._filters.append(Monochrome())

    # -- starting: the teacher's lesson and step, from the first frame ----------------------------
    def on_load(self, event: events.Load) -> None:
        event.prevent_default()  # (MgtuiApp's would record a scenario)
        self._quick = None
        position = self.classroom.position  # a teacher who comes back lands there too
        self._nobody_leads = position is None
        if position is not None and position.lesson in self.lessons:
            self.lesson = position.lesson
        step = position.step if position is not None and position.lesson == self.lesson else 0
        self.debugger.preload(self.lessons[self.lesson].trace, step)

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # (MgtuiApp's would open the picker of bundled scenarios)
        if self.terminal is not None:
            self.call_after_refresh(self.terminal.shown)
        if self._nobody_leads and len(self.lessons) > 1:
            self.action_pick()  # nobody leads yet: the lessons to choose from, with titles
        if self.teacher:
            self.notify("You are teaching: the class follows your step, node and tab.",
                        timeout=5)
            if not self._nobody_leads:
                self.call_after_refresh(self._catch_up)
        else:
            self._unsubscribe = self.classroom.subscribe(self._heard)
            self.notify("Following the teacher. Moving on your own pauses it; f rejoins.",
                        timeout=5)
            self.call_after_refresh(self._catch_up)

    def _catch_up(self) -> None:
        """After the first frame: where the class is now (the preload had its step; this
        brings its node and tab, or whatever the teacher has done since)."""
        position = self.classroom.position
        if position is None:
            return
        if self.teacher:
            self.go_to(position)
        else:
            self.heard(position)

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    # -- following ---------------------------------------------------------------------------
    def _heard(self, position: Position) -> None:
        """(Called in the teacher's app: hop into this one before touching a widget.)"""
        self.call_later(self.heard, position)

    def heard(self, position: Position) -> None:
        """The teacher moved: follow, unless paused."""
        target = self.follower.heard(position) if self.follower is not None else None
        if target is not None:
            self.go_to(target)

    def go_to(self, target: Position) -> None:
        """Go where the class is, quietly (it is not a move of this session's own)."""
        if target.lesson not in self.lessons:
            return
        other = target.lesson != self.lesson or self.debugger.session is None
        self.lesson = target.lesson
        if showing(self.screen, "PickerScreen"):
            self.pop_screen()  # the teacher has chosen
        self.debugger.follow(target, self.lessons[target.lesson].trace if other else None)

    def arrived(self, position: Position, own: bool) -> None:
        """This session is at `position`: the teacher's is published; a student's own
        move pauses the following."""
        position = replace(position, lesson=self.lesson)
        if self.teacher:
            # the teacher's own moves lead; a teacher coming back, landing where the
            # class is, does not take it back to the start
            if own or self.classroom.position is None:
                self.classroom.publish(position)
        elif own and self.follower is not None and self.follower.moved(position):
            self.debugger.show_status(self.follower.status)

    def rejoin(self) -> None:
        if self.follower is None:
            return
        self.debugger.show_status("")
        position = self.follower.rejoin()
        if position is None:
            self.notify("Following again: the teacher has not moved yet.", timeout=3)
        else:
            self.heard(position)

    # -- a class only navigates ----------------------------------------------------------------
    def action_pick(self) -> None:
        from mgtui.tui.widgets.dialogs import PickerScreen

        self.push_screen(PickerScreen(
            [(name, lesson.path, lesson.title) for name, lesson in self.lessons.items()],
            closable=True))

    async def on_open_scenario(self, message: OpenScenario) -> None:
        message.prevent_default()  # (MgtuiApp's would record the file)
        names = {str(lesson.path): name for name, lesson in self.lessons.items()}
        name = names.get(str(message.path))
        if name is None:
            return
        await self._clear_to_debugger()
        self.lesson = name
        self.debugger.load_trace(self.lessons[name].trace, 0)
        if self.debugger.session is not None:
            self.arrived(self.debugger.session.position, own=True)

    def on_run_checks(self, message: RunChecks) -> None:
        message.prevent_default()
        from mgtui.tui.messages import ChecksFailed

        self.debugger.post_message(ChecksFailed(NO_CODE))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("reload", "cancel_loading", "screenshot"):
            return None
        return super().check_action(action, parameters)

    def get_system_commands(self, screen: Screen):
        """The palette without the commands that write files or run code."""
        for command in super().get_system_commands(screen):
            if "screenshot" not in command.title.lower() and "reload" not in command.title.lower():
                yield command

    def action_screenshot(self, *args, **kwargs) -> None:
        """Off: it would write a file on the server."""

    def deliver_screenshot(self, *args, **kwargs) -> None:
        """Off: it would write a file on the server."""
