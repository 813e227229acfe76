"""Small files and streams that would take big memory (issue 34, points 4 to 6 and the
readers' small ones of 9): every reader checks what a record declares, and what reading
it may take at worst, before it spends the memory; `--max-memory` holds for saved traces
of both formats and for the runner's live stream; a node's inputs are capped.

Each file here is made by the test, a few kilobytes to a few hundred: deflate packs a
megabyte of the same bytes into about a kilobyte."""

from __future__ import annotations

import json
import resource
import struct
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import pytest

from mgtui.errors import ScenarioLoadError
from mgtui.trace import EventKind, TraceBuilder, validation
from mgtui.trace import table as record_table
from mgtui.run.lessons import file_title
from mgtui.trace.binary import dumpb, header_of
from mgtui.trace.load_limits import LoadLimitError
from mgtui.trace.records import MAX_INPUTS
from mgtui.recording.recorder import record
from mgtui.recording.shapes import FieldsOptionError, project_fields
from mgtui.settings.config import load_config
from mgtui.run.runner import run
from mgtui.trace.decoder import RecordDecoder
from mgtui.trace.export import dumps, load

from tests.conftest import ROOT, SCENARIOS

CHAIN = record(SCENARIOS / "chain.py")

MB = 1 << 20


def traced_peak(call) -> tuple[BaseException | None, int]:
    """What `call()` raised (None if nothing), and the most memory it had allocated."""
    tracemalloc.start()
    try:
        try:
            call()
            raised = None
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            raised = exc
        return raised, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def trace_file(path: Path, *records: bytes) -> Path:
    """A binary trace: the header, `records`, the end record."""
    path.write_bytes(record_table.encode_header("x.py", "hostile", "", "") + b"".join(records)
                     + record_table.encode_end(None, "", None))
    return path


def node_record(json_text: bytes, count: int = 0) -> bytes:
    """An N record of `count` nodes (zero columns) whose labels are `json_text`,
    deflated as tightly as zlib can."""
    payload = (struct.pack("<II", count, 0) + b"i" + bytes(16 * count) + json_text)
    return record_table._record(record_table.NODES, zlib.compress(payload, 9))


def empty_lists(n: int) -> bytes:
    """JSON of n empty lists where labels should be: about 25 bytes of objects a byte."""
    return b"[[" + b"[]," * n + b"[]],[]]"


def mgtui_limited(*args, address_space: int = 1 << 30) -> subprocess.CompletedProcess:
    """`mgtui ARGS` in a child held to `address_space` bytes (so that a reader that
    would take gigabytes fails there, not on the machine)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return subprocess.run([sys.executable, "-m", "mgtui.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, preexec_fn=limit)


# -- binary traces ----------------------------------------------------------------------


def test_a_65_kb_node_record_of_nested_lists_is_refused_within_max_memory(tmp_path):
    """64 MB of `[],` deflated to 62 KB, where an N record's labels go. It used to be
    parsed whole before its shape was checked: 1.6 GB and 12 s, even with --max-memory
    200M. Now its JSON is counted as it is inflated, a piece at a time, against what the
    record declares (no node: no labels)."""
    path = trace_file(tmp_path / "lists.mgtrace", node_record(empty_lists(21_000_000)))
    assert path.stat().st_size < 70_000
    raised, peak = traced_peak(lambda: load(path, max_memory=200 * MB))
    assert isinstance(raised, ScenarioLoadError)
    assert "record N: holds far more JSON values than the labels of its 0 nodes" in str(raised)
    assert peak < 40 * MB  # a piece of it (16 MB), not the 64 MB, nor the 1.6 GB it made


def test_a_255_kb_node_record_is_refused_by_default_in_one_line(tmp_path):
    """256 MB inflated (the most a record may hold), 5.5 GB once parsed: with the
    default limits, refused from its first piece; in a child held to 1 GB of address
    space, so that the old reader fails with a MemoryError, not the machine."""
    path = trace_file(tmp_path / "lists.mgtrace", node_record(empty_lists(85_000_000)))
    assert path.stat().st_size < 260_000
    result = mgtui_limited(path, "--print")
    assert result.returncode == 2
    assert result.stderr == (f"mgtui: {path} is not an mgtui trace: record N: holds far more "
                             "JSON values than the labels of its 0 nodes\n")


def test_labels_within_what_the_nodes_declare_are_still_held_to_max_memory(tmp_path):
    """Three lists of 300,000 labels for 300,000 nodes: the shape they declare, but
    reading them may take more than --max-memory 40M (300,000 nodes are charged 19 MB,
    their labels' JSON at worst 120 MB): refused before `json.loads`, where it used to
    be charged twice its 4 MB of text."""
    n = 300_000
    labels = b"[" + b",".join([b'"ab"'] * n) + b"]"
    path = trace_file(tmp_path / "labels.mgtrace",
                      node_record(b"[" + b",".join([labels] * 3) + b"]", count=n))
    raised, peak = traced_peak(lambda: load(path, max_memory=40 * MB))
    assert isinstance(raised, ScenarioLoadError)
    assert "would take more than 40M of memory to read (--max-memory)" in str(raised)
    assert peak < 24 * MB  # its 9 MB inflated, not the labels parsed (about 55 MB)


def test_an_events_record_inflates_no_further_than_the_events_it_declares(tmp_path):
    """An E record of no events, followed by 200 MB of zeros deflated to 200 KB: it used
    to be inflated whole (200 MB) before the bytes left over were found."""
    payload = struct.pack("<II", 0, 0) + b"Bb" + bytes(200 * MB)
    record = record_table._record(record_table.EVENTS, zlib.compress(payload, 9))
    path = trace_file(tmp_path / "events.mgtrace", record)
    raised, peak = traced_peak(lambda: load(path))
    assert isinstance(raised, ScenarioLoadError)
    assert "record E: is damaged, or holds more than it declares" in str(raised)
    assert peak < 4 * MB


def test_a_json_record_is_held_to_max_memory_by_what_parsing_it_may_take(tmp_path):
    """A names record (M) of 3 MB of empty lists: charged 6 MB as text, it took 70 MB
    to parse. With --max-memory 100M it is refused before."""
    text = b"[" + b"[]," * MB + b"[]]"
    path = trace_file(tmp_path / "names.mgtrace", record_table.encode_json("M", []),
                      record_table._record("M", text))
    raised, peak = traced_peak(lambda: load(path, max_memory=100 * MB))
    assert isinstance(raised, ScenarioLoadError)
    assert "would take more than 100M of memory to read (--max-memory)" in str(raised)
    assert peak < 12 * MB


# -- JSON traces --------------------------------------------------------------------------


def json_trace(path: Path, before_nodes: str = "", nodes_first: bool = False) -> Path:
    """chain.py's trace as JSON, with `before_nodes` (text of fields) put before its
    nodes; `nodes_first`: its format after them (a file read whole, not as a stream)."""
    text = dumps(CHAIN)
    text = text.replace('"nodes": [', before_nodes + '"nodes": [', 1)
    if nodes_first:
        text = text.replace('"format": "mgtui-trace", ', "", 1).rstrip()
        text = text[:-1] + ', "format": "mgtui-trace"}\n'
    path.write_text(text, encoding="utf-8")
    return path


def decoded_characters(monkeypatch) -> list[int]:
    """The characters each decode of the JSON reader is handed, from where it starts."""
    handed: list[int] = []
    raw_decode = json.JSONDecoder.raw_decode

    def counting(self, s, idx=0):
        handed.append(len(s) - idx)
        return raw_decode(self, s, idx)

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counting)
    return handed


def test_one_long_value_is_decoded_about_twice_not_once_a_megabyte(tmp_path, monkeypatch):
    """A node whose children are one list of 16 MB (read by the reader's slow path):
    each megabyte read, the decoder was handed the whole value again (about 136 MB of
    text for 16 MB; 24 MB took 24 s). Now it is tried again only once as much more has
    been read as there was of it."""
    path = json_trace(tmp_path / "long.json")
    text = path.read_text(encoding="utf-8").replace(
        '"children": [], ', '"children": [' + "0, " * (16 * MB // 3) + "0], ", 1)
    path.write_text(text, encoding="utf-8")
    handed = decoded_characters(monkeypatch)
    with pytest.raises(ScenarioLoadError, match=r"not an mgtui trace: nodes\[0\]"):
        load(path)  # (its 5.6 million inputs, each node 0 itself)
    assert sum(handed) < 4 * len(text)


def test_a_junk_field_of_millions_of_lists_is_refused_before_it_is_parsed(tmp_path):
    """15 MB of empty lists in a field mgtui does not know, before the nodes: it used
    to be parsed again every megabyte (60 MB: past 120 s), and kept. Now a field that
    may hold more values than any field of a trace is refused from its count."""
    path = json_trace(tmp_path / "junk.json", '"junk": [' + "[]," * (5 * MB) + '[]], ')
    raised, peak = traced_peak(lambda: load(path))
    assert isinstance(raised, ScenarioLoadError)
    assert "'junk': holds far more values than any field of a trace" in str(raised)
    # (what it was parsed into before its count went past: at most 4 million values,
    # and the text read so far; not its 5 million lists, 350 MB)
    assert peak < 200 * MB


def test_a_field_is_held_to_max_memory_before_it_is_decoded(tmp_path):
    """A million empty lists where the closures go (3 MB: at worst 190 MB to parse):
    with --max-memory 50M, refused before they are made (64 MB)."""
    path = json_trace(tmp_path / "closures.json", '"closures": [' + "[]," * MB + '[]], ')
    raised, peak = traced_peak(lambda: load(path, max_memory=50 * MB))
    assert isinstance(raised, ScenarioLoadError)
    assert "would take more than 50M of memory to read (--max-memory)" in str(raised)
    assert peak < 32 * MB


def test_a_document_read_whole_is_held_to_max_memory_at_its_worst(tmp_path):
    """A file not laid out for the stream (its format after its nodes) is read whole
    with `json.loads`: 6 MB of empty lists were charged twice their size (12 MB) and
    took 130 MB, with --max-memory 60M. Now its worst case is checked first."""
    path = json_trace(tmp_path / "whole.json", '"junk": [' + "[]," * (2 * MB) + '[]], ',
                      nodes_first=True)
    raised, peak = traced_peak(lambda: load(path, max_memory=60 * MB))
    assert isinstance(raised, ScenarioLoadError)
    assert "would take more than 60M of memory to read (--max-memory)" in str(raised)
    assert peak < 32 * MB


# -- the runner's live stream -----------------------------------------------------------

FORGER = '''"""Writes a record of its own to mgtui's trace stream, then records a little."""
import os
from engine import Value

stream = int(open("/proc/self/cmdline", "rb").read().split(b"\\0")[-2])  # (the keeper's)
with open(os.path.join(os.path.dirname(__file__), "forged.bin"), "rb") as f:
    os.write(stream, f.read())
a = Value(2.0, label="a")
b = a * a
b.backward()
'''


def forger(tmp_path: Path, record: bytes) -> Path:
    """A scenario that writes `record` to its trace stream before it makes a node."""
    (tmp_path / "forged.bin").write_bytes(record)
    path = tmp_path / "forger.py"
    path.write_text(FORGER, encoding="utf-8")
    return path


def test_a_forged_record_on_the_stream_is_held_to_the_runs_max_memory(tmp_path):
    """An N record of no nodes whose labels are `[[],[]]` and 100 MB of spaces (100 KB
    deflated): within what it declares, but not within --max-memory 200M once read.
    The parent used to inflate and decode it whatever the run's limits (they held the
    child only); now it stops reading the stream there, says so, and stops the run."""
    payload = struct.pack("<II", 0, 0) + b"i" + b"[[]," + b" " * (100 * MB) + b"[]]"
    record = record_table._record(record_table.NODES, zlib.compress(payload, 9))
    assert len(record) < 150_000
    path = forger(tmp_path, record)
    raised, peak = traced_peak(lambda: RESULTS.append(run(path, max_memory=200 * MB)))
    assert raised is None
    result = RESULTS.pop()
    assert not result.finished
    assert result.message == ("mgtui stopped reading the scenario's trace stream: record N "
                              "would take more than 200M of memory to read (--max-memory)")
    assert peak < 40 * MB


RESULTS: list = []


def test_a_memory_error_reading_the_stream_names_the_stream(tmp_path, monkeypatch):
    """Out of memory in the reader thread: it used to die with a MemoryError traceback,
    and the run said "the scenario's process ended before it finished"."""
    take = RecordDecoder.take

    def short_of_memory(self, tag, payload):
        if tag == record_table.NODES:
            raise MemoryError
        take(self, tag, payload)

    monkeypatch.setattr(RecordDecoder, "take", short_of_memory)
    result = run(SCENARIOS / "chain.py")
    assert not result.finished
    assert result.message == ("mgtui stopped reading the scenario's trace stream: there was "
                              "not enough memory to read its record N")


def test_a_forged_could_not_run_record_is_quoted_short(tmp_path):
    """An X record of 100 KB of message and 100 KB of detail: it was printed whole."""
    forged = record_table.encode_not_run("m" * 100_000, "d" * 100_000)
    path = forger(tmp_path, forged)
    with pytest.raises(ScenarioLoadError) as caught:
        run(path)
    assert caught.value.message == "m" * 4000 + "… (100,000 characters)"
    assert caught.value.detail == "… (100,000 characters) " + "d" * 2000


def test_a_250_kb_record_on_the_stream_does_not_blow_up_the_debugger(tmp_path):
    """The N record of 256 MB of empty lists (250 KB deflated), written by the scenario
    to its trace stream: the mgtui process itself took 2.7 GB decoding it (here, held to
    1.5 GB of address space, its reader thread died of a MemoryError, with a traceback).
    Now it is refused from its first piece, and the run says why."""
    path = forger(tmp_path, node_record(empty_lists(85_000_000)))
    result = mgtui_limited("--print", path, address_space=3 << 29)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.endswith(
        f"mgtui: {path}: recording stopped: its trace stream was damaged (record N: holds "
        "far more JSON values than the labels of its 0 nodes) (the trace up to there was "
        "kept)\n")


# -- a node's inputs ----------------------------------------------------------------------


def wide_trace(path: Path, inputs: int, monkeypatch) -> Path:
    """A binary trace of a leaf and one node with `inputs` inputs (all the leaf), written
    as a hostile tool would (the cap lifted while it is built)."""
    monkeypatch.setattr(validation, "MAX_INPUTS", 1 << 40)
    builder = TraceBuilder("wide.py", "wide")
    builder.add_node("a", "", [], 1.0, 1)
    builder.add_event(EventKind.CREATE, 0, line=1)
    builder.add_node("s", "+", [0] * inputs, float(inputs), 2)
    builder.add_event(EventKind.CREATE, 1, line=2)
    builder.validate()
    path.write_bytes(dumpb(builder.build(None, "", None, last=True)))
    monkeypatch.undo()
    return path


def test_a_node_with_millions_of_inputs_is_refused_where_the_trace_is_read(tmp_path,
                                                                           monkeypatch):
    """72 KB, one node of 4 million inputs: --print took 17.5 s (35 s on a busy
    machine), --export html 22.8 s, the app never reached step 1; 16 million, 88 s and
    1.7 GB. Now no node may have more than MAX_INPUTS, checked as its chunk is read."""
    path = wide_trace(tmp_path / "wide.mgtrace", 4_000_000, monkeypatch)
    assert path.stat().st_size < 80_000
    for mode in (("--print",), ("--export", "html")):
        result = mgtui_limited(*mode, path)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr == (f"mgtui: {path} is not an mgtui trace: nodes[1]: has "
                                 "4,000,000 inputs, more than mgtui shows of a node "
                                 f"({MAX_INPUTS:,})\n")


def test_a_node_with_as_many_inputs_as_mgtui_shows_is_read(tmp_path, monkeypatch):
    path = wide_trace(tmp_path / "wide.mgtrace", MAX_INPUTS, monkeypatch)
    assert len(load(path).children(1)) == MAX_INPUTS
    path = wide_trace(tmp_path / "wider.mgtrace", MAX_INPUTS + 1, monkeypatch)
    with pytest.raises(ScenarioLoadError, match=f"nodes.1.: has {MAX_INPUTS + 1:,} inputs"):
        load(path)


# -- settings files ------------------------------------------------------------------------


def test_a_pyproject_nested_50000_deep_is_one_line(tmp_path):
    """It printed a RecursionError traceback, after "the scenario ended its process with
    os._exit(1)"."""
    (tmp_path / "pyproject.toml").write_text(
        "[tool.mgtui]\nfields = " + "[" * 50_000 + "]" * 50_000 + "\n", encoding="utf-8")
    scenario = tmp_path / "chain.py"
    scenario.write_bytes((SCENARIOS / "chain.py").read_bytes())
    result = mgtui_limited("--print", scenario)
    assert result.returncode == 2
    assert result.stderr == (f"mgtui: {tmp_path / 'pyproject.toml'}: cannot be read: it is "
                             "nested too deeply\n")


def test_a_pyproject_of_113_mb_is_refused_by_its_size(tmp_path):
    """It was read whole and parsed (16 s, 507 MB, for one of settings)."""
    path = tmp_path / "pyproject.toml"
    with path.open("wb") as f:
        f.write(b"[tool.mgtui]\nfields = {data = 'data'}\n# ")
        f.truncate(113 * MB)  # (a sparse file: no disk spent)
    raised, peak = traced_peak(lambda: project_fields(tmp_path))
    assert isinstance(raised, FieldsOptionError)
    assert str(raised) == (f"{path}: not read: it is over 4 MB (a pyproject.toml has a few "
                           "kilobytes)")
    assert peak < 8 * MB


def test_a_settings_file_nested_too_deeply_gives_the_defaults_and_a_message(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    config = load_config(path)
    assert config.keymap == {}
    assert config.problem == (f"{path}: is nested too deeply to be a settings file; using the "
                              "default keys.")


def test_a_trace_files_title_is_read_within_a_bound(tmp_path):
    """A lesson folder's titles are read from each trace's header record alone: one of
    3 MB of empty lists took 70 MB to parse (one of 256 MB, gigabytes)."""
    path = tmp_path / "lesson.mgtrace"
    path.write_bytes(record_table.encode_head()
                     + record_table._record(record_table.HEADER, b"[" + b"[]," * MB + b"[]]"))
    raised, peak = traced_peak(lambda: header_of(path))
    assert isinstance(raised, LoadLimitError)
    assert file_title(path) == ""
    assert peak < 16 * MB


def test_a_record_that_claims_more_than_max_memory_is_refused_before_it_is_gathered(tmp_path):
    """A record head claiming 200 MB, with --max-memory 200M: held twice while it is
    gathered (in the buffer, then cut from it), it is refused from its head."""
    path = forger(tmp_path, struct.pack("<cQ", b"N", 200 * MB))
    result = run(path, max_memory=200 * MB)
    assert not result.finished
    assert result.message == ("mgtui stopped reading the scenario's trace stream: its next "
                              "record would take more than 200M of memory to read "
                              "(--max-memory)")
