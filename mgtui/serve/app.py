"""The debugger as a class sees it: the served lessons' shared traces instead of a
recording, the teacher's moves published to the `Classroom`, each student following
them until they navigate on their own (`f` rejoins). Nothing here runs code or opens a
file: a served session can only move through the traces it was given.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.filter import LineFilter, Monochrome, NoColor
from textual.screen import Screen
from textual.widgets import Static

from mgtui.safe import cell_width, inert_line
from mgtui.tui.app import MgtuiApp
from mgtui.serve.leadership import Leadership
from mgtui.serve.quiz_mode import QuizMode
from mgtui.serve.shared_view import SharedView
from mgtui.serve.unison import Membership
from mgtui.session.follow import Classroom, Follower, TeacherView
from mgtui.run.lessons import Lesson
from mgtui.tui.messages import OpenScenario, RunChecks
from mgtui.tui.screen_diff import erases
from mgtui.tui.textual_private import hook_frames, set_color_system
from mgtui.session import Position, StepState
from mgtui.trace import Trace
from mgtui.settings.bindings import CLASS_KEYS, DEBUGGER_KEYS
from mgtui.tui.widgets.debugger import DebuggerScreen
from mgtui.tui.widgets.keys import bindings_of
from mgtui.tui.widgets.graph import GraphPane
from mgtui.tui.widgets.node_table import NodeTable

NO_CODE = ("In a class the gradient doctor runs on the teacher's screen only: it re-runs "
           "the scenario's code on the server, and a student's session runs none.")
NO_SCENARIO = ("The gradient doctor re-runs the scenario, and this lesson was served from a "
               "saved trace: serve its .py file to check it.")
# a student's notices about following: up for JOINED_FOR seconds (REJOINED: 3), or
# until the teacher's next step once they have been read (`Membership.notices_read`)
JOINED = "Following the teacher. Moving on your own pauses it; f rejoins."
JOINED_FOR = 5.0
REJOINED = "Following again: the teacher has not moved yet."


class ClassScreen(DebuggerScreen):
    """The debugger screen with the follow mode: a status line while following is paused."""

    DEFAULT_CSS = """
    #follow-status { dock: top; height: auto; max-height: 3; width: 1fr; display: none;
                     text-style: bold reverse; }
    #follow-status.-shown { display: block; }
    """
    KEYS = DEBUGGER_KEYS + CLASS_KEYS
    BINDINGS = bindings_of(CLASS_KEYS)
    GRAPH_LATER = False  # the shared view reads the Graph pane from the first step on

    def __init__(self, keymap: dict[str, str] | None = None) -> None:
        super().__init__(keymap)
        self.quiet = 0  # > 0 while a move is the teacher's or a lesson loading, not the user's
        self._status: str | None = None  # the status line's text, as shown

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield Static("", id="follow-status", markup=False)

    def show_status(self, text: str) -> None:
        # (a class on the status line, not on the screen: a screen's class restyles
        # every widget in it, some 100 ms of the server's one CPU per student; and only
        # when it changes: a Static's update lays the whole screen out again)
        if text == self._status:
            return
        self._status = text
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
        if new is not None and not self.quiet:
            self.app.lead_first(new.position)
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
        if action in ("rejoin", "answer"):  # (a student's keys: the class's quiz for `a`)
            return not self.app.teacher
        return super().check_action(action, parameters)

    def action_rejoin(self) -> None:
        self.app.rejoin()

    def action_answer(self) -> None:
        self.app.action_answer()

    def help_texts(self) -> dict[str, str]:
        texts = {"answer": "quiz mode: your prediction of the grad asked (a number)"}
        if self.app.teacher:
            texts["quit"] = "end the class (it asks first, and says how many it drops)"
            texts["cancel_loading"] = "end the class, on your own terminal (as q does)"
        return texts

    # -- where the teacher looks (published by the teacher's session) -------------------------
    def action_toggle_graph(self) -> None:
        super().action_toggle_graph()
        self.app.shared_view.looked()

    def action_notes_view(self) -> None:
        super().action_notes_view()
        self.call_after_refresh(self.app.shared_view.looked)

    def on_screen_resume(self) -> None:
        self.app.shared_view.looked()  # (the notes, or a dialog, closed)

    def on_graph_pane_viewed(self, event: GraphPane.Viewed) -> None:
        self.app.shared_view.panned()


def client_filters(filters: Sequence[LineFilter],
                   client: list[LineFilter] | None) -> Sequence[LineFilter]:
    """Textual's line `filters`, with the `client`'s colour filters for its own (None:
    the server's, as Textual made them)."""
    if client is None:
        return filters
    return [f for f in filters if not isinstance(f, (Monochrome, NoColor))] + client


def picker_entries(lessons: Mapping[str, Lesson]) -> list[tuple[str, Path, str]]:
    """The class's lessons as the lesson picker lists them: name, path and title."""
    return [(name, lesson.path, lesson.title) for name, lesson in lessons.items()]


def picker_on_top(app: MgtuiApp) -> bool:
    """Whether the lesson picker is on top. (Its module is imported when it first opens:
    not at every step of a session that never opened it.)"""
    dialogs = sys.modules.get("mgtui.tui.widgets.dialogs")
    return (dialogs is not None and bool(app.screen_stack)
            and isinstance(app.screen, dialogs.PickerScreen))


def relist(screens: Sequence[Screen], lessons: Mapping[str, Lesson]) -> None:
    """An open lesson picker among `screens` lists every lesson of `lessons` (one
    recorded since it opened too), the highlighted one kept."""
    from textual.widgets import OptionList
    from textual.widgets.option_list import Option

    from mgtui.tui.widgets.dialogs import PickerScreen, picker_row

    for picker in screens:
        if not isinstance(picker, PickerScreen) or len(picker.scenarios) == len(lessons):
            continue
        picker.scenarios = picker_entries(lessons)
        width = max([cell_width(inert_line(name)) for name, _, _ in picker.scenarios] + [8])
        for options in picker.query("#picker-list").results(OptionList):
            highlighted = options.highlighted
            options.clear_options()
            options.add_options([Option(picker_row(name, title, width), id=str(path))
                                 for name, path, title in picker.scenarios])
            options.highlighted = highlighted


class ServedApp(MgtuiApp):
    """One person's session in a class. `terminal` is their SSH connection (None for a
    session on this process's own terminal, the teacher's `mgtui serve --teach`).

    Its roles are objects it holds: `membership` (its place among the sessions that
    draw once for many, mgtui/serve/unison.py), `shared_view` (where the teacher looks,
    made or applied here) and `quiz_mode` (the class's quiz, as this session sees it)."""

    _client_filters: list[LineFilter] | None = None  # the client's colours (`use_terminal`)

    def __init__(self, lessons: Mapping[str, Lesson], classroom: Classroom, *,
                 teacher: bool = False, terminal=None, term: str | None = None,
                 env: Mapping[str, str] | None = None, name: str = "",
                 quiz: bool = False, unison=None) -> None:
        super().__init__(None)
        self.term, self.env = term, dict(env or {})
        self.lessons = lessons  # (the class's own: a lesson recorded later joins its picker)
        self.classroom = classroom
        self.teacher = teacher  # leading the class now
        self.keyed_teacher = teacher  # logged in as a teacher (leading, or watching)
        self.member_name = name or ("teacher" if teacher else "student")
        self.member: int | None = None  # this session's number in the classroom's roster
        self.follower = Follower(classroom)  # (unused while this session leads)
        # This login, the same across its reconnects and the server's processes: a key's
        # fingerprint, else the login name (mgtui/serve/server.py sets it). One student,
        # one row of the roster, one answer per question, one row of scores.
        self.identity = ""
        self._unwatch = None
        self._news_due = False
        if quiz:  # (quiz mode from the start: a class's `serve --quiz`, or self-study)
            classroom.quiz_on = True
        self.membership = Membership(self, unison)  # (its group may draw for it)
        hook_frames(self, self.membership)
        self.shared_view = SharedView(self)
        self.quiz_mode = QuizMode(self)
        self.leadership = Leadership(self)
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
        set_color_system(self.console, environ)
        self.screen_erases = erases(term)  # blanks erased in place, if its terminfo can
        self.no_color = "NO_COLOR" in env
        self._client_filters = [Monochrome()] if self.no_color else []

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's, but the client's NO_COLOR says whether colours go, not the server's."""
        return client_filters(super().get_line_filters(), self._client_filters)

    # -- starting: the teacher's lesson and step, from the first frame ----------------------------
    def on_load(self, event: events.Load) -> None:
        event.prevent_default()  # (MgtuiApp's would record a scenario)
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
        self.member = self.classroom.enter(self.member_name, self.keyed_teacher,
                                           self.identity)
        if self.membership.unison is not None:
            self.membership.unison.apps.add(self)
        self.leadership.led = self.classroom.led  # (a student is told when that changes)
        self._unwatch = self.classroom.watch(self._class_changed, roster=self.keyed_teacher)
        self._unsubscribe = self.classroom.subscribe(self._heard)
        self.teacher = self.keyed_teacher and self.classroom.lead == self.member
        if self.teacher:
            self.notify("You are teaching: the class follows your step, node and tab. "
                        "R shows who is here.", timeout=5, markup=False)
            self.call_after_refresh(self.show_console)
            if not self._nobody_leads:
                self.call_after_refresh(self._catch_up)
        else:
            if self.keyed_teacher:  # another teacher leads: watch until this one chooses
                self.call_after_refresh(self.leadership.ask)
            else:
                self.notify(JOINED, timeout=JOINED_FOR, markup=False)
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
        if self.membership.unison is not None:
            self.membership.unison.forget(self)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.leave_class()

    def leave_class(self) -> None:
        """Off the roster (its lead free for another teacher), at once: not when the app
        has finished ending."""
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        if self.member is not None:
            member, self.member = self.member, None
            self.classroom.leave(member)

    # -- following ---------------------------------------------------------------------------
    def _heard(self, view: TeacherView) -> None:
        """(Called in the teacher's app: hop into this one before touching a widget.)"""
        if not self.membership.asleep:  # (asleep: its group's leader follows, and wakes it)
            self.call_later(self.heard, view, True)

    def heard(self, view: TeacherView, moved: bool = False) -> None:
        """The teacher moved (or this session catches up with where the class is):
        follow, unless paused (then the banner says where)."""
        membership = self.membership
        if self.teacher or membership.asleep:
            return
        # (the teacher moves the class: its notices about following have been seen;
        # where they were, the group's frame draws over)
        read = (membership.notices_read((JOINED, REJOINED))
                if moved and self.follower.following else [])
        if membership.join(read):
            return  # (joined now: its group's leader draws the step for it)
        self.shared_view.heard = view
        target = self.follower.heard(view)
        if target is not None:
            self.go_to(target)
            membership.join_later()
        self.shared_view.show_student_status()

    def go_to(self, target: TeacherView) -> None:
        """Go where the class is, quietly (it is not a move of this session's own)."""
        if target.lesson not in self.lessons:
            return
        trace = self.lessons[target.lesson].trace
        # (the trace on screen, not the name this session goes by: they differ while
        # an app sleeps in its group, issue 35)
        other = self.debugger.trace is not trace
        self.lesson = target.lesson
        if picker_on_top(self):
            self.pop_screen()  # the teacher has chosen
        self.debugger.follow(target, trace if other else None)
        self.call_after_refresh(self.shared_view.apply, target)

    def lead_first(self, position: Position) -> None:
        """The teacher's own step goes to the class before the teacher's screen draws
        it: the other workers' students follow meanwhile (its Graph pane's layouts of a
        new centre are some 50 ms; `arrived` then publishes the same, which is nothing)."""
        if self.teacher:
            self.classroom.publish(self.shared_view.view_at(position))

    def arrived(self, position: Position, own: bool) -> None:
        """This session is at `position`: the teacher's is published; a student's own
        move pauses the following."""
        position = replace(position, lesson=self.lesson)
        if self.teacher:
            # the teacher's own moves lead; a teacher coming back, landing where the
            # class is, does not take it back to the start
            if own or self.classroom.position is None:
                self.classroom.publish(self.shared_view.view_at(position))
        elif own and self.follower.moved(position):
            self.shared_view.show_student_status()
        if self.member is not None:
            self.classroom.update(self.member, step=position.step, lesson=position.lesson,
                                  following=self.teacher or self.follower.following)
        self.membership.arrived(position)  # (the members its frames go to are there too)
        if self.classroom.quiz_on or self.quiz_mode.asking is not None:
            self.quiz_mode.show_quiz()
            self.show_console()

    def rejoin(self) -> None:
        if self.teacher:
            return
        self.follower.following = True
        self.shared_view.show_student_status()
        if self.member is not None:
            self.classroom.update(self.member, following=True)
        position = self.follower.rejoin()
        if position is None:
            self.notify(REJOINED, timeout=3, markup=False)
        else:
            self.heard(position)

    # -- the teacher's console -----------------------------------------------------------------
    def _class_changed(self) -> None:
        """(Called from whichever session changed the class: one refresh, in this app.)"""
        if not self._news_due:
            self._news_due = True
            self.call_later(self._class_news)

    def _class_news(self) -> None:
        self._news_due = False
        if self.classroom.ended:
            self.end_here("the class has ended")
            return
        if self.leadership.news():
            return
        relist(self.screen_stack, self.lessons)  # (a lesson recorded since: `shelve`)
        self.quiz_mode.show_quiz()
        self.show_console()

    def show_console(self) -> None:
        """The status line: the teacher's console, or a student's status."""
        if self.teacher:
            self.debugger.show_status(self.leadership.console_line())
        else:
            self.shared_view.show_student_status()

    # -- the roles' keys (the bindings name the app's actions) ---------------------------------
    def action_point(self) -> None:
        self.shared_view.point()

    def action_say(self) -> None:
        self.shared_view.say()

    def action_quiz(self) -> None:
        self.quiz_mode.toggle()

    def action_reveal(self) -> None:
        self.quiz_mode.reveal()

    def action_answer(self) -> None:
        self.quiz_mode.ask_answer()

    def action_save_scores(self) -> None:
        self.quiz_mode.save_now()

    def action_roster(self) -> None:
        self.leadership.show_roster()

    async def action_quit(self) -> None:
        """A student leaves. The teacher who leads is asked first: ending the class
        drops everyone (a teacher on SSH may also leave it going on)."""
        if not self.teacher:
            await super().action_quit()
            return
        from mgtui.tui.widgets.roster import AskScreen

        n = self.classroom.counts().connected
        answers = [("e", f"end the class: {n} student{'s' if n != 1 else ''} would be "
                         "dropped", "end")]
        if self.terminal is not None:
            answers.append(("l", "leave: the class goes on without you", "leave"))
        self.push_screen(AskScreen("End the class?", answers), self._quit_answer)

    async def _quit_answer(self, answer: str | None) -> None:
        if answer == "end":
            self.classroom.end()  # (this session ends too, told by the classroom)
        elif answer == "leave":
            await super().action_quit()

    def end_here(self, because: str) -> None:
        """End this session, telling why."""
        if self.terminal is not None:
            self.terminal.end(because)
        elif self.is_running:
            self.exit(0, message=because)

    # -- a class only navigates ----------------------------------------------------------------
    def action_pick(self) -> None:
        from mgtui.tui.widgets.dialogs import PickerScreen

        self.push_screen(PickerScreen(picker_entries(self.lessons), closable=True))

    async def on_open_scenario(self, message: OpenScenario) -> None:
        message.prevent_default()  # (MgtuiApp's would record the file)
        names = {str(lesson.path): name for name, lesson in self.lessons.items()}
        name = names.get(str(message.path))
        if name is None:
            return
        while len(self.screen_stack) > 1 and self.screen is not self.debugger:
            await self.pop_screen()  # (the picker)
        self.lesson = name
        self.debugger.load_trace(self.lessons[name].trace, 0)
        if self.debugger.session is not None:
            self.arrived(self.debugger.session.position, own=True)

    def on_run_checks(self, message: RunChecks) -> None:
        """The doctor, for a teacher only (it runs the lesson's code on the server), on
        the lesson on their screen; a student is told why not."""
        message.prevent_default()
        from mgtui.tui.app import is_scenario
        from mgtui.tui.messages import ChecksFailed, ChecksProgress

        lesson, trace = self.lessons.get(self.lesson), self.debugger.trace
        if not self.keyed_teacher or lesson is None:
            self.debugger.post_message(ChecksFailed(NO_CODE))
            return
        if not is_scenario(lesson.path):
            self.debugger.post_message(ChecksFailed(NO_SCENARIO))
            return
        if trace is None or self._checks_for is trace:
            return  # nothing on screen yet, or done, or running
        self._checks_for = trace
        self.seed = lesson.seed  # (as the lesson was recorded: the same run)
        self.debugger.post_message(ChecksProgress(0, 0, "recording"))
        self.run_checks(lesson.path, trace)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # (False: the key is not this session's, and the footer and the help leave it out)
        if action == "screenshot":
            return None
        if action == "cancel_loading":  # (a class records nothing: ctrl+c, on the teacher's
            # own terminal, raw, with no signal, asks to end the class, as q does)
            return self.keyed_teacher and self.terminal is None
        if action == "reload":
            return False
        if action in ("roster", "save_scores"):
            return self.keyed_teacher
        if action in ("point", "say", "quiz", "reveal"):
            return self.teacher
        return super().check_action(action, parameters)

    async def action_cancel_loading(self) -> None:
        await self.action_quit()  # (see check_action)

    def get_system_commands(self, screen: Screen):
        """The palette without the commands that write files or run code."""
        for command in super().get_system_commands(screen):
            if "screenshot" not in command.title.lower() and "reload" not in command.title.lower():
                yield command

    def action_screenshot(self, *args, **kwargs) -> None:
        """Off: it would write a file on the server."""

    def deliver_screenshot(self, *args, **kwargs) -> None:
        """Off: it would write a file on the server."""
