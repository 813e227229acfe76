"""`--print` of a trace file that holds very long text (issue 22 item 11): output of one
4 MB line took 44 s, a 1 MB label about 50 s, printed in full. Now every line and every
label it shows is bounded, and it says how much it left out."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

from mgtui.trace.export import dumps, load
from mgtui.tui.report import LABEL_BUDGET, LINE_BUDGET, print_trace
from mgtui.recording.recorder import record

from tests.conftest import ROOT, SCENARIOS


def chain_doc() -> dict:
    return json.loads(dumps(record(SCENARIOS / "chain.py")))


def printed(path) -> str:
    out = io.StringIO()
    print_trace(load(path), out, limit=None)
    return out.getvalue()


def test_output_of_one_4_mb_line_is_printed_bounded(tmp_path):
    doc = chain_doc()
    doc["output"] = "head" + "y" * 4_000_000 + "tail"
    path = tmp_path / "loud.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    text = printed(path)
    assert len(text) < 20_000
    assert "output left out here" in text and "characters left out" in text
    assert "scenario output:" in text
    out = text[text.index("scenario output:"):]
    assert "head" in out and "tail" in out  # its start and its end are shown
    left_out = sum(int(n.replace(",", "")) for n in re.findall(r"([\d,]+) characters", out))
    assert left_out + out.count("y") == 4_000_000  # what is left out is said exactly


def test_a_1_mb_label_is_printed_bounded(tmp_path):
    doc = chain_doc()
    for node in doc["nodes"]:
        if node["label"] == "a":
            node["label"] = "A" * 1_000_000
    path = tmp_path / "long_label.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    text = printed(path)
    assert len(text) < 100_000
    assert all(len(line) <= LINE_BUDGET + 60 for line in text.splitlines())
    kept = LABEL_BUDGET // 2
    table = text[text.index("Nodes at the end"):]
    assert f"{1_000_000 - 2 * kept:,}" in table  # the label, cut in the middle (and wrapped)
    assert 2 * kept <= table.count("A") <= 4 * LABEL_BUDGET  # its cell, and e's inputs
    steps = text[:text.index("Nodes at the end")]
    assert "characters left out" in steps and "A" * (LINE_BUDGET // 2 + 1) not in steps


def test_the_command_line_prints_a_trace_with_a_long_line_bounded(tmp_path):
    doc = chain_doc()
    doc["output"] = "z" * 4_000_000
    path = tmp_path / "loud.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "mgtui.cli", str(path), "--print"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) < 20_000
    assert "characters left out" in result.stdout
