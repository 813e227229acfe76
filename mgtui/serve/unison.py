"""Sessions that show the same thing draw it once (issue 23: a teacher's key to 30
screens, p95 at most 150 ms).

A teacher's step is every following session's step at once, and each session ran
Textual's whole screen update for it, the same update 15 times a worker: some 60% of
a step's CPU (`bench/serve_load.py`; docs/benchmarks.md, "A class of 30 over SSH"). Here
the students of a worker who follow the teacher and show the same thing draw nothing
themselves but one: a `Group`
of them has a leader, a member that follows the teacher and draws as it always did;
what its terminal shows is kept as cells (its `ScreenDiff`), and each other member's
terminal gets the cells that differ from what that terminal shows (the member's own
screen diff: a client that lagged gets what it lacks, one that has it all gets
nothing). The other members' apps sleep meanwhile: they are not stepped, and whatever
they draw is not sent. (A group app of its own, on no terminal, was tried first: started
in the middle of a class's steps, the mounts of its panes waited for good and it drew
nothing; not understood in time.)

A session joins a group only when nothing of its screen is its own, and only when its
screen is, cell for cell, the group's: following, a student's (never a teacher's
console), no quiz (a student's hidden grads and verdicts are their own), no dialog or
notes screen on top, no notification showing, no key waiting, the same widget with the
focus, the same size, colours and theme. It tries at the teacher's steps, and when its
last notice has gone. A student's "Following the teacher" goes at the teacher's first
step once it has been up `NOTICE_READ` seconds, or after its 5 s (left for its 5 s,
every student who had just come in drew the class's first steps alone). A key, a mouse click or a window change wakes
it first: the key waits (`ChannelDriver`) until its app has come to where the class is
now, with the teacher's look (`heard`, as a following session does), and has drawn a
whole screen through its own screen diff (so its terminal gets what differs from the
group's last frame), then it is handled; from then on it draws for itself, until it
joins again. A leader that leaves hands the group to another member, which wakes the
same way (its frames go to the others once it has drawn a whole screen). Quiz mode
wakes every member (`Unison._class_changed`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque

from rich.cells import cell_len

from mgtui.tui.screen_diff import ScreenDiff, whole
from mgtui.tui.textual_private import (app_driver, drop_notifications, full_frame, notifications,
                                       toast_regions)

log = logging.getLogger("mgtui.serve")

FRAMES_KEPT = 8  # a group's last frames that a session may show to join it
NOTICE_READ = 2.0  # s: a student's "Following the teacher" stays up at least this long


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
    """Following sessions of one worker with the same size, colours and theme: the
    leader, which draws, and the members it draws for."""

    def __init__(self, unison: Unison, key: tuple, leader) -> None:
        self.unison, self.key = unison, key
        self.width, self.height = key[0], key[1]
        self.leader = leader
        self.members: list = []  # asleep: the leader draws for them
        self._due = False
        self._repainted = False  # (a whole screen asked of the leader, its cells unknown)
        # the leader's last whole frames (rows of cells), newest last: a session that
        # shows one of them may join
        self.frames: deque[list] = deque(maxlen=FRAMES_KEPT)

    @property
    def model(self) -> ScreenDiff | None:
        return member_diff(self.leader)

    def complete(self) -> bool:
        """Whether the leader's terminal is known, every cell of it."""
        model, width = self.model, self.width
        if model is None or self.leader.membership.waking:
            return False
        rows = model.rows
        for y in range(self.height):
            row = rows.get(y)
            if row is None or len(row) < width or None in row[:width]:
                return False
        return True

    def shows_as(self, app, beneath: list = ()) -> bool:
        """Whether `app`'s terminal shows one of the leader's last frames, cell for
        cell, and the same widget has the focus (its look: `focus-within` styles).
        (One of the last: the leader may be drawing the next step already.) The cells
        of the regions `beneath` may differ: a notice just taken away, which the
        group's next frame draws over."""
        diff = member_diff(app)
        if diff is None or not self.frames or focus_of(app) != focus_of(self.leader):
            return False
        width, rows = self.width, diff.rows
        shown = [rows[y][:width] if y in rows else None for y in range(self.height)]
        return any(frame == shown or (beneath and same_but(frame, shown, beneath))
                   for frame in self.frames)

    def drawn(self, now: bool = False) -> None:
        """The leader has drawn (`now`: its frame goes to the members at once, before
        whatever else this process has to do this turn of the loop, such as the
        teacher's own screen in the teacher's process: 10-30 ms at a new picture of the
        Graph pane), or a member has joined (its frame goes at the loop's next turn)."""
        if now:
            self.push()
        elif not self._due:
            self._due = True
            asyncio.get_running_loop().call_soon(self.push)

    def push(self) -> None:
        self._due = False
        if not self.complete():  # (a leader catching up, or an escape not read: then
            # its whole screen once, which its screen diff sends it all of)
            if not (self._repainted or self.leader.membership.waking):
                self._repainted = True
                self.leader.call_later(self.leader.membership.repaint)
            return
        self._repainted = False
        rows, width, texts = self.model.rows, self.width, {}
        frame = [rows[y][:width] for y in range(self.height)]
        if not self.frames or self.frames[-1] != frame:
            self.frames.append(frame)
        # the members that showed the same (cells, cursor and style) are sent the same:
        # their cut is made once (the state before, what was sent, the diff after)
        cut: list[tuple[tuple, dict, str, str, ScreenDiff]] = []
        for member in list(self.members):
            diff = member_diff(member)
            if diff is None:
                continue
            state = (diff.erase, diff.cursor, diff.look)
            same = next((c for c in cut if c[0] == state and c[1] == diff.rows), None)
            driver = app_driver(member)
            if same is not None:
                if same[2]:
                    driver.write_as(*same[2:])
                continue
            parts = []
            for y in range(self.height):
                span = changed_span(diff.rows.get(y), rows[y], width)
                if span is not None:
                    if (y, span) not in texts:
                        texts[y, span] = cells_text(y, rows[y], *span)
                    parts.append(texts[y, span])
            before = {y: list(row) for y, row in diff.rows.items()} if parts else diff.rows
            data = "".join(parts)
            out = driver.write_cut(data) if parts else ""
            cut.append((state, before, data, out, diff))

    def arrived(self, position) -> None:
        """The leader is at the teacher's `position`: the roster says its members are
        there too. (Only the roster: a member's app sleeps on whatever lesson it had
        loaded, and loads the class's when it wakes. Told here that it was on the
        leader's lesson, it woke onto its old trace at the teacher's step, and stayed
        there: issue 35.)"""
        for member in self.members:
            if member.member is not None:
                self.unison.classroom.update(member.member, step=position.step,
                                             lesson=self.leader.lesson)


def same_but(frame: list, shown: list, beneath: list) -> bool:
    """Whether the rows `shown` are `frame`'s but for cells in the regions `beneath`."""
    for y, (want, have) in enumerate(zip(frame, shown)):
        if want == have:
            continue
        if have is None or len(have) != len(want):
            return False
        spans = [(r.x, r.right) for r in beneath if r.y <= y < r.bottom]
        if not spans or any(a != b and not any(x0 <= x < x1 for x0, x1 in spans)
                            for x, (a, b) in enumerate(zip(want, have))):
            return False
    return True


def member_diff(app) -> ScreenDiff | None:
    return getattr(app_driver(app), "_screen_diff", None)


def focus_of(app) -> tuple | None:
    try:
        focused = app.screen.focused
    except Exception:  # noqa: BLE001 - (no screen yet, or no more)
        return None
    return (type(focused).__name__, focused.id) if focused is not None else None


class Unison:
    """A worker's groups: who may join one, when, who leads, and waking every member
    when the class changes in a way each shows differently (quiz mode) or ends."""

    def __init__(self, classroom) -> None:
        self.classroom = classroom
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
        driver, quiz = app_driver(app), app.quiz_mode
        return (not self.closed and app.is_running and not app.keyed_teacher
                and app.terminal is not None and app.follower.following
                and not self.classroom.quiz_on and quiz.asking is None and quiz.clear
                and not app.membership.waking and app.membership.group is None
                and not notifications(app)
                and len(app.screen_stack) == 1 and app.screen is app.debugger
                and driver is not None and not driver.waiting())

    def join(self, app, beneath: list = ()) -> bool:
        """`app` joins its group if it may and its screen is the group's now, but for
        the regions `beneath` (True: the leader draws for it from now on). With no group
        there, it leads one."""
        if not self.may_join(app):
            return False
        key = self.key(app)
        group = self.groups.get(key)
        if group is None:
            self.groups[key] = group = Group(self, key, app)
            app.membership.group = group
            group.drawn()  # (its screen now: the first frame one may join on)
            log.info("a group of students at %dx%d: one draws for all", *key[:2])
            return False  # (it leads: it draws, as before)
        if not group.shows_as(app, beneath):
            return False
        group.members.append(app)
        app.membership.group = group
        group.drawn()  # (what the leader has drawn since that frame, at once)
        return True

    def leave(self, app) -> None:
        """`app` draws for itself from now on. A leader that leaves hands the group
        to a member (which wakes), or ends it."""
        group, app.membership.group = app.membership.group, None
        if group is None:
            return
        if app in group.members:
            group.members.remove(app)
            return
        if self.groups.get(group.key) is group:
            del self.groups[group.key]
        if group.members:
            leader = group.members.pop(0)
            group.leader = leader
            group.frames.clear()
            self.groups[group.key] = group
            leader.membership.lead()

    def forget(self, app) -> None:
        """`app`'s session has ended."""
        self.apps.discard(app)
        self.leave(app)

    def wake_all(self) -> None:
        for group in list(self.groups.values()):
            for member in list(group.members):
                member.membership.wake()

    def _class_changed(self) -> None:
        if self.classroom.quiz_on or self.classroom.ended:
            self.wake_all()

    async def close(self) -> None:
        self.closed = True
        self.wake_all()


class Membership:
    """One session's place among its worker's groups (`ServedApp.membership`): whether
    its group's leader draws for it (`asleep`), joining, waking, and the app's frames
    and expiring notices, handed here by `hook_frames`."""

    def __init__(self, app, unison: Unison | None) -> None:
        self.app, self.unison = app, unison
        self.group: Group | None = None  # this session's group now
        self.waking = False  # woken (a key, or its group to lead): catching up

    @property
    def asleep(self) -> bool:
        """Its group's leader draws for it."""
        group = self.group
        return group is not None and group.leader is not self.app

    # -- the app's frames and notices (`hook_frames`) -----------------------------------------
    def frame_wanted(self) -> bool:
        return not self.asleep  # (its terminal shows the leader's frames)

    def frame_sent(self) -> None:
        if self.group is not None:
            self.group.drawn(now=True)

    def notice_expiring(self, notification) -> list:
        """A notice has expired: the cells it covered are drawn again (`notice_expired`).
        (Textual removes its toast and draws nothing there: a served student's
        "Following the teacher" stayed on their terminal until the pane under it
        changed, and a screen with it is never the group's.)"""
        return toast_regions(self.app.screen, [notification])

    def notice_expired(self, before: object) -> None:
        self.app.call_after_refresh(self._notice_wiped, before)

    # -- joining ---------------------------------------------------------------------------------
    def join(self, beneath: list = ()) -> bool:
        """Join this session's group if it may and shows what the group does (but for
        the regions `beneath`)."""
        return self.unison is not None and self.unison.join(self.app, beneath)

    def join_later(self) -> None:
        """Once this session has drawn where the class is (its view too: two
        refreshes), join its group if its screen is the group's."""
        if self.unison is not None and self.group is None:
            self.app.call_after_refresh(self.app.call_after_refresh, self.join)

    def arrived(self, position) -> None:
        group = self.group
        if group is not None and group.leader is self.app:
            group.arrived(position)

    def notices_read(self, messages: tuple[str, ...]) -> list:
        """The teacher has moved: the notices among `messages` that have been up for
        `NOTICE_READ` seconds go now, drawn away with the step; where they were is
        returned (the session may join its group at this step: the group's frame
        draws over them). Left for their 5 s, they kept every student who had just
        come in out of its group, each drawing the class's first steps alone: those
        steps were the class's slowest."""
        app, now = self.app, time.time()
        done = [notice for notice in notifications(app)
                if notice.message in messages and now - notice.raised_at >= NOTICE_READ]
        if not done:
            return []
        regions = toast_regions(app.screen, done)
        drop_notifications(app, done)
        if regions:
            app.screen.refresh(*regions)
        return regions

    def _notice_wiped(self, regions: list) -> None:
        """The cells an expired notice covered, drawn again; with no notice left, this
        session may join its group now (not only at the teacher's next step: else the
        first step after a class has come in is drawn by every student)."""
        if regions:
            self.app.screen.refresh(*regions)
        if not notifications(self.app):
            self.join_later()

    # -- waking ----------------------------------------------------------------------------------
    def wake(self) -> None:
        """A key, a click or a window change for a member of a group (or quiz mode):
        it draws for itself from now on, once caught up. (Called from outside this
        app.) A leader is up to date: it only leaves."""
        if self.group is None or self.unison is None:
            return
        asleep = self.asleep
        self.unison.leave(self.app)
        if asleep:
            self.catch_up_awake()

    def lead(self) -> None:
        """This member leads its group now (its leader has left): it catches up, and
        its frames go to the others once it has drawn a whole screen."""
        self.catch_up_awake()

    def catch_up_awake(self) -> None:
        self.waking = True
        self.app.call_later(self._catch_up_awake)

    def _catch_up_awake(self) -> None:
        app = self.app
        position = app.classroom.position
        if position is not None:
            app.heard(position)  # (where the class is, and its view after a refresh)
        app.call_after_refresh(app.call_after_refresh, self._repaint_awake)

    def _repaint_awake(self) -> None:
        """Caught up, the view applied and drawn (two refreshes: the notes may have
        opened): the whole screen through the screen diff, then the key."""
        self.waking = False
        try:
            self.repaint()  # (its terminal gets what differs from the group's last frame)
        except Exception:  # noqa: BLE001 - (a screen not laid out: Textual's own way)
            self.app.screen.refresh()
        driver = app_driver(self.app)
        if driver is not None and hasattr(driver, "next_turn"):
            driver.next_turn()  # (the key that woke it)

    def repaint(self) -> None:
        """Draw the whole screen now (through the screen diff: only what differs)."""
        full_frame(self.app)
