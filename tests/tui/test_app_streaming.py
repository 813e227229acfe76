"""A saved trace streams into the app as a recording does (issue 24): its first steps
are on screen while the rest of the file is still being read."""

from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path

from mgtui.recording.recorder import record
from mgtui.trace import binary, chunks_of
from mgtui.tui import app_loading
from mgtui.tui.app import MgtuiApp

ROOT = Path(__file__).resolve().parent.parent.parent


def small_chunked_file(path: Path) -> tuple[int, int]:
    """mlp.py saved in chunks of 16 records (a big trace's layout, small): (the file's
    size, its steps)."""
    trace = record(ROOT / "scenarios" / "mlp.py")
    out = io.BytesIO()
    out.write(binary.encode_header(trace.scenario, trace.title, trace.notes, trace.source))
    for c in trace.closures:
        out.write(binary.encode_closure(c))
    for chunk in chunks_of(trace, 16):
        out.write(binary.encode_chunk(chunk))
    out.write(binary.encode_end(trace.error, trace.output,
                                [(p.kind, p.start, p.end) for p in trace.passes]))
    path.write_bytes(out.getvalue())
    return len(out.getvalue()), len(trace)


class HeldReader(io.FileIO):
    """A file that stops before its last half until `go` is set: what has been read
    by then is `at`."""

    def __init__(self, path: Path, go: threading.Event) -> None:
        super().__init__(path, "rb")
        self.go, self.size, self.at = go, path.stat().st_size, 0

    def read(self, n: int = -1) -> bytes:
        if self.at >= self.size // 2:
            assert self.go.wait(60), "the test never let the reader go on"
        data = super().read(n)
        self.at += len(data)
        return data


async def test_a_saved_trace_shows_its_first_steps_before_it_is_all_read(tmp_path, monkeypatch):
    path = tmp_path / "mlp.mgtrace"
    size, steps = small_chunked_file(path)
    go, readers = threading.Event(), []

    def held(p):
        readers.append(HeldReader(p, go))
        return readers[-1]

    monkeypatch.setattr(app_loading, "open_saved", held)
    app = MgtuiApp(path)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(2000):  # until the first steps are on screen
                trace = app.debugger.trace
                if trace is not None and len(trace):
                    break
                await pilot.pause(0.01)
            await pilot.pause()
            shown = app.debugger.trace
            assert shown is not None and 0 < len(shown) < steps  # the first steps only
            assert readers and readers[0].at < size  # and the file not all read
            assert app.loading
            assert app.screen is app.debugger and app.debugger.position == 0  # step 0 shown
            go.set()
            for _ in range(2000):
                if not app.loading:
                    break
                await pilot.pause(0.01)
            assert not app.loading and len(app.debugger.trace) == steps
            assert readers[0].at == size
    finally:
        go.set()


def test_a_saved_trace_puts_its_first_steps_first():
    """`chunks_of` (what `--save` writes) gives each chunk of events after the nodes it
    names and before the nodes it does not need, so a reader can show step 0 after the
    first chunks, not after every node."""
    trace = record(ROOT / "scenarios" / "mlp.py")
    chunks = list(chunks_of(trace, 16))
    kinds = [type(c).__name__ for c in chunks]
    assert kinds.index("EventChunk") < len(kinds) - 1 - kinds[::-1].index("NodeChunk")
    made = 0
    for chunk in chunks:
        if type(chunk).__name__ == "NodeChunk":
            made += len(chunk.ops)
        else:
            assert max(chunk.nodes) < made  # every node a step names is there before it
    assert made == trace.node_count
    whole = binary.loadb(b"".join([binary.encode_header(trace.scenario, "", "", ""),
                                   *map(binary.encode_closure, trace.closures),
                                   *map(binary.encode_chunk, chunks),
                                   binary.encode_end(trace.error, trace.output, None)]))
    assert whole.node_count == trace.node_count and len(whole) == len(trace)
    assert list(whole.node_data) == list(trace.node_data)
