"""The in-code API: `show`, `record` and `check`, for a graph built in a script, a test
or a notebook rather than in a scenario file. `mgtui/__init__.py` exports them.

Importing this module is cheap (the recorder, the doctor and the app are imported when
first used), because every `mgtui` process, the scenario's child included, imports it.
"""

from __future__ import annotations

import os
import sys
import types
from typing import TYPE_CHECKING, Any, Callable, Union

if TYPE_CHECKING:
    from pathlib import Path

    from mgtui.doctor import Finding, Report  # noqa: F401
    from mgtui.recording.inprocess import BlockRecorder
    from mgtui.trace import Trace

__all__ = ["Findings", "Recording", "check", "record", "show"]

# Extra arguments of `App.run` for `show`: the tests run the app under Pilot's
# headless driver with {"headless": True, "auto_pilot": ...}.
APP_RUN_OPTIONS: dict[str, Any] = {}


# -- record ------------------------------------------------------------------------------


class Recording:
    """What `mgtui.record()` recorded: a context manager, then a trace to show, save or
    check. The trace is there once the `with` block has ended."""

    def __init__(self, *, probe: bool = True, fields: dict[str, str] | None = None) -> None:
        self._probe = probe
        self._fields = fields
        self._recorder: BlockRecorder | None = None
        self._trace: Trace | None = None
        self._unseen: str | None = None  # why the block must not be checked (`check`)
        self._callers: list = []  # where each `backward()` was called from (the doctor's)
        self._hits: list = []
        self._overwrites: Any = None

    def __enter__(self) -> Recording:
        from mgtui.doctor.overwrite_check import OverwriteCheck
        from mgtui.recording.inprocess import BlockRecorder

        if self._recorder is not None or self._trace is not None:
            raise RuntimeError("a Recording records one block: call mgtui.record() again")
        # the doctor's `=`-for-`+=` probe around each `_backward` call, for `check()`
        self._overwrites = OverwriteCheck() if self._probe else None
        recorder = BlockRecorder(sys._getframe(1), before_backward=self._overwrites,
                                 fields=self._fields)
        recorder.start()
        self._recorder = recorder
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None,
                 tb: types.TracebackType | None) -> None:
        recorder, self._recorder = self._recorder, None
        assert recorder is not None
        self._trace = recorder.stop(exc)
        self._unseen = recorder.unseen
        self._callers = recorder.callers
        self._hits = list(self._overwrites.hits) if self._overwrites is not None else []
        # an exception from the block goes on (None: not swallowed); the trace keeps it

    @property
    def trace(self) -> Trace:
        """The recorded trace (`mgtui.trace.Trace`)."""
        if self._trace is None:
            raise RuntimeError("the block is still recording (or never ran): use the trace "
                               "after the `with mgtui.record()` block")
        return self._trace

    def show(self) -> Path | None:
        """Open the debugger on the recording (see `mgtui.show`)."""
        return _show_trace(self.trace)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the trace to a binary `.mgtrace` file (or JSON if `path` ends in
        `.json`), which `mgtui PATH` opens without running anything."""
        from pathlib import Path

        return _save(self.trace, Path(path))

    def check(self) -> Findings:
        """The gradient doctor's findings on the recording (see `mgtui.check`)."""
        return check(self)

    def __repr__(self) -> str:
        if self._trace is None:
            return "<mgtui.Recording: recording>" if self._recorder else "<mgtui.Recording>"
        t = self._trace
        return f"<mgtui.Recording: {t.node_count} nodes, {len(t)} steps>"


def record(*, probe: bool = True, fields: dict[str, str] | None = None) -> Recording:
    """Record the Values made, and the backward passes run, inside a `with` block.

        with mgtui.record() as rec:
            loss = model(x)
            loss.backward()
        rec.show()                 # step through it
        rec.save("loss.mgtrace")   # open it later with `mgtui loss.mgtrace`
        assert not rec.check()     # the gradient doctor's checks

    Nodes are labelled by their `label`, else by the caller's variables. A Value made
    before the block (a parameter) joins the recording when the block first uses it in
    a new Value (for a class with `__slots__`: make it inside the block). With `probe`
    (the default), each `_backward` closure is also replayed twice, its grads put back
    afterwards, to see whether it assigns a grad where it should add to it. `fields`
    names the Value class's fields where mgtui cannot tell them (see `check`).

    The recording runs in this process, with recorder hooks on every micrograd-style
    class for the length of the block. It works under coverage and debuggers
    (`sys.settrace`), and an exception from the block is not swallowed: the trace keeps
    it as its error.
    """
    return Recording(probe=probe)


# -- check -------------------------------------------------------------------------------


class Findings(list):  # list["Finding"]
    """The gradient doctor's findings, a list of `mgtui.doctor.Finding`, so a test can
    `assert not mgtui.check(...)`. It is also true when the checked code raised
    (`error`), and `str()` of it is the doctor's report, as `mgtui FILE --check` prints it.

    Each finding has its `kind` (`wrong-derivative`, `overwrite`, `missing-zero-grad`,
    ...), the node (`node`, `label`, `op`), where it is (`file`, `line`, `text`), a
    `message` with the numbers, and `numerical` and `recorded` grads where known.
    `unchecked` says what the numerical check did not cover (no backward pass checked
    numerically, calls it could not read), and the repr says it too. When that is all
    there is to say, it is a finding of its own (kind `unchecked`): a check that did not
    look is never an empty list (`said=False`, for a recorded block, which cannot be
    re-run: `Recording.check` promises the trace checks only).
    """

    def __init__(self, report: Report, said: bool = True) -> None:
        found = list(report.findings)
        extra = report.unchecked_finding() if said and not found and report.error is None \
            else None
        super().__init__([*found, extra] if extra is not None else found)
        self.report = report
        self.error = report.error
        self.notes = list(report.notes)
        self.unchecked = report.unchecked

    def __bool__(self) -> bool:
        return len(self) > 0 or self.error is not None

    def __str__(self) -> str:
        from mgtui.tui.report import format_report
        from mgtui.safe import inert

        return inert(format_report(self.report))

    def __repr__(self) -> str:
        but = ("" if self.unchecked is None or any(f.kind == "unchecked" for f in self)
               else f"; but {self.unchecked}")
        if not self:
            return f"Findings(no problems found{but})"
        # one line: pytest shows it in a failed `assert not mgtui.check(...)`
        lines = [f"{f.kind} at {_where(f)}: {f.message}" for f in self]
        if self.error is not None:
            lines.append(f"the checked code raised: {self.report.trace.places.error_text()}")
        return "Findings(" + "; ".join(lines) + but + ")"


def _where(f: Finding) -> str:
    name = os.path.basename(f.file) if f.file else "?"
    return f"{name}:{f.line}" if f.line else name


CheckTarget = Union[str, "os.PathLike[str]", Recording, Callable[[], object]]


def check(target: CheckTarget, *, seed: int = 0, sample: int | None = None,
          passes: str | list[int] | None = None, budget: float | None = None,
          argv: tuple[str, ...] = (), fields: dict[str, str] | None = None) -> Findings:
    """Run the gradient doctor and return its findings (empty when all is well).

    `target` is one of:
    - a scenario file (or a bundled scenario's name): every check, as
      `mgtui FILE --check` runs them, each run in a child process; `argv` is the
      script's `sys.argv[1:]`;
    - a function that takes no arguments and builds a graph and runs backward: every
      check too, each run a call of it in this process, with `random` seeded by `seed`;
    - a `Recording` from `mgtui.record()`: the checks that need no re-run (`=` for
      `+=`, zero_grad, seed, topological order, writes, missing `_backward`, nan).

    `passes` picks the backward passes checked numerically (by default the first, the
    last, and those between them that fit in `budget` seconds; "all"; or a list of
    pass numbers from 1), and `sample` limits the non-leaf nodes nudged one by one. In a
    test: `assert not mgtui.check(build_and_backprop)`; the assertion's message lists
    each finding with its file and line, and `str(findings)` is the whole report.

    mgtui finds the Value class by what its `__init__` stores (a number, a grad, its
    inputs, a backward callable: `data` or `value`, `_prev` or `parents`, ...). Where it
    cannot tell, `fields` names them, role to attribute (`{"data": "value", "inputs":
    "parents", "backward": "backward_fn"}`), as `[tool.mgtui] fields` in the
    `pyproject.toml` above the code does. A run that records no node, or makes nodes
    of a class mgtui cannot record, is never "no problems": it raises
    `mgtui.recording.shapes.NotAGraph`, as `mgtui.show` does, naming the classes and the fields
    looked for. Raises `mgtui.errors.ScenarioLoadError` (which `NotAGraph` is too) for
    a file that cannot run at all.
    """
    if isinstance(target, Recording):
        from mgtui.doctor import diagnose_recorded
        from mgtui.recording.shapes import NotAGraph

        trace = target.trace
        if target._unseen is not None:
            raise NotAGraph(target._unseen)
        return Findings(diagnose_recorded(trace, target._hits, target._callers), said=False)
    if isinstance(target, (str, os.PathLike)):
        from mgtui.run.bundled import resolve
        from mgtui.doctor import diagnose

        options: dict[str, Any] = {} if budget is None else {"budget": budget}
        return Findings(diagnose(resolve(os.fspath(target)), seed=seed, sample=sample,
                                 passes=passes, argv=tuple(argv), fields=fields, **options))
    if callable(target):
        from mgtui.doctor import diagnose_call

        return Findings(diagnose_call(target, seed=seed, sample=sample, passes=passes,
                                      budget=budget, fields=fields))
    raise TypeError(f"mgtui.check takes a scenario file, a function or a Recording, "
                    f"not {type(target).__name__}")


# -- show --------------------------------------------------------------------------------


def show(root: object, *, name: str | None = None,
         fields: dict[str, str] | None = None) -> Path | None:
    """Open the debugger on the graph behind `root` (a `Value`), in this terminal, and
    return when you quit it.

    The graph is copied and its backward pass (`root.backward()`) replayed on the copy
    from zero grads, under the recorder: every `data` and `grad` of your own Values is
    left as it was. Nodes are named by their `label`, else by your variables (the
    caller's locals and globals), and `name` names the root. `fields` names the fields
    of `root`'s class where mgtui cannot tell them (see `check`); something that is not
    a node raises `mgtui.recording.shapes.NotAGraph`.

    `root` may also be a `Recording` or a `Trace`. Where no terminal can host the app
    (in a Jupyter kernel, under a running event loop, or with stdout not a terminal),
    the trace is written to a `.mgtrace` file instead and the command that opens it is
    printed; in a notebook a compact view of the graph and its backward steps is shown
    too. Returns the file's path then, else None.
    """
    from mgtui.trace import Trace

    if isinstance(root, Recording):
        return _show_trace(root.trace)
    if isinstance(root, Trace):
        return _show_trace(root)
    frame = sys._getframe(1)
    try:
        trace = _trace_of(root, frame, name, fields)
    finally:
        del frame
    return _show_trace(trace)


def _trace_of(root: object, frame: types.FrameType, name: str | None,
              fields: dict[str, str] | None = None) -> Trace:
    from mgtui.recording.inprocess import names_in, record_graph

    names = names_in(frame)
    root_name = name or next((k for k, v in names.items() if v is root), None) \
        or getattr(root, "label", None) or "root"
    if name:
        names = {name: root, **names}
    where = f"{os.path.basename(frame.f_code.co_filename)}, line {frame.f_lineno}"
    notes = (f"The graph behind `{root_name}`, as `mgtui.show` found it ({where}): each "
             f"node made, its inputs first, then `{root_name}.backward()` replayed on a copy "
             f"of the graph from zero grads. Your own Values were not changed. The lines "
             f"that made the nodes are not known; the source of each `_backward` is.")
    return record_graph(root, names, f"mgtui.show({root_name})", notes, fields)


def _show_trace(trace: Trace) -> Path | None:
    import shlex

    problem = no_terminal()
    if problem is None:
        _run_app(trace)
        return None
    path = _save(trace, _trace_file(trace))
    if in_notebook():
        _notebook_view(trace)
    print(f"mgtui: no terminal here to open the debugger in ({problem}).\n"
          f"The trace is saved; step through it in a terminal with:\n"
          f"    mgtui {shlex.quote(str(path))}")
    return path


def _run_app(trace: Trace) -> None:
    from mgtui.tui.app import MgtuiApp

    MgtuiApp(None, trace=trace).run(**APP_RUN_OPTIONS)


def no_terminal() -> str | None:
    """Why the app cannot run here, or None if it can."""
    if in_notebook():
        return "this is a Jupyter kernel"
    import asyncio

    try:
        asyncio.get_running_loop()
        return "an event loop is running in this thread"
    except RuntimeError:
        pass
    for stream in (sys.stdin, sys.stdout):
        try:
            if not stream.isatty():
                return "stdin or stdout is not a terminal"
        except (AttributeError, ValueError):
            return "stdin or stdout is not a terminal"
    return None


def in_notebook() -> bool:
    """Is this code running in a Jupyter (IPython) kernel?"""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    try:
        shell = get() if get is not None else None
    except Exception:  # noqa: BLE001 - an IPython that half works: not a notebook
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


def _trace_file(trace: Trace) -> Path:
    import tempfile
    from pathlib import Path

    stem = "".join(c if c.isalnum() else "-" for c in trace.title).strip("-")[:40] or "trace"
    fd, name = tempfile.mkstemp(prefix=f"mgtui-{stem}-", suffix=".mgtrace")
    os.close(fd)
    return Path(name)


def _save(trace: Trace, path: Path) -> Path:
    from mgtui.trace.saving import save_trace

    return save_trace(trace, path)


MAX_VIEW_ROWS = 30


def compact_view(trace: Trace, rows: int = MAX_VIEW_ROWS):
    """A rich renderable: the nodes at the end, and the steps of the first backward
    pass worked out (each cut to `rows`). Scenario text is inert Text, never markup."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from mgtui.trace.explain import fmt
    from mgtui.tui.report import step_lines
    from mgtui.session.timeline import Timeline

    table = Table(title=Text(f"{trace.title}: {trace.node_count} nodes", style="bold"),
                  title_justify="left")
    for column in ("id", "label", "op", "data", "grad", "inputs"):
        table.add_column(column, justify="right" if column in ("id", "data", "grad") else "left")
    for nid in range(min(trace.node_count, rows)):
        table.add_row(*(Text(x) for x in (
            str(nid), trace.label(nid), trace.op(nid), fmt(trace.values.final_value(nid, False)),
            fmt(trace.values.final_value(nid, True)), ", ".join(trace.label(c) for c in trace.children(nid)))))
    parts: list[Any] = [table]
    if trace.node_count > rows:
        parts.append(Text(f"… and {trace.node_count - rows} more nodes", style="dim"))
    backward = next((p for p in trace.passes if p.kind == "backward"), None)
    if backward is not None:
        parts.append(Text(f"backward pass, steps {backward.start + 1}–{backward.end}",
                          style="bold"))
        timeline = Timeline(trace)
        timeline.seek(backward.start)
        for index in range(backward.start, min(backward.end, backward.start + rows)):
            timeline.step()
            parts.extend(step_lines(trace, timeline, index))
        if len(backward) > rows:
            parts.append(Text(f"… and {len(backward) - rows} more steps", style="dim"))
    if trace.error is not None:
        parts.append(Text(f"error: {trace.places.error_text()}"))
    return Group(*parts)


def _notebook_view(trace: Trace) -> None:
    from rich.console import Console

    Console().print(compact_view(trace))
