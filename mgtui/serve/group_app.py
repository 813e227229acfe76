"""A group's app (mgtui/serve/unison.py): one more student session of the class, on no
terminal and no roster, that follows the teacher as its group's members would and
draws into the group's model, whose cells go to each member's terminal. As the
class's recording (mgtui/serve/record.py), it never pauses and counts for no limit."""

from __future__ import annotations

from textual import events
from textual.drivers.headless_driver import HeadlessDriver

from mgtui.serve.app import ServedApp
from mgtui.session import Position


class ModelDriver(HeadlessDriver):
    """A terminal that is only the model: the app's screen diff keeps its cells (the
    app wraps every driver in one), and each write tells the group."""

    @property
    def is_headless(self) -> bool:
        return False  # so the app draws

    def write(self, data: str) -> None:
        self._app.group.drawn()


class GroupRenderer(ServedApp):
    """A group's app: a student who never pauses, drawing for the group's members."""

    asks_quiz = False  # (never shared in quiz mode: the members are woken then)

    def __init__(self, lessons, classroom, group, term, env) -> None:
        super().__init__(lessons, classroom, name="group", term=term, env=env)
        self.group = group
        self.driver_class = ModelDriver

    def on_mount(self, event: events.Mount) -> None:
        event.prevent_default()  # (ServedApp's would enter the roster, or notify)
        self._unwatch = self.classroom.watch(self._class_changed, roster=False)
        self._unsubscribe = self.classroom.subscribe(self._heard)
        self.call_after_refresh(self._catch_up)

    def arrived(self, position: Position, own: bool) -> None:
        super().arrived(position, own=False)  # (never its own move: it only follows)
        self.group.followed(position)

    def _class_news(self) -> None:
        self._news_due = False
        if self.classroom.ended:
            self.exit(0)
