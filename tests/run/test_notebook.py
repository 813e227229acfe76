"""Notebooks as scenarios: `mgtui lecture.ipynb` runs the code cells in order, and every
line shown is `cell N, line M` (N counts all cells from 1, as the notebook shows them)."""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from mgtui.trace.notebook import read, where
from mgtui.recording.recorder import load_scenario, record

from tests.conftest import ROOT, SCENARIOS

NOTEBOOK = SCENARIOS / "neuron_notebook.ipynb"


def mgtui(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mgtui.cli", *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120, cwd=ROOT)


def write_notebook(path, cells):
    nb = new_notebook()
    nb.cells = [new_markdown_cell(c[3:]) if c.startswith("md:") else new_code_cell(c)
                for c in cells]
    nbformat.write(nb, str(path))
    return path


def cell_text(cell: int, line: int) -> str:
    """Line `line` of cell `cell` (both from 1), read from the notebook's JSON by hand."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    source = cells[cell - 1]["source"]
    text = "".join(source) if isinstance(source, list) else source
    return text.split("\n")[line - 1]


def test_the_bundled_notebook_maps_every_line_to_its_cell():
    scenario = load_scenario(NOTEBOOK)
    lines = scenario.source.split("\n")
    trace = record(scenario)
    assert trace.error is None
    assert trace.title == "One tanh neuron, as a notebook"
    for nid in range(trace.node_count):
        line = trace.line(nid)
        place = trace.places.where(line)
        cell, m = (int(x) for x in place.removeprefix("cell ").split(", line "))
        assert lines[line - 1] == cell_text(cell, m), place  # the same code, from the JSON
    by_label = {trace.label(i): i for i in range(trace.node_count)}
    assert trace.places.where(trace.line(by_label["x1"])) == "cell 4, line 1"
    assert trace.places.where(trace.line(by_label["o"])) == "cell 6, line 5"
    # the lecture's figures
    grads = {k: trace.replay.final_grad[i] for k, i in by_label.items()}
    assert grads["x1"] == pytest.approx(-1.5) and grads["w1"] == pytest.approx(1.0)
    assert grads["x2"] == pytest.approx(0.5) and grads["w2"] == pytest.approx(0.0)
    assert grads["n"] == pytest.approx(0.5) and grads["b"] == pytest.approx(0.5)


def test_markdown_becomes_the_notes_and_magics_are_skipped_with_a_note():
    nb = read(NOTEBOOK)
    assert nb.notes.startswith("The lecture's neuron, cell by cell")
    assert "`n = x1*w1 + x2*w2 + b`, then `o = tanh(n)`." in nb.notes
    assert "cell 2, line 1: the IPython magic `%matplotlib inline`" in nb.notes
    assert "cell 8, line 1: the shell line `!python --version`" in nb.notes
    assert "%matplotlib" not in nb.source and "!python" not in nb.source


def test_a_cell_magic_skips_its_cell_and_lines_keep_their_numbers(tmp_path):
    path = write_notebook(tmp_path / "magic.ipynb", [
        "md:# Magic",
        "%%bash\necho hello",
        "from engine import Value\nfor k in range(2):\n    !echo no\n    a = Value(k)",
    ])
    nb = read(path)
    assert "cell 2: the cell magic `%%bash` (the whole cell)" in nb.notes
    assert "cell 3, line 3: the shell line `!echo no`" in nb.notes
    trace = record(load_scenario(path))
    assert trace.error is None and trace.node_count == 2
    assert trace.places.where(trace.line(1)) == "cell 3, line 4"


def test_print_shows_cell_and_line():
    proc = mgtui(str(NOTEBOOK), "--print")
    assert proc.returncode == 0, proc.stderr
    assert "x1 = 2.0  (cell 4, line 1)" in proc.stdout
    assert "backward: o._backward()  (tanh)  (cell 8, line 2)" in proc.stdout
    assert "o = 0.7071" in proc.stdout  # the notebook's own print
    assert "(line " not in proc.stdout


def test_by_name_and_in_the_list():
    proc = mgtui("--list")
    assert "neuron_notebook" in proc.stdout and "One tanh neuron, as a notebook" in proc.stdout
    assert mgtui("neuron_notebook", "--export", "json").returncode == 0


def test_a_finding_in_a_notebook_names_its_cell_and_line(tmp_path):
    path = write_notebook(tmp_path / "bug.ipynb", [
        "md:# A tanh with = for +=",
        "import math\nfrom engine import Value",
        "def tanh(x):\n    t = math.tanh(x.data)\n    out = Value(t, (x,), 'tanh')\n"
        "    def _backward():\n        x.grad = (1 - t**2) * out.grad\n"
        "    out._backward = _backward\n    return out",
        "md:Use it.",
        "x = Value(0.5, label='x')\ny = tanh(x); y.label = 'y'\ny.backward()",
    ])
    proc = mgtui(str(path), "--check")
    assert proc.returncode == 1
    assert "bug.ipynb, cell 3, line 5: x.grad = (1 - t**2) * out.grad" in proc.stdout
    # the closure's source is the cell's code, not the notebook's JSON
    exported = json.loads(mgtui(str(path), "--export", "json").stdout)
    closure = next(c for c in exported["closures"] if "x.grad =" in "\n".join(c["lines"]))
    assert closure["lines"][0].strip() == "def _backward():"


def test_a_custom_op_defined_in_a_cell_is_explained_with_its_cell(tmp_path):
    path = write_notebook(tmp_path / "sig.ipynb", [
        "md:# A sigmoid of my own",
        "import math\nfrom engine import Value",
        "def sigmoid(x):\n    s = 1 / (1 + math.exp(-x.data))\n"
        "    out = Value(s, (x,), 'sigmoid')\n    def _backward():\n"
        "        x.grad += s * (1 - s) * out.grad\n    out._backward = _backward\n    return out",
        "z = Value(0.3, label='z')\ny = sigmoid(z); y.label = 'y'\ny.backward()",
    ])
    proc = mgtui(str(path), "--print")
    assert proc.returncode == 0, proc.stderr
    assert "cell 3, line 5: x.grad += s * (1 - s) * out.grad" in proc.stdout
    assert "(line " not in proc.stdout and "line 9" not in proc.stdout


def test_a_bad_notebook_gets_a_message(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json", encoding="utf-8")
    proc = mgtui(str(bad), "--print")
    assert proc.returncode == 2
    assert "bad.ipynb is not a notebook nbformat can read" in proc.stderr
    assert "Traceback" not in proc.stderr
    broken = write_notebook(tmp_path / "syntax.ipynb", ["x = 1", "y = (2 +"])
    proc = mgtui(str(broken), "--print")
    assert proc.returncode == 2
    assert "syntax.ipynb, cell 2, line 1: SyntaxError" in proc.stderr


def test_a_plain_script_keeps_plain_line_numbers():
    assert where("x = 1\n", 1) == "line 1"
    trace = record(SCENARIOS / "chain.py")
    assert trace.places.where(trace.line(0)).startswith("line ")


@pytest.mark.usefixtures("clean_env")
async def test_the_app_shows_cells_in_the_source_pane_and_the_step(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    from mgtui.tui.app import MgtuiApp
    from mgtui.tui.widgets.source_view import SourceView
    from mgtui.tui.widgets.step_detail import StepDetail

    from tests.tui.test_app import loaded

    app = MgtuiApp(NOTEBOOK)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("n")  # x1 made
        source = screen.query_one(SourceView).text
        assert "neuron_notebook.ipynb, cell 4, line 1  made here" in source
        assert "▶ 4:1" in source  # the gutter numbers lines within their cell
        assert "(cell 4, line 1)" in screen.query_one(StepDetail).text


def test_an_error_in_a_cell_is_reported_at_its_cell(tmp_path):
    path = write_notebook(tmp_path / "raises.ipynb", [
        "from engine import Value",
        "md:Now it breaks.",
        "a = Value(1.0, label='a')\nb = a / 0",
    ])
    proc = mgtui(str(path), "--print")
    assert proc.returncode == 1
    assert "ZeroDivisionError at cell 3, line 2" in proc.stderr
    assert "ZeroDivisionError at cell 3, line 2" in proc.stdout
    assert "at line " not in proc.stdout + proc.stderr


def test_the_doctor_finds_nothing_wrong_with_the_bundled_notebook():
    import mgtui

    found = mgtui.check("neuron_notebook")
    assert not found, repr(found)
    assert found.report.checked_nodes == 10
