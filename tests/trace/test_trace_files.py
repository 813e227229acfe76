"""Saved traces, JSON and binary: they round-trip, and a corrupt or hostile one gets a
clear message naming its first bad field, never a traceback and never a trace that
breaks later."""

from __future__ import annotations

import copy
import io
import json
import random
import struct
import zlib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mgtui.trace import Closure, EventKind, Field, TraceBuilder, TraceFormatError
from mgtui.trace import binary as tracefile
from mgtui.trace.engines import explain
from mgtui.trace.export import dumps, load, to_json
from mgtui.recording.recorder import ScenarioLoadError, record
from mgtui.session.timeline import Timeline

from tests.conftest import SCENARIOS

NEURON = record(SCENARIOS / "neuron.py")
NEURON_DOC = to_json(NEURON)


def same_trace(a, b) -> None:
    assert (a.scenario, a.title, a.notes, a.source, a.output) == (
        b.scenario, b.title, b.notes, b.source, b.output)
    assert len(a) == len(b) and a.node_count == b.node_count and a.passes == b.passes
    assert a.closures == b.closures and a.error == b.error
    assert [a.event(i) for i in range(len(a))] == [b.event(i) for i in range(len(b))]
    assert [a.node(n) for n in range(a.node_count)] == [b.node(n) for n in range(b.node_count)]


@pytest.mark.parametrize("name", ["neuron", "mlp", "bugs/non_finite"])
def test_binary_round_trip(name, tmp_path):
    trace = record(SCENARIOS / f"{name}.py")
    path = tmp_path / "t.mgtrace"
    path.write_bytes(tracefile.dumpb(trace))
    assert tracefile.is_trace_file(path)
    back = load(path)  # the loader tells the formats apart by the magic
    same_trace(trace, back)


def test_a_saved_trace_is_told_from_a_scenario_in_one_place(tmp_path):
    """By name (.json, .mgtrace) or by a binary trace's magic; the lessons ask here."""
    from mgtui.trace.export import is_saved_trace
    from mgtui.run.lessons import record_lesson

    binary = tmp_path / "renamed.bin"
    binary.write_bytes(tracefile.dumpb(NEURON))
    (tmp_path / "t.json").write_text(dumps(NEURON), encoding="utf-8")
    (tmp_path / "t.mgtrace").write_bytes(b"")
    (tmp_path / "s.py").write_text("x = 1\n", encoding="utf-8")
    assert [is_saved_trace(tmp_path / n) for n in ("renamed.bin", "t.json", "t.mgtrace", "s.py",
                                                    "missing.py")] == [True, True, True, False, False]
    assert len(record_lesson(binary).trace) == len(NEURON)  # read, not run as a script


def test_binary_is_much_smaller_than_json():
    trace = record(SCENARIOS / "mlp.py")
    assert len(tracefile.dumpb(trace)) * 5 <= len(dumps(trace).encode())  # issue 8: a fifth


def chunk_sizes(data: bytes) -> list[tuple[int, int]]:
    """(stored, inflated) bytes of each N, E and W record of a binary trace."""
    return [(len(payload), len(zlib.decompress(payload)))
            for tag, payload in tracefile.records(io.BytesIO(data)) if tag in "NEW"]


def test_chunks_stored_uncompressed_as_the_child_streams_them_read_the_same():
    """The runner's child sends its chunks at zlib level 0 (stored): the same format,
    which today's reader reads unchanged; a file written from the trace is deflated."""
    trace = record(SCENARIOS / "mlp.py")
    from mgtui.trace import chunks_of

    stored = b"".join([tracefile.encode_header(trace.scenario, trace.title, trace.notes,
                                               trace.source),
                       *map(tracefile.encode_closure, trace.closures),
                       *(tracefile.encode_chunk(c, 0) for c in chunks_of(trace, size=500)),
                       tracefile.encode_end(trace.error, trace.output,
                                            [(p.kind, p.start, p.end) for p in trace.passes])])
    same_trace(tracefile.loadb(stored), trace)
    sizes = chunk_sizes(stored)
    assert len(sizes) > 3 and all(packed > raw for packed, raw in sizes)  # stored, not deflated
    saved = chunk_sizes(tracefile.dumpb(trace))
    assert sum(p for p, _ in saved) * 3 < sum(r for _, r in saved)  # deflated


def test_a_scenario_that_raised_round_trips_with_its_error(write_scenario):
    path = write_scenario("raises", """
        from engine import Value
        a = Value(2.0)
        b = a * 3
        raise RuntimeError("[/] boom")
    """)
    trace = record(path)
    assert trace.error is not None
    same_trace(trace, tracefile.loadb(tracefile.dumpb(trace)))


def write_doc(tmp_path, doc) -> object:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return path


def mutated(change) -> dict:
    doc = copy.deepcopy(NEURON_DOC)
    change(doc)
    return doc


def first_backward(doc) -> dict:
    return next(e for e in doc["events"] if e["kind"] == "backward" and e["writes"])


def set_(path, value):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key] if not callable(key) else key(target)
        target[path[-1]] = value
    return change


CORRUPT = {
    "a huge int": (set_(["nodes", 0, "data"], 10**400), "nodes[0].data"),
    "a line of 2**40": (set_(["nodes", 3, "line"], 2**40), "nodes[3].line"),
    "a pass end far away": (set_(["passes", 0, "end"], 10**6), "passes[0]"),
    "a reversed pass": (set_(["passes", 0, "end"], -1), "passes[0]"),
    "a closure index of 999": (set_([first_backward, "closure"], 999), ".closure"),
    "a cycle": (set_(["nodes", 0, "children"], [5]), "nodes[0].children[0]"),
    "a self-loop": (set_(["nodes", 5, "children"], [5]), "nodes[5].children[0]"),
    "an unknown write target": (set_([first_backward, "writes", 0, "node"], 10**9), "node"),
    "a bool for an id": (set_(["events", 0, "node"], True), "events[0].node"),
    "an unknown kind": (set_(["events", 1, "kind"], "explode"), "events[1].kind"),
    "a label that is not a string": (set_(["nodes", 0, "label"], ["x"]), "nodes[0].label"),
    "an error after the end": (set_(["error"], {"type": "E", "message": "m", "line": 1,
                                                "after_event": 10**6}), "error.after_event"),
    "nodes that are not a list": (set_(["nodes"], {"a": 1}), "nodes"),
    "a node made twice": (set_(["events", 1, "node"], 0), "events[1].node"),
}


@pytest.mark.parametrize("case", CORRUPT, ids=list(CORRUPT))
def test_a_corrupt_json_trace_is_refused_naming_the_field(case, tmp_path):
    change, field = CORRUPT[case]
    path = write_doc(tmp_path, mutated(change))
    with pytest.raises(ScenarioLoadError) as info:
        load(path)
    assert "is not an mgtui trace" in info.value.message
    assert field in info.value.message


def test_nesting_100k_deep_is_refused(tmp_path):
    path = write_doc(tmp_path, "[" * 100_000 + "]" * 100_000)
    with pytest.raises(ScenarioLoadError, match="not an mgtui trace"):
        load(path)


def test_a_truncated_binary_trace_is_refused(tmp_path):
    data = tracefile.dumpb(NEURON)
    for cut in (4, 20, len(data) // 2, len(data) - 1):
        path = tmp_path / "cut.mgtrace"
        path.write_bytes(data[:cut])
        with pytest.raises(ScenarioLoadError, match="not an mgtui trace"):
            load(path)


def use_everything(trace) -> None:
    """What the app and --print do with a trace: every step, explained, both ways."""
    timeline = Timeline(trace)
    for i in range(len(trace)):
        timeline.step()
        explain(trace, timeline.data, timeline.grad, i)
        trace.line_of(i), trace.closure_of(i), trace.pass_at(i)
    timeline.seek(0)
    for p in trace.passes:
        trace.backward_calls(p), trace.graph(p), trace.backward_root(p)
    trace.index.uses, trace.losses()  # noqa: B018


def leaf_paths(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaf_paths(v, path + (k,))
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            yield from leaf_paths(v, path + (k,))
    else:
        yield path


PATHS = [p for p in leaf_paths(NEURON_DOC) if p and p[0] not in ("source", "notes", "title")]
WEIRD = st.one_of(st.integers(-3, 40), st.integers(), st.floats(allow_nan=False),
                  st.sampled_from(["nan", "inf", "grad", "data", "create", "backward", "", None,
                                   True, [], {}, "x\x1b[2J"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), WEIRD), min_size=1, max_size=4))
def test_fuzzed_json_traces_load_safely_or_not_at_all(tmp_path_factory, changes):
    doc = copy.deepcopy(NEURON_DOC)
    for path, value in changes:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    path = tmp_path_factory.mktemp("fuzz") / "t.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    try:
        trace = load(path)
    except ScenarioLoadError as exc:
        assert "not an mgtui trace" in exc.message
        return
    use_everything(trace)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 255)), min_size=1, max_size=6))
def test_fuzzed_binary_traces_load_safely_or_not_at_all(tmp_path_factory, flips):
    data = bytearray(tracefile.dumpb(NEURON))
    for at, value in flips:
        data[at % len(data)] = value
    loads_safely_or_not_at_all(tmp_path_factory, bytes(data))


def loads_safely_or_not_at_all(tmp_path_factory, data: bytes) -> None:
    """A binary trace is refused with a clear message, or loads and answers everything."""
    path = tmp_path_factory.mktemp("fuzz") / "t.mgtrace"
    path.write_bytes(data)
    try:
        trace = load(path)
    except ScenarioLoadError as exc:
        # (a flipped count may declare more than the limits: refused before it is read)
        assert any(why in exc.message for why in ("not an mgtui trace", "not valid JSON",
                                                 "not loaded: it "))
        return
    use_everything(trace)


def test_a_random_real_trace_survives_a_byte_flip_sweep(tmp_path):
    """Every byte of the binary header and first records flipped in turn."""
    data = tracefile.dumpb(NEURON)
    rng = random.Random(0)
    for at in range(0, min(len(data), 400)):
        flipped = bytearray(data)
        flipped[at] ^= 1 << rng.randrange(8)
        path = tmp_path / "t.mgtrace"
        path.write_bytes(bytes(flipped))
        try:
            use_everything(load(path))
        except ScenarioLoadError:
            pass


def rebuilt(data: bytes, change) -> bytes:
    """A binary trace with each N, E and W record's inflated payload passed through
    `change(tag, payload) -> payload`, and compressed again."""
    out = [data[: tracefile.HEAD_SIZE]]
    for tag, payload in tracefile.records(io.BytesIO(data)):
        if tag in ("N", "E", "W"):
            payload = zlib.compress(change(tag, zlib.decompress(payload)), 1)
        out.append(struct.pack("<cQ", tag.encode(), len(payload)) + payload)
    return b"".join(out)


V1_NEURON = Path(__file__).parent.parent / "data" / "neuron-v1.mgtrace"  # written by mgtui 2f1019e


def test_a_version_1_file_still_loads():
    """Version 1 (64-bit ids, a before and after for every event), as files were saved
    before version 2, loads to the same trace as recording the scenario today."""
    old = load(V1_NEURON)
    assert V1_NEURON.read_bytes()[8:10] == b"\x01\x00"  # it is a version 1 file
    assert old.scenario.endswith("neuron.py") and old.write_count > 0
    # the file was written from another checkout: its paths differ, nothing else
    assert [Path(c.filename).name for c in old.closures] == [
        Path(c.filename).name for c in NEURON.closures]
    here = tuple(replace(c, filename=now.filename) for c, now in zip(old.closures, NEURON.closures))
    same_trace(replace(old, scenario=NEURON.scenario, closures=here), NEURON)
    assert any(NEURON.change(i) != (0.0, 0.0) for i in range(len(NEURON)))  # a lone write


def test_a_version_1_id_beyond_32_bits_is_refused(tmp_path):
    def far_node(tag: str, payload: bytes) -> bytes:
        if tag != "E":
            return payload
        (count,) = struct.unpack_from("<I", payload)
        nodes = 4 + count  # after the count and the kinds: i64 nodes
        return payload[:nodes] + struct.pack("<q", 2**40) + payload[nodes + 8:]

    path = tmp_path / "far.mgtrace"
    path.write_bytes(rebuilt(V1_NEURON.read_bytes(), far_node))
    with pytest.raises(ScenarioLoadError, match="not an mgtui trace.*out of range"):
        load(path)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("NEW"), st.integers(0, 10**6),
                          st.sampled_from([0, 1, 2, 3, 0x7F, 0x80, 0xFF])), min_size=1, max_size=6))
def test_fuzzed_binary_columns_load_safely_or_not_at_all(tmp_path_factory, changes):
    """Bytes changed inside the inflated records (ids, counts, kinds, values), where
    byte flips of the compressed file rarely reach."""
    def change(tag: str, payload: bytes) -> bytes:
        raw = bytearray(payload)
        for which, at, value in changes:
            if which == tag:
                raw[at % len(raw)] = value
        return bytes(raw)

    loads_safely_or_not_at_all(tmp_path_factory, rebuilt(tracefile.dumpb(NEURON), change))


def test_the_trace_files_bench_still_runs():
    """bench/trace_files.py, once, on a small scenario (seconds, not a measurement): a
    bench that no longer runs fails here, not when someone next measures."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent.parent
    result = subprocess.run([sys.executable, str(root / "bench" / "trace_files.py"),
                             "--scenario", str(SCENARIOS / "neuron.py"), "--loads", "1"],
                            cwd=root, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "neuron.py:" in result.stdout and "json/binary" in result.stdout
    assert "binary/json" in result.stdout


V3_NEURON = Path(__file__).parent.parent / "data" / "neuron-v3.mgtrace"  # written by mgtui 279a2aa


def test_a_version_3_file_loads_with_narrow_lines_and_is_saved_as_the_current_version():
    """A file of version 3 (lines and closures in 32 bits) written by the code before
    version 4 loads to the same trace as recording the scenario today, its lines and
    closures kept a byte each; saved again, it is a file of the current version (5)
    that reads back the same, and smaller."""
    old_bytes = V3_NEURON.read_bytes()
    assert old_bytes[8:10] == b"\x03\x00"
    old = load(V3_NEURON)
    here = tuple(replace(c, filename=now.filename) for c, now in zip(old.closures, NEURON.closures))
    same_trace(replace(old, scenario=NEURON.scenario, closures=here), NEURON)
    assert (old._line.typecode, old._ev_line.typecode, old._ev_closure.typecode,
            old._wr_line.typecode) == ("B", "B", "b", "B")
    assert max(old._ev_line) > 0 and max(old._ev_closure) >= 0  # (there are some to keep)
    saved = tracefile.dumpb(old)
    said = b', "engine": "scalar"'  # (a file says its engine now: issue 32)
    assert said in saved[:saved.index(b"C")] and said not in old_bytes
    assert saved[8:10] == b"\x05\x00" and len(saved) - len(said) < len(old_bytes)
    same_trace(tracefile.loadb(saved), old)


def test_lines_and_closures_widen_when_one_does_not_fit():
    """A line past 255 makes the column 16-bit, one past 65,535 32-bit, a closure index
    past 127 16-bit; every number is kept, and a file saved reads back the same."""
    b = TraceBuilder("t.py")
    for k in range(200):
        b.add_closure(Closure(f"c{k}", "t.py", 1, ("pass",)))
    lines = [3, 255, 256, 70_000]
    for k, line in enumerate(lines):
        b.add_node("", "+", [k - 1] if k else [], 1.0, line)
        b.add_event(EventKind.CREATE, k, line=line)
    b.add_event(EventKind.BACKWARD, 3, line=300, closure=150)
    b.add_write(2, Field.GRAD, 0.0, 1.0, line=65_535)
    t = b.build()
    assert (t._line.typecode, t._ev_line.typecode, t._ev_closure.typecode,
            t._wr_line.typecode) == ("i", "i", "h", "H")
    assert [t.line(k) for k in range(4)] == lines
    assert t.closure_index(4) == 150 and t.closure_index(0) is None
    assert t.writes(4)[0].line == 65_535
    back = tracefile.loadb(tracefile.dumpb(t))
    assert [back.line(k) for k in range(4)] == lines and back.closure_index(4) == 150
    assert back.writes(4)[0].line == 65_535 and back._wr_line.typecode == "H"


def test_a_column_type_a_file_may_not_have_is_refused():
    """The byte naming a column's type is checked: a 64-bit one is refused by name."""
    data = tracefile.dumpb(NEURON)

    def wide_lines(tag: str, payload: bytes) -> bytes:
        return payload[:8] + b"q" + payload[9:] if tag == "N" else payload

    with pytest.raises(TraceFormatError, match="a column of type 'q'"):
        tracefile.loadb(rebuilt(data, wide_lines))
