"""JSON traces written and read as a stream: the same document as `json` would make,
the same trace back, and version-1 files of any layout still read."""

from __future__ import annotations

import io
import json
import math
import re

import pytest

from mgtui.trace import export, json_read
from mgtui.trace.export import dumps, load, write_json
from mgtui.recording.recorder import ScenarioLoadError, record
from mgtui.run.runner import run

from tests.conftest import SCENARIOS
from tests.trace.test_trace_files import same_trace

MLP = record(SCENARIOS / "mlp.py")


def document(trace) -> dict:
    """The JSON document of a trace, built the plain way from its public queries: what
    `write_json` must write, however it writes it."""
    def num(x):
        return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))

    events = []
    for e in trace.events():
        if e.kind == "create":
            events.append({"kind": "create", "node": e.node})
        elif e.kind == "backward":
            values = trace.values_at(e.index)  # what a custom op's call read, if anything
            events.append({"kind": "backward", "node": e.node, "writes": [
                {"node": w.node, "before": num(w.before), "after": num(w.after), "line": w.line,
                 **({"field": w.field.value} if w.field != "grad" else {})} for w in e.writes],
                "line": e.line, "closure": e.closure,
                **({"values": [[k, num(v)] for k, v in values]} if values else {})})
        else:
            events.append({"kind": e.kind.value, "node": e.node, "before": num(e.before),
                           "after": num(e.after), "line": e.line})
    return {
        "format": "mgtui-trace", "version": 1, "scenario": trace.scenario, "title": trace.title,
        "notes": trace.notes, "engine": trace.engine,
        "nodes": [{"id": n.id, "label": n.label,
                   **({"name": trace.derived_name(n.id)} if trace.derived_name(n.id) else {}),
                   "op": n.op, "children": list(n.children),
                   "data": num(n.data), "line": n.line, "final_data": num(n.final_data),
                   "final_grad": num(n.final_grad)} for n in trace.nodes()],
        "events": events,
        "passes": [{"kind": p.kind, "start": p.start, "end": p.end} for p in trace.passes],
        "error": None if trace.error is None else {
            "type": trace.error.type, "message": trace.error.message, "line": trace.error.line,
            "after_event": trace.error.after_event},
        "closures": [{"name": c.name, "filename": c.filename, "first_line": c.first_line,
                      "lines": list(c.lines), "default": c.default} for c in trace.closures],
        "source": trace.source, "output": trace.output,
    }


@pytest.mark.parametrize("name", ["chain", "mlp", "bugs/non_finite", "bugs/overwrite",
                                  "bugs/late_pass"])
def test_the_stream_is_the_document(name):
    trace = run(SCENARIOS / f"{name}.py").trace  # (the child records names and values too)
    if name == "mlp":
        assert any(trace.derived_name(n) for n in range(trace.node_count))
    if name == "bugs/late_pass":
        assert any(trace.values_at(i) for i in range(len(trace)))
    text = dumps(trace)
    assert json.loads(text) == document(trace)
    assert all(len(line) < 2000 for line in text.splitlines()[1:-8])  # a record a line


def test_export_json_writes_as_it_goes(monkeypatch):
    """Nothing is built whole: the output arrives in many writes of bounded size."""
    monkeypatch.setattr(export, "BATCH", 64)
    sizes = []

    class Out(io.StringIO):
        def write(self, s):
            sizes.append(len(s))
            return super().write(s)

    write_json(MLP, Out())
    assert len(sizes) > (MLP.node_count + len(MLP)) // 64
    assert max(sizes) < 64 * 2000


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_a_streamed_file_reads_back_the_same_trace(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(json_read, "CHUNK", chunk)  # values cut across reads, anywhere
    path = tmp_path / "t.json"
    path.write_text(dumps(MLP), encoding="utf-8")
    same_trace(MLP, export.read_json(path))


def test_version_1_files_of_any_layout_still_read(tmp_path):
    doc = document(MLP)
    one_line = tmp_path / "one_line.json"  # as mgtui wrote them before
    one_line.write_text(json.dumps(doc), encoding="utf-8")
    same_trace(MLP, load(one_line))
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(doc, indent=3), encoding="utf-8")
    same_trace(MLP, load(pretty))
    reordered = tmp_path / "reordered.json"  # the nodes before the format: read whole
    reordered.write_text(json.dumps({"nodes": doc["nodes"], **doc}), encoding="utf-8")
    same_trace(MLP, load(reordered))


def test_a_bad_creation_event_is_not_read_by_the_fast_path(tmp_path):
    text = dumps(MLP).replace('{"kind": "create", "node": 3}', '{"kind": "create", "node": 03}', 1)
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioLoadError, match="not valid JSON"):
        load(path)
    text = dumps(MLP).replace('{"kind": "create", "node": 3}', '{"kind": "create", "node": 2}', 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioLoadError, match=r"events\[\d+\]\.node"):
        load(path)


def test_records_read_without_a_dict_are_checked_like_the_others(tmp_path):
    text = dumps(MLP)
    path = tmp_path / "t.json"
    backward = next(line for line in text.splitlines() if '"kind": "backward"' in line)
    bad_line = backward.replace('"closure"', '"closure"', 1)
    head, sep, tail = bad_line.rpartition('"line": ')
    bad_line = head + sep + "99999999" + tail[tail.index(","):]
    path.write_text(text.replace(backward, bad_line, 1), encoding="utf-8")
    with pytest.raises(ScenarioLoadError, match=r"events\[\d+\]\.line"):
        load(path)
    node = next(line for line in text.splitlines() if line.startswith('{"id": 5,'))
    path.write_text(text.replace(node, node.replace('"id": 5', '"id": 6'), 1), encoding="utf-8")
    with pytest.raises(ScenarioLoadError, match=r"nodes\[5\]\.id"):
        load(path)


def test_escaped_labels_read_back_as_written(tmp_path, write_scenario):
    path = write_scenario("labels", """
        from engine import Value
        a = Value(2.0, label='é "q" \\\\ \\x07 ≠')
        b = a * a
        b.label = '漢字\\tx'
        b.backward()
    """)
    trace = record(path)
    saved = tmp_path / "t.json"
    saved.write_text(dumps(trace), encoding="utf-8")
    back = export.read_json(saved)
    same_trace(trace, back)
    assert back.label(0) == trace.label(0) and "é" in back.label(0)


def first_line(text: str, start: str, has: str = "") -> str:
    return next(line for line in text.splitlines() if line.startswith(start) and has in line)


def node_line_huge(text: str, doc: dict) -> str:
    line = first_line(text, '{"id": 3,')
    doc["nodes"][3]["line"] = 99999999
    return text.replace(line, re.sub(r'"line": \d+', '"line": 99999999', line), 1)


def node_id_wrong(text: str, doc: dict) -> str:
    line = first_line(text, '{"id": 5,')
    doc["nodes"][5]["id"] = 6
    return text.replace(line, line.replace('"id": 5', '"id": 6'), 1)


def backward_line_huge(text: str, doc: dict) -> str:
    line = first_line(text, '{"kind": "backward"', '"writes": [{')
    i = next(k for k, e in enumerate(doc["events"]) if e["kind"] == "backward" and e["writes"])
    doc["events"][i]["line"] = 99999999
    return text.replace(line, re.sub(r'"line": \d+, "closure"', '"line": 99999999, "closure"',
                                     line), 1)


def write_line_huge(text: str, doc: dict) -> str:
    line = first_line(text, '{"kind": "backward"', '"writes": [{')
    i = next(k for k, e in enumerate(doc["events"]) if e["kind"] == "backward" and e["writes"])
    doc["events"][i]["writes"][0]["line"] = 99999999
    return text.replace(line, re.sub(r'"line": (\d+|null)\}', '"line": 99999999}', line, count=1), 1)


def write_field_wrong(text: str, doc: dict) -> str:
    line = first_line(text, '{"kind": "backward"', '"writes": [{')
    i = next(k for k, e in enumerate(doc["events"]) if e["kind"] == "backward" and e["writes"])
    doc["events"][i]["writes"][0]["field"] = "both"
    return text.replace(line, re.sub(r'("line": (\d+|null))\}', r'\1, "field": "both"}', line,
                                     count=1), 1)


@pytest.mark.parametrize("change", [node_line_huge, node_id_wrong, backward_line_huge,
                                    write_line_huge, write_field_wrong])
def test_the_fast_and_the_slow_path_refuse_a_record_alike(tmp_path, change):
    """A record as `write_json` writes it (read without a dict) and the same record laid
    out otherwise (read by `json`) go through the same checks: the same message."""
    text = dumps(MLP)
    doc = json.loads(text)
    fast, slow = tmp_path / "fast.json", tmp_path / "slow.json"
    fast.write_text(change(text, doc), encoding="utf-8")
    slow.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    messages = []
    for path in (fast, slow):
        with pytest.raises(ScenarioLoadError) as info:
            load(path)
        messages.append(info.value.message.replace(str(path), "FILE"))
    assert messages[0] == messages[1]
    assert "not an mgtui trace" in messages[0]


def test_named_nodes_read_back_by_either_path(tmp_path, monkeypatch):
    trace = run(SCENARIOS / "mlp.py").trace  # the child names nodes without labels
    named = [n for n in range(trace.node_count) if trace.derived_name(n)]
    assert named
    text = dumps(trace)
    assert first_line(text, f'{{"id": {named[0]},', '"name": ')
    fast, slow = tmp_path / "fast.json", tmp_path / "slow.json"
    fast.write_text(text, encoding="utf-8")
    slow.write_text(json.dumps(json.loads(text), indent=1), encoding="utf-8")
    for path in (fast, slow):
        back = load(path)
        same_trace(trace, back)
        assert [back.derived_name(n) for n in named] == [trace.derived_name(n) for n in named]

    def slow_node(*args):
        raise AssertionError("a node as write_json writes it was read the slow way")

    monkeypatch.setattr(json_read, "_node", slow_node)
    same_trace(trace, load(fast))  # every node, named or not, read without a dict
