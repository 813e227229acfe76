"""Sessions that show the same thing draw it once (issue 23: a teacher's key to 30
screens, p95 at most 150 ms).

A teacher's step is every following session's step at once, and each session ran
Textual's whole screen update for it, the same update 15 times a worker: some 60% of
a step's CPU (bench/README.md, "A class over SSH"). Here the students of a worker who
follow the teacher and show the same thing draw nothing themselves: a `Group` of them
has one app of its own, a `GroupRenderer` on no terminal and no roster, that follows
the teacher as they would; what it draws is kept as cells (a `ScreenDiff`, the model),
and each member's terminal gets the cells of the model that differ from what that
terminal shows (the member's own screen diff: a client that lagged gets what it
lacks, one that has it all gets nothing). The members' apps sleep meanwhile: they are
not stepped, and whatever they draw is not sent.

A session joins a group only when nothing of its screen is its own, and only when its
screen is, cell for cell, the group's: following, a student's (never a teacher's
console), no quiz (a student's hidden grads and verdicts are their own), no dialog or
notes screen on top, no notification showing, no key waiting, the same widget with the
focus, the same size, colours and theme. A key, a mouse click or a window change wakes
it first: the key waits (`ChannelDriver`) until its app has come to where the class is
now, with the teacher's look (`heard`, as a following session does), and has drawn a
whole screen through its own screen diff (so its terminal gets what differs from the
group's last frame), then it is handled; from then on it draws for itself, until it
joins again. Quiz mode wakes every member (`Unison._class_changed`).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging

from rich.cells import cell_len

from mgtui.tui.screen_diff import ScreenDiff, whole

log = logging.getLogger("mgtui.serve")

IDLE_STEPS = 5  # teacher's steps a group's app follows with no member: then it ends


def cells_text(y: int, cells: list, start: int, end: int) -> str:
    """The cells `start`..`end` of row `y`, as Textual would write them: a cursor move,
    then each run of one style as a reset and its codes, then its characters. Unknown
    cells (None) are stepped over."""
    out, look, move, x = [], None, True, start
    while x < end:
        cell = cells[x]
        if cell is None or cell[0] == "":
            move, x = True, x + 1
            continue
        if move:
            out.append(f"\x1b[{y + 1};{x + 1}H")
            move = False
        if cell[1] != look:
            look = cell[1]
            out.append("\x1b[" + ";".join(["0", *whole(look)]) + "m")
        out.append(cell[0])
        x += 1
        if cell_len(cell[0]) == 2:
            x += 1  # (its right half: "")
    out.append("\x1b[0m")
    return "".join(out)


def changed_span(old: list | None, new: list, width: int) -> tuple[int, int] | None:
    """The first and one past the last of the cells that differ (None: none do)."""
    if old is not None and old[:width] == new[:width]:
        return None
    if old is None or len(old) < width:
        return 0, width
    start = 0
    while old[start] == new[start]:
        start += 1
    end = width
    while old[end - 1] == new[end - 1]:
        end -= 1
    return start, end


class Group:
    """Following sessions of one worker with the same size, colours and theme, and the
    one app that draws for them."""

    def __init__(self, unison: Unison, key: tuple, founder) -> None:
        self.unison, self.key = unison, key
        self.width, self.height = key[0], key[1]
        self.members: list = []
        self.idle_steps = 0  # teacher's steps followed with no member
        self._step: tuple = ()  # the last of them
        self.renderer = unison.renderer(unison.lessons, unison.classroom, self,
                                        founder.term, founder.env)
        self._due = False
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        # (its own context: created from a member's app, it must not run in that one's)
        self.task = asyncio.get_running_loop().create_task(
            self.renderer.run_async(headless=False, size=(self.width, self.height)),
            context=contextvars.Context())
        self.task.add_done_callback(lambda _task: self.unison.ended(self))

    @property
    def model(self) -> ScreenDiff | None:
        driver = getattr(self.renderer, "_driver", None)
        return getattr(driver, "_screen_diff", None)

    def complete(self) -> bool:
        """Whether the model knows every cell of the screen."""
        model, width = self.model, self.width
        if model is None or not self.renderer.is_running:
            return False
        rows = model.rows
        for y in range(self.height):
            row = rows.get(y)
            if row is None or len(row) < width or None in row[:width]:
                return False
        return True

    def shows_as(self, app) -> bool:
        """Whether `app`'s terminal shows the group's screen, cell for cell, and the
        same widget has the focus (its look: `focus-within` styles)."""
        model, diff = self.model, member_diff(app)
        if model is None or diff is None or not self.complete():
            return False
        if focus_of(app) != focus_of(self.renderer):
            return False
        width = self.width
        for y in range(self.height):
            row = diff.rows.get(y)
            if row is None or row[:width] != model.rows[y][:width]:
                return False
        return True

    def drawn(self) -> None:
        """The app has drawn: its frame goes to the members (once a turn of the loop)."""
        if not self._due and self.members:
            self._due = True
            asyncio.get_running_loop().call_soon(self.push)

    def push(self) -> None:
        self._due = False
        if not self.members:
            return
        if not self.complete():  # (something it could not read: a whole screen again)
            self.renderer.repaint()
            return
        rows, width, texts = self.model.rows, self.width, {}
        for member in list(self.members):
            diff = member_diff(member)
            if diff is None:
                continue
            parts = []
            for y in range(self.height):
                span = changed_span(diff.rows.get(y), rows[y], width)
                if span is not None:
                    if (y, span) not in texts:
                        texts[y, span] = cells_text(y, rows[y], *span)
                    parts.append(texts[y, span])
            if parts:
                member._driver.write("".join(parts))

    def followed(self, position) -> None:
        """The group's app has come to the teacher's `position`: the roster says its
        members are there too; a group nobody has been in for a while ends."""
        step, self._step = self._step, (self.renderer.lesson, position.step)
        if self.members:
            self.idle_steps = 0
            for member in self.members:
                member.lesson = self.renderer.lesson
                if member.member is not None:
                    self.unison.classroom.update(member.member, step=position.step,
                                                 lesson=self.renderer.lesson)
        elif self._step != step:
            self.idle_steps += 1
            if self.idle_steps >= IDLE_STEPS:
                self.unison.retire(self)


def member_diff(app) -> ScreenDiff | None:
    return getattr(getattr(app, "_driver", None), "_screen_diff", None)


def focus_of(app) -> tuple | None:
    try:
        focused = app.screen.focused
    except Exception:  # noqa: BLE001 - (no screen yet, or no more)
        return None
    return (type(focused).__name__, focused.id) if focused is not None else None


class Unison:
    """A worker's groups: who may join one, when, and waking every member when the
    class changes in a way each shows differently (quiz mode) or ends."""

    def __init__(self, lessons, classroom, renderer, release) -> None:
        """`renderer`: the class of a group's app (`GroupRenderer`, given: it is a
        `ServedApp`, which is made of this module's `UnisonMember`); `release`, what
        to do with an app that has ended (`release_streams`)."""
        self.lessons, self.classroom = lessons, classroom
        self.renderer, self.release = renderer, release
        self.apps: set = set()  # the sessions that may join a group (students on SSH)
        self.groups: dict[tuple, Group] = {}
        self.closed = False
        classroom.watch(self._class_changed, roster=False)

    @staticmethod
    def key(app) -> tuple:
        return (app.size.width, app.size.height, app.console.color_system, app.no_color,
                app.theme)

    def may_join(self, app) -> bool:
        """Whether nothing of `app`'s screen is its own (see the module's docstring)."""
        driver = getattr(app, "_driver", None)
        return (not self.closed and app.is_running and not app.keyed_teacher
                and app.terminal is not None and app.follower.following
                and not self.classroom.quiz_on and app._asking is None and app._quiz_clear
                and not app.waking and app.unison_group is None and not app._notifications
                and len(app.screen_stack) == 1 and app.screen is app.debugger
                and driver is not None and not driver.waiting())

    def join(self, app) -> bool:
        """The teacher has moved (before `app` follows): `app` joins its group, if it
        may and its screen is the group's now (True: the group draws for it from now
        on). A second session that could join a group that is not there starts one."""
        if not self.may_join(app):
            return False
        key = self.key(app)
        group = self.groups.get(key)
        if group is None:
            if any(other is not app and self.may_join(other) and self.key(other) == key
                   for other in self.apps):
                group = self.groups[key] = Group(self, key, app)
                group.start()
                log.info("a group of students at %dx%d: drawn once for all", *key[:2])
            return False
        if not group.shows_as(app):
            return False
        group.members.append(app)
        app.unison_group = group
        return True

    def leave(self, app) -> None:
        group = app.unison_group
        app.unison_group = None
        if group is not None and app in group.members:
            group.members.remove(app)

    def forget(self, app) -> None:
        """`app`'s session has ended; a group none of whose size and colours is left
        ends too (its app would follow the teacher for nobody)."""
        self.apps.discard(app)
        self.leave(app)
        left = {self.key(other) for other in self.apps if other.is_running}
        for group in list(self.groups.values()):
            if group.key not in left:
                self.retire(group)

    def wake_all(self) -> None:
        for group in list(self.groups.values()):
            for member in list(group.members):
                member.wake()

    def _class_changed(self) -> None:
        if self.classroom.quiz_on or self.classroom.ended:
            self.wake_all()

    def retire(self, group: Group) -> None:
        if self.groups.get(group.key) is group:
            del self.groups[group.key]
        for member in list(group.members):
            member.wake()
        if group.renderer.is_running:
            group.renderer.exit(0)

    def ended(self, group: Group) -> None:
        """The group's app has ended (retired, or failed): its members draw again."""
        self.retire(group)
        self.release(group.renderer)
        failure = getattr(group.renderer, "_exception", None)
        if failure is not None:
            log.error("a group's app failed", exc_info=(type(failure), failure,
                                                        failure.__traceback__))

    async def close(self) -> None:
        self.closed = True
        groups = list(self.groups.values())
        for group in groups:
            self.retire(group)
        tasks = [g.task for g in groups if g.task is not None and not g.task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=5)


class UnisonMember:
    """(A part of `ServedApp`: a session that may be drawn for by its group.)"""

    unison: Unison | None = None
    unison_group: Group | None = None  # the group drawing for this session now
    waking = False  # woken by a key: catching up, its keys wait

    def _display(self, screen, renderable) -> None:
        if self.unison_group is None:  # (asleep: its terminal shows the group's frames)
            super()._display(screen, renderable)

    def join_group(self) -> bool:
        """Join this session's group if it may and shows what the group does."""
        return self.unison is not None and self.unison.join(self)

    def join_later(self) -> None:
        """Once this session has drawn where the class is (its look too: two
        refreshes), join its group if its screen is the group's."""
        if self.unison is not None:
            self.call_after_refresh(self.call_after_refresh, self.join_group)

    def _unnotify(self, notification, refresh: bool = True) -> None:
        """A notice has expired: the cells it covered are drawn again. (Textual removes
        its toast and draws nothing there: a served student's "Following the teacher"
        stayed on their terminal until the pane under it changed, and a screen with
        it is never the group's.)"""
        from textual.widgets._toast import Toast

        regions = [toast.parent.region if toast.parent is not None else toast.region
                   for toast in self.screen.query(Toast)
                   if toast._notification is notification]
        super()._unnotify(notification, refresh)
        if regions:
            self.call_after_refresh(self.screen.refresh, *regions)

    def wake(self) -> None:
        """A key, a click or a window change for a member (or its group ends): it
        draws for itself from now on, once caught up. (Called from outside this app.)"""
        if self.unison_group is None or self.unison is None:
            return
        self.unison.leave(self)
        self.waking = True
        self.call_later(self._catch_up_awake)

    def _catch_up_awake(self) -> None:
        position = self.classroom.position
        if position is not None:
            self.heard(position)  # (where the class is, and its look after a refresh)
        self.call_after_refresh(self.call_after_refresh, self._repaint_awake)

    def _repaint_awake(self) -> None:
        """Caught up, the look applied and drawn (two refreshes: the notes may have
        opened): the whole screen through the screen diff, then the key."""
        try:
            self.repaint()  # (its terminal gets what differs from the group's last frame)
        except Exception:  # noqa: BLE001 - (a screen not laid out: Textual's own way)
            self.screen.refresh()
        self.waking = False
        driver = self._driver
        if driver is not None and hasattr(driver, "next_turn"):
            driver.next_turn()  # (the key that woke it)

    def repaint(self) -> None:
        """Draw the whole screen now (through the screen diff: only what differs)."""
        screen = self.screen
        self._display(screen, screen._compositor.render_update(
            full=True, screen_stack=self._background_screens))
