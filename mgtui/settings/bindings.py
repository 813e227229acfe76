"""The one table of the debugger's keys. The footer (`BINDINGS`), the help screen and the
command palette are all made from it, and a user keymap rebinds its entries by id.

Plain data: it imports no textual, so the config loader can check ids against it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping


@dataclass(frozen=True)
class Key:
    """One binding. `keys` are Textual key names, comma-separated ("" for a command that
    is only in the palette). `footer` is the footer's short word, `help` the help
    screen's line and `palette` the command palette's title ("" keeps it out)."""

    id: str
    keys: str
    action: str
    footer: str
    help: str = ""
    palette: str = ""
    show: bool = True
    display: str | None = None  # how the key is shown, e.g. "]" for right_square_bracket
    priority: bool = False
    via: str = ""  # for a palette-only command: the id of the key that also reaches it


DEBUGGER_KEYS: tuple[Key, ...] = (
    Key("next", "n", "next", "Next", "next step (forward in time)", "Next step"),
    Key("next.alt", "right,space", "next", "Next", show=False, priority=True),
    Key("prev", "p", "prev", "Prev", "previous step (back in time)", "Previous step"),
    Key("prev.alt", "left", "prev", "Prev", show=False, priority=True),
    Key("next_pass", "right_square_bracket", "next_pass", "Pass", "first step of the next pass",
        "Next pass", display="]"),
    Key("prev_pass", "left_square_bracket", "prev_pass", "Prev pass",
        "first step of this pass, then of the previous one", "Previous pass", show=False,
        display="["),
    Key("continue", "c", "continue", "Cont", "continue to the next breakpoint, or the end",
        "Continue to the next breakpoint"),
    Key("continue_back", "C", "continue_back", "Cont back",
        "continue backwards to the previous breakpoint, or the start",
        "Continue back to the previous breakpoint", show=False),
    Key("start", "g", "start", "Start", "go to the start (step 0)", "Go to the start", show=False),
    Key("end", "G", "end", "End", "go to the end (the last step)", "Go to the end", show=False),
    Key("breakpoint", "b", "breakpoint", "Break",
        "breakpoint on the selected node: stops when its _backward runs or its grad changes",
        "Toggle a breakpoint on the selected node"),
    Key("find", "slash", "find", "Find", "find a node of the current graph by label",
        "Find a node by label", display="/"),
    Key("reload", "r", "app.reload", "Reload",
        "reload the scenario after editing it, staying at this step", "Reload the scenario",
        show=False),
    Key("graph", "m", "toggle_graph", "Graph",
        "the Graph pane: draw_dot's picture of the graph, lit by the step, in place of the "
        "node table (beside it on a big screen)", "Show or hide the Graph pane"),
    Key("toggle_panes", "v", "toggle_panes", "Panes",
        "show or hide the topo list and source/notes/output (small terminals)"),
    Key("next_tab", "t", "next_tab", "Tab",
        "next side tab: source, lesson notes, the scenario's output, checks", show=False),
    Key("tab.source", "", "show_tab('source')", "", palette="Show the source pane", via="next_tab"),
    Key("tab.notes", "", "show_tab('notes')", "", palette="Show the lesson notes", via="next_tab"),
    Key("tab.output", "", "show_tab('output')", "", palette="Show the scenario's output",
        via="next_tab"),
    Key("notes_view", "N", "notes_view", "Notes",
        "the notes full screen: this step's #: notes, then the lesson notes",
        "Show the notes full screen", show=False),
    Key("checks", "d", "checks", "Checks",
        "run the gradient doctor: its findings go to the Checks tab, enter on one goes to its "
        "step", "Check the gradients (the doctor)", show=False),
    Key("answer", "a", "answer", "Answer",
        "quiz mode: type your prediction of the grad this backward step asks for",
        "Answer the quiz's question", show=False),
    Key("pick", "o", "app.pick", "Open",
        "open another lesson: the lesson directory's files, else the bundled scenarios",
        "Open another scenario"),
    Key("focus_next", "tab", "app.focus_next", "Focus", "move the focus to the next pane",
        show=False),
    Key("focus_previous", "shift+tab", "app.focus_previous", "Focus back",
        "move the focus to the previous pane", show=False),
    Key("help", "question_mark", "help", "Help", "this help", "Help", display="?"),
    Key("quit", "q", "app.quit", "Quit", "quit"),
)

# A class's keys (`mgtui serve`), on top of the debugger's: each shows, in the footer and
# the help, only for whom it works (`check_action`: a student's `f`, a teacher's `R`, the
# leading teacher's `* ! Q V`). A key here that a debugger key has too would replace it
# (`help_rows`, `screen_keys`); `clashes` finds such a key bound to two actions.
CLASS_KEYS: tuple[Key, ...] = (
    Key("follow", "f", "rejoin", "Follow",
        "follow the teacher again, after your own moves paused it", show=False),
    Key("roster", "R", "app.roster", "Roster",
        "the roster: who is here, following or paused, at which step"),
    Key("point", "asterisk", "app.point", "Point",
        "point the class at the selected node (again: stop pointing)", display="*"),
    Key("say", "exclamation_mark", "app.say", "Say",
        "one line to the class, in every header until the next step", display="!"),
    Key("quiz", "Q", "app.quiz", "Quiz",
        "quiz mode on or off: students predict each backward step's grad"),
    Key("reveal", "V", "app.reveal", "Reveal", "quiz mode: reveal this step's grads for all"),
    Key("scores", "W", "app.save_scores", "Scores",
        "write the quiz's scores now (serve with --quiz-scores FILE)", show=False),
)

APP_KEYS: tuple[Key, ...] = (
    Key("cancel_loading", "ctrl+c", "cancel_loading", "Stop recording", show=False,
        priority=True),
)

# The panes' own keys, active while a pane has the focus. A user keymap that gives one
# of their keys to a debugger action takes it from the pane too (see `with_panes`).
TABLE_KEYS: tuple[Key, ...] = (
    Key("table.up", "up,k", "cursor(-1)", "Up", show=False),
    Key("table.down", "down,j", "cursor(1)", "Down", show=False),
    Key("table.pageup", "pageup", "page(-1)", "Page up", show=False),
    Key("table.pagedown", "pagedown", "page(1)", "Page down", show=False),
    Key("table.home", "home", "cursor_to(0)", "First row", show=False),
    Key("table.end", "end", "cursor_to(-1)", "Last row", show=False),
)
TOPO_KEYS: tuple[Key, ...] = (
    Key("topo.up", "up,k", "scroll_by(-1)", "Up", show=False),
    Key("topo.down", "down,j", "scroll_by(1)", "Down", show=False),
    Key("topo.pageup", "pageup", "scroll_by(-10)", "Page up", show=False),
    Key("topo.pagedown", "pagedown", "scroll_by(10)", "Page down", show=False),
)
TEXT_KEYS: tuple[Key, ...] = (
    Key("text.up", "up,k", "scroll_lines(-1)", "Scroll up", show=False),
    Key("text.down", "down,j", "scroll_lines(1)", "Scroll down", show=False),
    Key("text.pageup", "pageup", "scroll_lines(-8)", "Page up", show=False),
    Key("text.pagedown", "pagedown", "scroll_lines(8)", "Page down", show=False),
    Key("text.home", "home", "scroll_lines(-100000)", "Top", show=False),
)
GRAPH_KEYS: tuple[Key, ...] = (
    Key("graph.up", "up,k", "move(0,-1)", "Up", show=False),
    Key("graph.down", "down,j", "move(0,1)", "Down", show=False),
    Key("graph.left", "h", "move(-1,0)", "Left", show=False),
    Key("graph.right", "l", "move(1,0)", "Right", show=False),
    Key("graph.choose", "enter", "choose", "Select", show=False),
    Key("graph.flip", "T", "flip", "Turn", show=False),
    Key("graph.pan_left", "H", "pan(-1,0)", "Pan left", show=False),
    Key("graph.pan_right", "L", "pan(1,0)", "Pan right", show=False),
    Key("graph.pan_up", "K,pageup", "pan(0,-1)", "Pan up", show=False),
    Key("graph.pan_down", "J,pagedown", "pan(0,1)", "Pan down", show=False),
)
PANE_KEYS = TABLE_KEYS + TOPO_KEYS + TEXT_KEYS + GRAPH_KEYS

# Help lines for keys that are not in the table: Textual's own, and the panes'.
MORE_HELP = (
    ("ctrl+p", "command palette: every action; go to step N, pass N, node"),
    ("↑ ↓ pgup pgdn", "move the selection in the node table (when focused)"),
    ("↑ ↓ h l  enter", "in the Graph pane: move from box to box; enter (or a click) selects it"),
    ("H J K L  T", "in the Graph pane: pan; T turns it left-to-right / top-to-bottom"),
)

ALL_KEYS = DEBUGGER_KEYS + CLASS_KEYS + APP_KEYS + PANE_KEYS
IDS = frozenset(k.id for k in ALL_KEYS if k.keys)  # what a keymap may rebind
BY_ID = {k.id: k for k in ALL_KEYS}


def with_panes(keymap: Mapping[str, str]) -> dict[str, str]:
    """`keymap` plus what it takes from the panes: a key the user gives to an action is
    dropped from a pane binding that has it by default (`next = "j"` must step even
    while the node table, whose `j` moves down, has the focus)."""
    taken = {k for keys in keymap.values() for k in keys.split(",")}
    out = {}
    for key in PANE_KEYS:
        defaults = key.keys.split(",")
        left = [k for k in defaults if k not in taken]
        if key.id not in keymap and left and len(left) < len(defaults):
            out[key.id] = ",".join(left)
    return {**out, **keymap}


def shown_keys(key: Key, keymap: Mapping[str, str]) -> str:
    """The keys of `key` as the help shows them, the user's own if the keymap rebinds it."""
    if key.id in keymap:
        keys = keymap[key.id]
    else:
        keys = key.display or key.keys
    return keys.replace("_", " ").replace(",", " / ")


def help_rows(keymap: Mapping[str, str] = {}, table: tuple[Key, ...] = DEBUGGER_KEYS,
              works: Callable[[Key], bool] | None = None,
              texts: Mapping[str, str] = {}) -> list[tuple[str, str]]:
    """(keys, meaning) for the help screen: the keys of each action of `table` on one
    line, those that `works` says work on the screen (all without it); `texts` says some
    differently, by id. A later entry with a key of an earlier one takes that key (a
    class's keys over the debugger's)."""
    table = screen_keys(table)
    keys: dict[str, list[str]] = {}
    for key in table:
        if key.keys and (works is None or works(key)):
            keys.setdefault(key.action, []).append(shown_keys(key, keymap))
    rows = []
    for key in table:
        if (key.help or key.id in texts) and key.keys and key.action in keys:
            rows.append((" / ".join(keys.pop(key.action)), texts.get(key.id, key.help)))
    return rows + list(MORE_HELP)


def screen_keys(table: tuple[Key, ...]) -> tuple[Key, ...]:
    """`table` as one screen binds it: an entry loses the keys a later one binds too."""
    later: set[str] = set()
    out = []
    for key in reversed(table):
        own = [k for k in key.keys.split(",") if k and k not in later]
        later.update(own)
        if key.keys and not own:
            continue
        out.append(key if ",".join(own) == key.keys else replace(key, keys=",".join(own)))
    return tuple(reversed(out))


def clashes(*tables: tuple[Key, ...]) -> dict[str, set[str]]:
    """The keys bound to more than one action by `tables` (the bindings active together:
    the app's, a screen's, its focused pane's), each with its actions (`app.` dropped)."""
    actions: dict[str, set[str]] = {}
    for table in tables:
        for key in table:
            for k in filter(None, key.keys.split(",")):
                actions.setdefault(k, set()).add(key.action.removeprefix("app."))
    return {k: acts for k, acts in actions.items() if len(acts) > 1}


def palette_rows(keymap: Mapping[str, str] = {}) -> list[tuple[str, str, str]]:
    """(title, keys, action) for the command palette, in the table's order."""
    keys: dict[str, list[str]] = {}
    for key in DEBUGGER_KEYS:
        if key.keys:
            keys.setdefault(key.action, []).append(shown_keys(key, keymap))
    rows = []
    for key in DEBUGGER_KEYS:
        if key.palette:
            reach = BY_ID[key.via].action if key.via else key.action
            rows.append((key.palette, " / ".join(keys.get(reach, [""])), key.action))
    return rows
