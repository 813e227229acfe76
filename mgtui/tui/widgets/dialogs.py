"""The app's other screens: help, find, the load error, the scenario picker and the
loading screen."""

from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Label, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from mgtui.safe import cell_width, inert, inert_line
from mgtui.tui.messages import OpenScenario
from mgtui.tui.widgets.node_table import BREAKPOINT, MARKS


COLUMN_HELP = (
    ("id", "the node's number, in the order nodes were made"),
    ("label", "its .label, else the variable it was assigned to, else its path from a "
              "global (model.layers[0]…w[0], shortened to fit), else #id"),
    ("op", "the op that made it (+, *, tanh, …); empty for a leaf"),
    ("data grad", "its value and its gradient at the current step"),
    ("inputs", "the nodes it was computed from"),
    ("uses", "how many nodes use it as an input: its fan-out in this graph (this "
             "training step's). A node used twice gets two contributions to its grad, "
             "added with +="),
    ("topo", "its place in the topological order; the backward pass runs _backward "
             "from the highest topo number down to 0"),
)


class HelpScreen(ModalScreen[None]):
    """The keys (from the debugger's own bindings) and what the marks mean."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen #help-body { width: 86; max-width: 100%; height: auto; max-height: 90%;
        background: $panel; border: round $primary; padding: 0 1; }
    HelpScreen #help-hint { width: 86; max-width: 100%; content-align: center middle;
        color: $text-muted; }
    """

    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close", id="help.close"),
    ]

    def __init__(self, bindings: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = bindings

    def compose(self) -> ComposeResult:
        keys = Table.grid(padding=(0, 2))
        keys.add_column(style="bold", no_wrap=True)
        keys.add_column()
        for key, description in self.keys:  # (a key may be the user's: text, never markup)
            keys.add_row(Text(inert_line(key)), Text(description))
        marks = Table.grid(padding=(0, 2))
        marks.add_column(style="bold reverse", no_wrap=True)
        marks.add_column()
        legend = [
            (MARKS["run"], "this node's _backward is running"),
            (MARKS["acc"], "it accumulated into this node's grad (the grad cell is emphasised)"),
            (MARKS["new"], "this node was just created (forward step)"),
            (MARKS["set"], "a write outside _backward: the seed, zero_grad or an update; or "
             "the running _backward assigned this grad (`=`, not `+=`: its line is ! in Source)"),
            ("✓ ", "this node's _backward has already run in this backward pass"),
            (BREAKPOINT + " ", "a breakpoint: c / C stop when its _backward runs or its grad changes"),
            ("· ", "a node of this graph that is not made yet (dim row)"),
        ]
        for mark, meaning in legend:
            marks.add_row(mark, meaning)
        columns = Table.grid(padding=(0, 2))
        columns.add_column(style="bold", no_wrap=True)
        columns.add_column()
        for name, meaning in COLUMN_HELP:
            columns.add_row(name, meaning)
        passes = Text.assemble(
            ("Pass bar letters: ", "bold"),
            "F forward · Z zero_grad · B backward · U update · ✗ the error; "
            "the loss sparkline has one point per backward pass.")
        body = Group(
            Text("Keys", style="bold underline"), keys, Text(""),
            Text("Marks in the node table and the topological order", style="bold underline"),
            marks, Text(""),
            Text("Columns of the node table", style="bold underline"), columns, Text(""),
            passes)
        with VerticalScroll(id="help-body"):
            yield Static(body)
        yield Label("press ? or escape to close", id="help-hint")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


class FindScreen(ModalScreen[str | None]):
    """Ask for a node label."""

    DEFAULT_CSS = """
    FindScreen { align: center middle; }
    FindScreen #find-box { width: 60; max-width: 100%; height: auto; background: $panel;
        border: round $primary; padding: 0 1; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="find.cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="find-box"):
            yield Label("Find a node by label (exact, else the first that contains it)")
            yield Input(placeholder="label, e.g. w1", id="find-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ErrorScreen(Screen[None]):
    """A scenario that could not run at all: the file, the line and a caret."""

    DEFAULT_CSS = """
    ErrorScreen #error-body { padding: 1 2; }
    ErrorScreen #error-text { width: 1fr; }
    """

    BINDINGS = [
        Binding("r", "app.reload", "Try again", id="error.retry"),
        Binding("o", "app.pick", "Open another", id="error.pick"),
        Binding("q", "app.quit", "Quit", id="error.quit"),
    ]

    def __init__(self, path: Path | None, message: str, detail: str = "") -> None:
        super().__init__()
        self.path = path
        self.message = message
        self.detail = detail

    def compose(self) -> ComposeResult:
        text = Text()
        text.append("✗ mgtui could not load this scenario\n\n", style="bold reverse")
        text.append(inert(self.message) + "\n", style="bold")
        if self.detail:
            text.append("\n" + inert(self.detail) + "\n")
        text.append("\nFix the file and press r to try again, o to open another scenario, "
                    "or q to quit.", style="italic")
        with VerticalScroll(id="error-body"):
            yield Static(text, id="error-text")
        yield Footer(compact=True)

    @property
    def text(self) -> str:
        return str(self.query_one("#error-text", Static).content)


class PickerScreen(Screen[None]):
    """The bundled scenarios with their titles."""

    DEFAULT_CSS = """
    PickerScreen #picker-title { width: 1fr; background: $primary; text-style: bold; }
    PickerScreen #picker-list { height: 1fr; }
    """

    BINDINGS = [Binding("q", "app.quit", "Quit", id="picker.quit"),
                Binding("escape", "close", "Back", id="picker.close")]

    def __init__(self, scenarios: list[tuple[str, Path, str]], closable: bool = False) -> None:
        """`closable`: escape goes back to the trace on screen (else it quits)."""
        super().__init__()
        self.scenarios = scenarios
        self.closable = closable

    async def action_close(self) -> None:
        if self.closable:
            self.dismiss()
        else:
            await self.app.run_action("quit")

    def compose(self) -> ComposeResult:
        yield Label(" mgtui · pick a scenario to step through (enter opens it)", id="picker-title")
        width = max([cell_width(inert_line(name)) for name, _, _ in self.scenarios] + [8])
        options = [Option(picker_row(name, title, width), id=str(path))
                   for name, path, title in self.scenarios]
        yield OptionList(*options, id="picker-list")
        yield Footer(compact=True)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.app.post_message(OpenScenario(Path(event.option.id)))


def picker_row(name: str, title: str, width: int) -> Table:
    """A scenario's name and title side by side: a long title wraps under itself, not
    under the name."""
    row = Table.grid(padding=(0, 2))
    row.add_column(width=width, no_wrap=True, style="bold")
    row.add_column(ratio=1)
    row.add_row(Text(inert_line(name)), Text(inert_line(title)))  # (file names are anyone's)
    return row


class LoadingScreen(ModalScreen[None]):
    """Shown while the worker records the scenario; ctrl+c stops it."""

    DEFAULT_CSS = """
    LoadingScreen { align: center middle; }
    LoadingScreen #loading-box { width: 60; max-width: 100%; height: auto; background: $panel;
        border: round $primary; padding: 0 1; }
    LoadingScreen #loading-hint { color: $text-muted; }
    """

    BINDINGS = [
        Binding("ctrl+c,escape", "app.cancel_loading", "Stop recording", id="loading.cancel",
                priority=True),
        Binding("q", "app.quit", "Quit", id="loading.quit"),
    ]

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def compose(self) -> ComposeResult:
        with Vertical(id="loading-box"):
            yield Label(Text(f"Recording {inert_line(self.path.name)} …"), id="loading-title")
            yield ProgressBar(total=None, show_eta=False, show_percentage=False, id="loading-bar")
            yield Label("0 nodes", id="loading-count")
            yield Label("ctrl+c stops the recording and shows the trace so far", id="loading-hint")

    def progress(self, nodes: int) -> None:
        for label in self.query("#loading-count").results(Label):  # none before compose
            label.update(f"{nodes:,} nodes")
