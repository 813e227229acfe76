"""Fixtures for the app tests: a clean environment, small scenarios, a loaded app."""

from __future__ import annotations

import os
from itertools import accumulate
import sys
import textwrap
from pathlib import Path

import pytest

from mgtui.trace import EventKind, TraceBuilder

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


@pytest.fixture
def clean_env(monkeypatch):
    """No NO_COLOR and no TEXTUAL_* settings from the developer's shell: the app and its
    snapshots look the same everywhere."""
    for name in list(os.environ):
        if name.startswith("TEXTUAL_SNAPSHOT"):  # pytest-textual-snapshot's own
            continue
        if name == "NO_COLOR" or name.startswith("TEXTUAL_") or name == "COLORTERM":
            monkeypatch.delenv(name, raising=False)
    # The source pane shows plain text until pygments' lexer is built, once per process,
    # by whichever load path comes first. Build it now, so that what a test sees does not
    # depend on which tests ran before it in the same process (or on the xdist worker).
    from mgtui.tui.widgets.source_view import warm_highlighter

    warm_highlighter()
    yield
    # the recorder swaps sys.stdout while it runs; never leave a test with a stale one
    if sys.stdout is not sys.__stdout__ and type(sys.stdout).__name__ in ("StringIO", "_PrintCapture"):
        sys.stdout = sys.__stdout__


@pytest.fixture
def write_scenario(tmp_path):
    """Write a scenario file into tmp_path: write_scenario("name", source) -> Path."""

    def write(name: str, source: str) -> Path:
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
        return path

    return write


@pytest.fixture
def add_self(write_scenario):
    """`b = a + a`: a used twice, so a.grad gets two contributions (the += lesson)."""
    return write_scenario("add_self", '''
        """b = a + a: one node used twice

        `a` feeds both inputs of `b`, so `b._backward` adds into `a.grad` twice.
        """
        from engine import Value

        a = Value(3.0, label='a')
        b = a + a; b.label = 'b'
        b.backward()
        print("a.grad =", a.grad)
    ''')


# -- a recorded trace, sent again as a recording sends it ---------------------------------


def stream_of(trace, size: int):
    """The trace's records in the order a recording sends them: the nodes an event
    chunk needs, the chunk, then its writes."""
    t = trace
    nodes = 0
    for lo in range(0, len(t), size):
        hi = min(lo + size, len(t))
        made = max([t.event_node(i) + 1 for i in range(lo, hi)
                    if t.kind(i) is EventKind.CREATE] + [nodes])
        if made > nodes:
            yield ("nodes", nodes, made)
            nodes = made
        yield ("events", lo, hi)
        if any(t.write_count_of(i) for i in range(lo, hi)):
            yield ("writes", lo, hi)


def add_records(builder: TraceBuilder, t, what: str, lo: int, hi: int) -> None:
    if what == "nodes":
        for nid in range(lo, hi):
            n = t.node(nid)
            builder.add_node(n.label if n.label != f"#{nid}" else "", n.op, t.children(nid),
                             t.node_data[nid], n.line or 0)
    elif what == "events":  # as the recorder sends them: each with where its writes start
        events = [t.event(i) for i in range(lo, hi)]
        starts = list(accumulate((t.write_count_of(i) for i in range(lo, hi - 1)),
                                 initial=len(builder.wr_node)))  # the earlier ones came
        builder.add_events([e.kind.code for e in events], [e.node for e in events],
                           [e.before for e in events], [e.after for e in events],
                           [t.event_line(i) or 0 for i in range(lo, hi)],
                           [-1 if e.closure is None else e.closure for e in events], starts)
    else:
        for i in range(lo, hi):
            for w in t.writes(i):
                builder.add_write(w.node, w.field, w.before, w.after, w.line or 0)


def prefixes_of(trace, size: int):
    """The traces a growing recording of `trace` shows: built again after each chunk."""
    b = TraceBuilder(trace.scenario, trace.title, trace.notes, trace.source)
    for c in trace.closures:
        b.add_closure(c)
    for what, lo, hi in stream_of(trace, size):
        add_records(b, trace, what, lo, hi)
        if what != "nodes" and b.consistent:  # (as the runner does: see Run.snapshot)
            b.validate()
            yield b.build()



def recorded_in_chunks(monkeypatch, path: Path, every: int, after_cut=None) -> tuple:
    """Record scenario `path` in this process, its records cut into chunks as it goes
    (each `every` array nodes made, as the runner child's flusher cuts them in its own
    thread, and at the end): (the chunks, the recorder); `after_cut(store)` runs after
    each cut."""
    from mgtui.recording import array_values
    from mgtui.recording.recorder import Recorder, load_scenario
    from mgtui.recording.store import Mark

    cut, since = [], Mark()
    original = array_values.ArraySnapshots.made

    def cut_now(store):
        nonlocal since
        upto = store.settled()
        cut.extend(store.chunks(since, upto))
        since = upto
        if after_cut is not None:
            after_cut(store)

    taken = array_values.ArraySnapshots.taken_node  # (the torch adapter's `made`)

    def made(self, nid, data, grad=None):
        if nid and not nid % every:
            cut_now(self.records)
        return original(self, nid, data, grad)

    def taken_node(self, nid, value):
        if nid and not nid % every:
            cut_now(self.records)
        return taken(self, nid, value)

    monkeypatch.setattr(array_values.ArraySnapshots, "made", made)
    monkeypatch.setattr(array_values.ArraySnapshots, "taken_node", taken_node)
    recorder = Recorder(load_scenario(path))
    recorder.execute()
    cut_now(recorder.records)
    monkeypatch.setattr(array_values.ArraySnapshots, "made", original)
    monkeypatch.setattr(array_values.ArraySnapshots, "taken_node", taken)
    return cut, recorder


@pytest.fixture
def kept_notices(monkeypatch):
    """Every notification an `MgtuiApp` gives, kept on it (`notices_of(app)`) after its toast
    has timed out: on a loaded machine a test can reach its check later than a toast lasts."""
    from mgtui.tui.app import MgtuiApp

    notify = MgtuiApp.notify

    def keep(self, message, *args, **kwargs):
        self.__dict__.setdefault("kept_notices", []).append(str(message))
        return notify(self, message, *args, **kwargs)

    monkeypatch.setattr(MgtuiApp, "notify", keep)


def notices_of(app) -> list[str]:
    """The notifications `app` has given so far (with the `kept_notices` fixture)."""
    return list(app.__dict__.get("kept_notices", []))
