"""`--export html`: one page that replays the lesson with no server and no network.

The page is opened in headless Chromium (Debian's `chromium`; CI installs it) and stepped
with real key presses over the DevTools protocol; the figures it shows are the lecture's.
The packed data is also read back in Python, to check what goes into the page.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mgtui.cli import main
from mgtui.tui.export_html import lesson_html, paths, script_json
from mgtui.tui.export_html_data import decode_ids, encode_ids, pack_lesson
from mgtui.run.runner import run
from mgtui.session import Session

from cdp import CHROMIUM, Chromium

SCENARIOS = Path(__file__).resolve().parent.parent.parent / "scenarios"
HOSTILE = '</script><script>document.title="owned"</script><!--'


LESSON = re.compile(r'<script type="application/json" id="mgtui-lesson">(.*?)</script>', re.S)


def packed_of(html: str) -> dict:
    """The lesson data inside a page, unpacked as the page unpacks it."""
    meta = json.loads(LESSON.search(html).group(1))
    return json.loads(zlib.decompress(base64.b64decode(meta["packed"]), -15))


@pytest.fixture(scope="module")
def neuron():
    return run(SCENARIOS / "neuron.py").trace


@pytest.fixture
def hostile(write_scenario):
    """Labels, a note and a title that try to end the page's script or run their own."""
    return write_scenario("hostile", f'''
        """{HOSTILE} <img src=x onerror=alert(1)>

        Notes with <b>markup</b> and {HOSTILE}
        """
        from engine import Value

        a = Value(2.0, label={HOSTILE!r})
        b = Value(-3.0, label="<img src=x onerror=alert(1)>")
        c = a * b  #: a note that tries {HOSTILE}
        c.label = "user@host#7"
        c.backward()
    ''')


# -- the data --------------------------------------------------------------------------------

@given(st.text(alphabet="#@0123456789-ab ", max_size=40), st.integers(-10**6, 10**6))
def test_relative_ids_come_back_as_they_were(text, base):
    assert decode_ids(encode_ids(text, base), base) == text


def test_relative_ids_name_nodes_by_their_distance():
    assert encode_ids("#12.grad += #10.grad", 12) == "#@0.grad += #@-2.grad"
    assert encode_ids("a@b #3", 5) == "a@@b #@-2"
    assert encode_ids("#1234567890", 0) == "#1234567890"  # too long to be an id: left


def test_edge_paths_keep_only_the_corners():
    cells = [(0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (5, 5), (5, 6)]
    assert paths(cells) == [[0, 0, 2, 0, 2, 2], [5, 5, 5, 6]]


def test_script_json_cannot_close_its_element():
    text = script_json({"label": HOSTILE})
    assert "<" not in text and json.loads(text) == {"label": HOSTILE}


def test_each_step_carries_only_its_own_writes(neuron):
    data = pack_lesson(neuron).data
    events = data["events"]
    assert len(events["kind"]) == len(neuron) == 21
    assert sum(events["nwrites"]) == neuron.write_count  # every write once, no table copies
    assert data["total"] == 21 and len(data["detail"]) == 22  # and the start


def test_the_last_step_explains_x1_grad_with_the_lecture_figures(neuron):
    data = pack_lesson(neuron).data
    last = data["detail"][-1]
    assert "x1._backward()" in last and "x1.grad = -1.5" in last
    tanh_step = next(d for d in data["detail"] if "o._backward()" in d)
    assert "n.grad: 0.0 → 0.5 (+0.5)" in tanh_step  # 1 - o² = 0.5, from the lecture


def test_the_page_holds_scenario_text_only_as_data(hostile):
    trace = run(hostile).trace
    html = lesson_html(trace)
    assert html.lower().count("</script") == 2  # the lesson's JSON and the page's script
    assert "<" not in LESSON.search(html).group(1)
    outside = LESSON.sub("", html)
    assert "<img" not in outside and "owned" not in outside  # only inside the lesson's JSON
    data = packed_of(html)
    assert HOSTILE in data["nodes"]["label"]
    assert data["title"].startswith(HOSTILE)
    assert any("a note that tries </script>" in d for d in data["detail"])
    assert "user@host#7" in data["nodes"]["label"]


def test_the_page_loads_nothing_from_anywhere(neuron):
    html = lesson_html(neuron)
    for reference in ("://", "src=", "href=", "url(", "@import", "fetch(", "XMLHttpRequest",
                      "WebSocket", "EventSource", "import("):
        assert reference not in html, reference
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp


def test_the_command_line_writes_the_page(capsys):
    code = main([str(SCENARIOS / "chain.py"), "--export", "html"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    grads = packed_of(out)["values"]
    assert "-4.0" in grads and "6.0" in grads  # b.grad and a.grad of the lecture's chain


# -- in a browser ----------------------------------------------------------------------------

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (Debian's chromium; .ci/run installs it)")

STATE = """JSON.stringify({
  step: document.body.dataset.step,
  where: document.getElementById("where").textContent,
  detail: document.getElementById("detail").textContent,
  rows: Object.fromEntries(Array.from(document.querySelectorAll("#rows tr"))
    .filter((r) => !r.hidden).map((r) => [r.children[2].textContent,
      Array.from(r.children, (td) => td.textContent)])),
  graph: document.getElementById("graph").textContent,
  scripts: document.scripts.length,
  title: document.title,
})"""


@pytest.fixture
def browser():
    chromium = Chromium()
    yield chromium
    chromium.close()


def open_page(browser: Chromium, path: Path) -> None:
    browser.navigate(path.as_uri())
    browser.wait_for("document.body && document.body.dataset.ready === '1'")


def state(browser: Chromium) -> dict:
    return json.loads(browser.evaluate(STATE))


@needs_chromium
def test_the_page_steps_with_its_keys_and_shows_the_lecture_figures(browser, neuron, tmp_path):
    page = tmp_path / "neuron.html"
    page.write_text(lesson_html(neuron), encoding="utf-8")
    open_page(browser, page)
    assert state(browser)["step"] == "0"
    session = Session(neuron)  # the app's own moves, for the steps each key should reach
    moves = {"n": session.next, "ArrowRight": session.next, " ": session.next,
             "p": session.prev, "ArrowLeft": session.prev, "]": session.next_pass,
             "[": session.prev_pass, "G": session.end, "g": session.start}
    for key in ("n", "ArrowRight", " ", "p", "ArrowLeft", "]", "]", "n", "n", "[", "[", "[",
                "]", "G", "[", "p", "]", "G"):
        browser.press(key)
        assert state(browser)["step"] == str(moves[key]().step), key
    end = state(browser)
    assert "backward pass 2/2 · 11/11 in pass · step 21/21" == end["where"]
    # the lecture's neuron: x1.grad = w1 × 0.5 = -1.5, w1.grad = x1 × 0.5 = 1.0
    assert end["rows"]["x1"][5] == "-1.5" and end["rows"]["w1"][5] == "1.0"
    assert end["rows"]["x2"][5] == "0.5" and end["rows"]["w2"][5] == "0.0"
    assert end["rows"]["x1"][0] == "▶ "  # its _backward is the step
    assert "x1.grad = -1.5" in end["detail"]
    assert "▶ x1" in end["graph"] and "-1.5" in end["graph"]
    browser.press("g")
    start = state(browser)
    assert start["step"] == "0" and start["rows"] == {}  # nothing made yet
    assert "start: nothing has run yet" in start["detail"]
    browser.press("n")
    assert list(state(browser)["rows"]) == ["x1"]
    requests = {url.split("#")[0] for url in browser.requests()}
    assert requests == {page.as_uri()}  # the page itself, and nothing else
    assert browser.errors() == []


@needs_chromium
def test_hostile_text_shows_as_text_in_the_browser(browser, hostile, tmp_path):
    page = tmp_path / "hostile.html"
    page.write_text(lesson_html(run(hostile).trace), encoding="utf-8")
    open_page(browser, page)
    browser.press("G")
    shown = state(browser)
    assert shown["scripts"] == 2 and shown["title"] != "owned"
    assert HOSTILE in shown["rows"] and "<img src=x onerror=alert(1)>" in shown["rows"]
    assert "user@host#7" in shown["rows"]
    details = [shown["detail"]]
    for _ in range(int(shown["step"])):
        browser.press("p")
        details.append(state(browser)["detail"])
    assert any("✎ a note that tries </script>" in d for d in details)
    assert any("user@host#7.grad" in d for d in details)  # its `@` and `#7` come back whole
    assert browser.evaluate("document.querySelectorAll('img, b').length") == 0
    assert {url.split("#")[0] for url in browser.requests()} == {page.as_uri()}
    assert browser.errors() == []


def test_the_lesson_packs_with_textual_and_rich_unimportable():
    """The packing is headless core: only the page's graph pictures need rich."""
    import subprocess
    import sys

    code = ("import sys\n"
            "sys.modules['textual'] = None; sys.modules['rich'] = None\n"
            "from mgtui.run.runner import run\n"
            "from mgtui.tui.export_html_data import pack_lesson\n"
            f"data = pack_lesson(run({str(SCENARIOS / 'chain.py')!r}).trace).data\n"
            "print(data['total'])\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "15"  # 7 nodes made, the seed, 7 `_backward` calls


@needs_chromium
def test_the_error_step_reads_as_the_app_reads_it(browser, write_scenario, tmp_path):
    path = write_scenario("raises", '''
        """Raises after its backward pass"""
        from engine import Value

        a = Value(2.0, label="a")
        b = a * a
        b.backward()
        raise ValueError("boom\\nsecond line")
    ''')
    trace = run(path).trace
    page = tmp_path / "raises.html"
    page.write_text(lesson_html(trace), encoding="utf-8")
    open_page(browser, page)
    browser.press("G")
    shown = state(browser)
    assert shown["where"] == Session(trace).end().header.where == "✗ ValueError · step 6/6"
    assert "✗ the scenario raised ValueError" in shown["detail"]
    assert "boom" in shown["detail"] and "second line" in shown["detail"]
    assert shown["rows"]["a"][5] == "4.0"  # d(a²)/da = 2a, the backward pass before it
    assert browser.errors() == []


# -- a tensor engine's lesson -----------------------------------------------------------------

@pytest.fixture(scope="module")
def tensor_neuron():
    pytest.importorskip("numpy")
    return run(SCENARIOS / "tensor_neuron.py").trace


def test_a_tensor_lesson_packs_its_arrays_not_nan(tensor_neuron):
    """An array's column holds nan beside the trace's array table: the page gets the
    arrays, as the node table shows them (the lecture's neuron as vectors)."""
    values = pack_lesson(tensor_neuron).data["values"]
    assert "nan" not in values
    assert "(1, 2) [[2.0, 0.0]]" in values  # x
    assert "(1, 2) [[-1.5, 0.5]]" in values  # x.grad: the lecture's x1 -1.5, x2 0.5
    assert "(2, 1) [[1.0], [0.0]]" in values  # w.grad: w1 1, w2 0


@needs_chromium
def test_a_tensor_lesson_shows_its_arrays_in_the_browser(browser, tensor_neuron, tmp_path):
    page = tmp_path / "tensor_neuron.html"
    page.write_text(lesson_html(tensor_neuron), encoding="utf-8")
    open_page(browser, page)
    browser.press("G")
    end = state(browser)
    assert end["rows"]["x"][5] == "(1, 2) [[-1.5, 0.5]]"
    assert end["rows"]["w"][5] == "(2, 1) [[1.0], [0.0]]"
    assert "nan" not in end["graph"] and "1×2" in end["graph"]  # boxes show shapes
    assert browser.errors() == []
