"""Saved traces that lie about their size (issue 22 item 10): `--max-nodes` and
`--max-memory` apply to loading a file as to recording one, checked from what each record
declares before the memory is spent; a record that claims more bytes than any may hold
is refused with the reason; no message echoes more than a few dozen digits of a number."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import tracemalloc
from array import array
from pathlib import Path

import pytest

from mgtui.trace import table as record_table
from mgtui.errors import ScenarioLoadError
from mgtui.trace.export import dumps, load
from mgtui.run.lessons import LessonError, record_lesson
from mgtui.recording.recorder import record
from mgtui.trace import NodeChunk

from tests.conftest import ROOT, SCENARIOS

PER_RECORD = 1_000_000  # nodes each record of a bomb declares (22 MB inflated, 22 KB deflated)


def bomb(path: Path, records: int) -> Path:
    """A small binary trace of `records` N records of PER_RECORD unlabelled leaves each:
    a few dozen kilobytes that unpack to `records` million nodes."""
    n = PER_RECORD
    zeros_d, zeros_i = array("d", bytes(8 * n)), array("i", bytes(4 * n))
    chunk = NodeChunk(("",) * n, ("",) * n, zeros_d, zeros_i, zeros_i, array("i"))
    record = record_table.encode_chunk(chunk, level=9)
    path.write_bytes(record_table.encode_header(str(path), "bomb", "", "") + record * records
                     + record_table.encode_end(None, "", None))
    return path


def mgtui(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mgtui.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_a_small_file_that_declares_millions_of_nodes_is_refused_by_max_nodes(tmp_path):
    """3 million nodes in about 70 KB: over the default --max-nodes (2,000,000). It used
    to load them all (40 million: 1.94 GB, 14 s, exit 0)."""
    path = bomb(tmp_path / "bomb.mgtrace", 3)
    assert path.stat().st_size < 200_000
    result = mgtui(path, "--print")
    assert result.returncode == 2
    assert result.stderr == (f"mgtui: {path}: not loaded: it holds more than 2,000,000 nodes "
                             "(--max-nodes)\n")
    assert result.stdout == ""
    result = mgtui(path, "--print", "--max-nodes", "3000000")  # within the limit: loads
    assert result.returncode == 0, result.stderr
    assert "Nodes at the end (3,000,000)" in result.stdout


def test_the_limit_is_checked_before_the_record_is_unpacked(tmp_path):
    """The first record alone goes past --max-nodes: it is refused from the count it
    declares, before its 22 MB are inflated."""
    path = bomb(tmp_path / "bomb.mgtrace", 2)
    tracemalloc.start()
    try:
        with pytest.raises(ScenarioLoadError, match="holds more than 500,000 nodes"):
            load(path, max_nodes=500_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20  # the file's bytes (tens of KB), not the record's 22 MB


def test_max_memory_applies_to_loading_a_file(tmp_path):
    """3 million nodes take more than 100 MB once loaded (the first record's million
    already does, with what reading its labels' JSON may take: refused before it is)."""
    path = bomb(tmp_path / "bomb.mgtrace", 3)
    result = mgtui(path, "--print", "--max-nodes", "3000000", "--max-memory", "100M")
    assert result.returncode == 2
    assert result.stderr == (f"mgtui: {path}: not loaded: it would take more than 100M of "
                             "memory to read (--max-memory)\n")


def test_a_json_trace_is_held_to_max_nodes_too(tmp_path):
    path = tmp_path / "chain.json"
    path.write_text(dumps(record(SCENARIOS / "chain.py")), encoding="utf-8")
    assert load(path, max_nodes=7).node_count == 7  # exactly as many as it holds
    with pytest.raises(ScenarioLoadError, match=r"not loaded: it holds more than 6 nodes"):
        load(path, max_nodes=6)
    # a document read whole (not laid out as mgtui writes it) is counted before it is read
    path.write_text(path.read_text(encoding="utf-8").replace('{"id": 0,', '{ "id": 0,'),
                    encoding="utf-8")
    with pytest.raises(ScenarioLoadError, match=r"not loaded: it holds more than 6 nodes"):
        load(path, max_nodes=6)


def test_a_lesson_trace_is_loaded_within_the_limits_given(tmp_path):
    path = bomb(tmp_path / "bomb.mgtrace", 1)
    with pytest.raises(LessonError, match="holds more than 1,000 nodes"):
        record_lesson(path, max_nodes=1000)


def test_a_record_that_claims_2_to_the_36_bytes_says_so(tmp_path):
    """It used to be `is not an mgtui trace:` and nothing more (a MemoryError)."""
    path = tmp_path / "huge.mgtrace"
    path.write_bytes(record_table.encode_header("x.py", "", "", "")
                     + struct.pack("<cQ", b"N", 1 << 36) + b"abc")
    result = mgtui(path, "--print")
    assert result.returncode == 2
    assert result.stderr == (f"mgtui: {path} is not an mgtui trace: record N: claims "
                             "68,719,476,736 bytes, more than a record may hold "
                             "(268,435,456)\n")


def test_a_record_that_claims_more_than_the_file_holds_reads_no_more_than_it(tmp_path):
    path = tmp_path / "short.mgtrace"
    path.write_bytes(record_table.encode_header("x.py", "", "", "")
                     + struct.pack("<cQ", b"N", 1 << 27) + b"abc")
    tracemalloc.start()
    try:
        with pytest.raises(ScenarioLoadError, match="ends inside a record"):
            load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20  # not the 128 MB it claims


LONG = "9" * 100_000


@pytest.mark.parametrize("change", [
    ('{"id": 0,', '{"id": ' + LONG + ","),  # beyond Python's 4,300 digits
    ('{"id": 0,', '{"id": ' + LONG[:4000] + ","),  # within them
    ('"children": [0, 1]', '"children": [0, ' + LONG[:4000] + "]"),
    ('{"kind": "create", "node": 0}', '{"kind": "create", "node": ' + LONG[:4000] + "}"),
    ('"data": 2.0', '"data": 1' + "0" * 4000),
    ('{"kind": "create"', '{"kind": "' + "x" * 100_000 + '"'),
], ids=["100k-digit id", "4000-digit id", "child", "event node", "data", "kind"])
def test_a_message_quotes_at_most_a_few_dozen_digits_of_a_bad_value(tmp_path, change):
    path = tmp_path / "bad.json"
    text = dumps(record(SCENARIOS / "chain.py"))
    assert change[0] in text
    path.write_text(text.replace(change[0], change[1], 1), encoding="utf-8")
    with pytest.raises(ScenarioLoadError) as info:
        load(path)
    message = info.value.message
    assert message.startswith(f"{path} is not an mgtui trace: ")
    assert len(message) < len(str(path)) + 200, message
    assert not re.search(r"[0-9x]{41}", message), message
    assert "set_int_max_str_digits" not in message


async def test_the_app_loads_a_file_within_its_limits(tmp_path, clean_env):
    """`mgtui FILE --max-nodes N` opens the app: the same limits hold there."""
    from mgtui.tui.app import MgtuiApp

    from tests.tui.test_app import loaded

    path = bomb(tmp_path / "bomb.mgtrace", 1)
    app = MgtuiApp(path, max_nodes=1000)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        assert type(app.screen).__name__ == "ErrorScreen"
        assert app.screen.message == f"{path}: not loaded: it holds more than 1,000 nodes " \
            "(--max-nodes)"
