"""Arrays in the trace (issue 20): a numpy `Tensor` engine's values recorded by copy,
kept beside the scalar columns (`mgtui.trace.arrays`), carried by both file formats,
read back safely, shown with their shapes, and worked out with the tensor ops' rules.

Expected values come from the lecture (the neuron's grads), from numpy itself, or from
finite differences; never from mgtui's own output.
"""

from __future__ import annotations

import io
import json
import math
import zlib
from array import array
from pathlib import Path

import numpy as np
import pytest

from mgtui.recording.recorder import record
from mgtui.run.runner import Run, RunSpec
from mgtui.session import Session
from mgtui.trace import EventKind, TraceFormatError
from mgtui.trace import binary as tracefile
from mgtui.trace import export, table
from mgtui.trace.arrays import (
    GRAD,
    NODE,
    WHOLE_LIMIT,
    ArrayChunk,
    ArrayValue,
    brief,
    display,
)
from mgtui.trace.values import state_values
from mgtui.trace.array_numpy import from_numpy, from_numpy_many
from mgtui.trace.engines import explain
from mgtui.trace.explain_arrays import ArrayContribution
from mgtui.trace.load_limits import LoadLimitError, LoadLimits

from tests.conftest import SCENARIOS

ROOT = Path(__file__).resolve().parent.parent.parent
V2_CHAIN = Path(__file__).parent.parent / "data" / "chain-v2.mgtrace"  # written by mgtui c1afd79
# the tensor neuron as version 4 wrote it (JSON array entries), by mgtui 459fef2
V4_NEURON = Path(__file__).parent.parent / "data" / "tensor-neuron-v4.mgtrace"
TENSOR_NEURON = record(SCENARIOS / "tensor_neuron.py")


def flat(v) -> list[float]:
    assert isinstance(v, ArrayValue), v
    return list(v.values)


def node(trace, label: str) -> int:
    (nid,) = trace.find(label)
    return nid


def scenario(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.py"
    path.write_text(text)
    return path


# -- the value model ---------------------------------------------------------------------


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "hooks"])
def test_the_tensor_neuron_has_the_lecture_figures_with_shapes(inline):
    t = record(SCENARIOS / "tensor_neuron.py", inline=inline)
    x, w, b, o = (node(t, label) for label in ("x", "w", "b", "o"))
    assert t.values.created_value(x).shape == (1, 2) and t.values.created_value(w).shape == (2, 1)
    assert t.values.created_value(b).shape == ()
    # the lecture's neuron: x1.grad -1.5, x2.grad 0.5, w1.grad 1.0, w2.grad 0.0, b.grad 0.5
    assert flat(t.values.final_value(x, True)) == pytest.approx([-1.5, 0.5], abs=1e-12)
    assert flat(t.values.final_value(w, True)) == pytest.approx([1.0, 0.0], abs=1e-12)
    assert flat(t.values.final_value(b, True)) == pytest.approx([0.5], abs=1e-12)
    assert flat(t.values.final_value(o, False)) == pytest.approx([0.7071067811865476], abs=1e-12)
    assert not t.arrays.unrecorded


def test_the_runner_streams_the_same_arrays_as_the_recorder():
    run = Run(RunSpec(str(SCENARIOS / "tensor_mlp.py"))).start()
    streamed = run.wait().trace
    here = record(SCENARIOS / "tensor_mlp.py")
    assert streamed.node_count == here.node_count and len(streamed) == len(here)
    for nid in range(here.node_count):
        for grad in (False, True):
            a, b = streamed.values.final_value(nid, grad), here.values.final_value(nid, grad)
            assert isinstance(a, ArrayValue) and a.same(b)


UPDATE = '''
import numpy as np
from engine.tensor import Tensor
w = Tensor([[1.0, -2.0]], label='w')
x = Tensor([[3.0], [4.0]], label='x')
y = (w @ x).sum(); y.label = 'y'
y.backward()
w.data -= 0.1 * w.grad   # in place, then set: the creation value must not change
w.grad = 0.0             # a float over an array
'''


def test_values_are_copied_as_they_are_recorded(tmp_path):
    t = record(scenario(tmp_path, UPDATE))
    w = node(t, "w")
    assert flat(t.values.created_value(w)) == [1.0, -2.0]  # as made, not as updated later
    assert flat(t.values.created_grad(w)) == [0.0, 0.0]
    # y = w @ x summed: dy/dw = xᵀ = [[3, 4]]
    writes = [wr for i in t.events_of(EventKind.BACKWARD) for wr in t.writes(i) if wr.node == w]
    (write,) = writes
    before, after = t.values.write_value(write.index, write.before, write.after)
    assert flat(before) == [0.0, 0.0] and flat(after) == [3.0, 4.0]  # `+=` in place
    data_write, grad_write = t.events_of(EventKind.DATA), t.events_of(EventKind.GRAD)[-1]
    (d,) = data_write
    e = t.event(d)
    before, after = t.values.event_value(d, e.before, e.after)
    assert flat(before) == [1.0, -2.0]
    assert flat(after) == pytest.approx([1.0 - 0.3, -2.0 - 0.4])
    e = t.event(grad_write)
    before, after = t.values.event_value(grad_write, e.before, e.after)
    assert flat(before) == [3.0, 4.0] and after == 0.0  # the array it replaced
    assert t.values.value_at(w, True, len(t), t.replay.final_grad[w]) == 0.0


def test_a_timeline_steps_through_the_arrays_both_ways():
    t = TENSOR_NEURON
    x = node(t, "x")
    session = Session(t)
    seen = []
    for step in range(len(t) + 1):
        session.goto(step)
        seen.append(session.state.grad[x])
    back = []
    for step in range(len(t), -1, -1):
        session.goto(step)
        back.append(session.state.grad[x])
    assert [display(v) for v in back[::-1]] == [display(v) for v in seen]
    assert flat(seen[0]) == [0.0, 0.0] and flat(seen[-1]) == pytest.approx([-1.5, 0.5])


def test_values_that_are_neither_numbers_nor_arrays_are_said_out_loud(tmp_path):
    path = scenario(tmp_path, '''
from engine.value import Value
a = Value([1.0, 2.0]); b = Value(3.0)
c = b * 2
''')
    t = record(path)
    assert t.arrays.unrecorded == {"list": 1}
    assert "list (1)" in t.arrays.unrecorded_note() and "not recorded" in t.arrays.unrecorded_note()
    out = io.StringIO()
    from mgtui.tui.report import print_trace

    print_trace(t, out)
    assert "were not recorded" in out.getvalue()


def test_numpy_scalars_are_recorded_as_numbers(tmp_path):
    path = scenario(tmp_path, '''
import numpy as np
from engine.value import Value
a = Value(np.float64(2.0)); b = Value(np.float32(-3.0))
c = a * b
c.backward()
''')
    t = record(path)
    assert not t.arrays and not t.arrays.unrecorded
    assert [t.replay.final_grad[n] for n in range(2)] == [-3.0, 2.0]


# -- files ----------------------------------------------------------------------------------


def same_arrays(a, b) -> bool:
    ea, eb = list(a.arrays.entries()), list(b.arrays.entries())
    return len(ea) == len(eb) and all(
        (p, i, s) == (q, j, r) and v.same(w) for (p, i, s, v), (q, j, r, w) in zip(ea, eb))


def test_both_formats_carry_the_arrays(tmp_path):
    t = record(SCENARIOS / "tensor_mlp.py")
    binary = tmp_path / "t.mgtrace"
    binary.write_bytes(tracefile.dumpb(t))
    as_json = tmp_path / "t.json"
    as_json.write_text(export.dumps(t))
    for path in (binary, as_json):
        back = export.load(path)
        assert same_arrays(back, t), path.suffix
        assert back.has_arrays
    doc = json.loads(as_json.read_text())
    x = doc["nodes"][t.find("X")[0]]["data"]  # (the first X: the moons' points)
    assert x["shape"] == [100, 2] and x["dtype"] == "float64" and len(x["values"]) == 100


def test_a_big_array_is_kept_as_a_summary_and_read_back():
    a = np.arange(70000, dtype=np.float32).reshape(350, 200) / 7
    v = from_numpy(a)
    assert not v.whole and v.shape == (350, 200) and v.dtype == "float32"
    low, high, mean, norm, bad = v.summary
    f = a.astype(np.float64)
    assert (low, high, bad) == (0.0, float(f.max()), 0)
    assert mean == pytest.approx(float(f.mean())) and norm == pytest.approx(float(np.linalg.norm(f)))
    assert list(v.values) == f.reshape(-1)[:8].tolist()
    chunk = ArrayChunk(((NODE, 0, 0, v),))
    back = table.decode_arrays(table.encode_chunk(chunk)[table.RECORD_HEAD_SIZE:])
    (_, _, _, w), = back.entries
    assert w.same(v) and w.summary == pytest.approx(v.summary)


def test_a_file_written_by_the_previous_version_still_opens():
    t = export.load(V2_CHAIN)
    assert t.node_count == 7 and not t.has_arrays
    # chain: L = -8; grads a 6, b -4 (the lecture's)
    assert t.replay.final_grad[0] == 6.0 and t.replay.final_grad[1] == -4.0


def test_a_scalar_trace_reads_back_the_same_from_the_version_4_file():
    """The array table costs a trace of floats nothing, and version 4's narrow lines and
    closures (a byte each here) make its file smaller than version 2's, not different."""
    t = export.load(V2_CHAIN)
    now = tracefile.dumpb(t)
    old = V2_CHAIN.read_bytes()
    assert now[8:10] == b"\x05\x00" and old[8:10] == b"\x02\x00"
    said = b', "engine": "scalar"'  # (its header says its engine now: issue 32)
    assert said in now and said not in old and len(now) - len(said) < len(old)
    again = tracefile.loadb(now)
    assert export.dumps(again) == export.dumps(t)
    assert (again._line.typecode, again._ev_line.typecode, again._ev_closure.typecode,
            again._wr_line.typecode) == ("B", "B", "b", "B")


def arrays_record(meta: dict, values: list[float] = ()) -> bytes:
    payload = json.dumps(meta).encode()
    body = table._COUNT.pack(len(payload)) + payload + np.array(values, "<f8").tobytes()
    return table._record(table.ARRAYS, zlib.compress(body))


def file_with(record_: bytes, version: int = table.VERSION, data: bytes | None = None) -> bytes:
    """The tensor neuron's file (or the file `data`) with one more A record before its end."""
    if data is None:  # (a version 4 file's records are the fixture's, as 4 wrote them)
        data = V4_NEURON.read_bytes() if version == 4 else tracefile.dumpb(TENSOR_NEURON)
    records = list(tracefile.records(io.BytesIO(data)))
    head = table._HEAD.pack(table.MAGIC, version, 0)
    body = b"".join(table._record(tag, payload) for tag, payload in records[:-1])
    return head + body + record_ + table._record(*records[-1])


HOSTILE = {
    "too many dimensions": ({"entries": [[0, 0, 0, [1] * 40, "float64", 1, None]]}, [1.0],
                            "dimensions"),
    "values that do not fill the shape": ({"entries": [[0, 0, 0, [2, 2], "float64", 3, None]]},
                                          [1.0, 2.0, 3.0], "values for shape"),
    "markup for a dtype": ({"entries": [[0, 0, 0, [1], "[red]x", 1, None]]}, [1.0], "dtype"),
    "a node that is not there": ({"entries": [[0, 99, 0, [1], "float64", 1, None]]}, [1.0],
                                 "not there"),
    "a summary with too many values": (
        {"entries": [[0, 0, 0, [100000], "float64", 9, [0, 1, 0.5, 1, 0]]]}, [0.0] * 9,
        "summary"),
    "an event that is no write": ({"entries": [[2, 0, 0, [1], "float64", 1, None]]}, [1.0],
                                  "not a grad or data write"),
    "a count that is not there": ({"entries": [[0, 0, 0, [1], "float64", 5, None]]}, [1.0],
                                  "ends too soon"),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_array_record_is_refused_by_name(case, tmp_path):
    meta, values, says = HOSTILE[case]
    path = tmp_path / "bad.mgtrace"
    path.write_bytes(file_with(arrays_record(meta, values), version=4))  # (JSON entries)
    with pytest.raises(Exception) as raised:
        export.load(path)
    assert says in str(raised.value)


def test_an_array_record_in_an_older_version_is_refused():
    data = file_with(arrays_record({"entries": []}), version=2, data=V2_CHAIN.read_bytes())
    with pytest.raises(TraceFormatError, match="version 2"):
        tracefile.decode(io.BytesIO(data)).trace()


def test_arrays_are_charged_to_the_load_limits():
    meta = {"entries": [[1, 0, 0, [4096], "float64", 4096, None]] * 60}
    limits = LoadLimits(max_memory=1 << 20)
    payload = arrays_record(meta, [0.0] * 4096 * 60)[table.RECORD_HEAD_SIZE:]
    with pytest.raises(LoadLimitError):
        table.decode_arrays(payload, limits, version=4)


# -- on screen and worked out ----------------------------------------------------------------


def test_a_brief_gives_the_shape_mean_and_norm():
    a = np.linspace(-1, 1, 20).reshape(4, 5) + 0.12
    text = brief(from_numpy(a))
    assert text == f"(4, 5) μ {a.mean():.2f} ‖‖ {np.linalg.norm(a):.2f}".replace("0.12", "0.12")
    assert display(from_numpy(np.array([[1.5, -2.0]]))) == "(1, 2) [[1.5, -2.0]]"


def test_an_array_of_one_number_and_a_write_that_changes_nothing_read_short():
    """A grad zeroed reads `(2, 16) float64 all 0.0`, and zeroing it again `(unchanged)`:
    not a summary of zeros, and a Δgrad of zeros, in full."""
    zeros, ones = from_numpy(np.zeros((2, 16))), from_numpy(np.ones((2, 16)))
    assert display(zeros) == "(2, 16) float64 all 0.0"
    assert display(ones) == "(2, 16) float64 all 1.0"
    almost = np.zeros((2, 16))
    almost[1, 15] = 1e-3
    assert "all" not in display(from_numpy(almost))  # one element apart: a summary
    assert display(from_numpy(np.array([[0.0]]))) == "(1, 1) [[0.0]]"  # small: in full

    def change(before, after) -> str:
        return ArrayContribution(0, "W", "grad", before, after, 98, "", "", 1, 1).change

    assert change(zeros, zeros) == (
        "W.grad: (2, 16) float64 all 0.0 → (2, 16) float64 all 0.0 (unchanged)")
    assert change(ones, zeros).endswith("(Δgrad (2, 16) float64 all -1.0)")
    assert change(zeros, from_numpy(almost)).count("Δgrad") == 1
    # a dtype changed with the values the same (`model.double()`): said, not "unchanged"
    halves = np.full((2, 3), 0.5)
    assert change(from_numpy(halves.astype(np.float32)), from_numpy(halves)).endswith(
        "(float32 → float64, values unchanged)")


def test_the_matmul_step_states_its_rules_with_shapes():
    t = TENSOR_NEURON
    (i,) = [i for i in t.events_of(EventKind.BACKWARD) if t.op(t.event_node(i)) == "@"]
    session = Session(t)
    session.goto(i + 1)
    ex = explain(t, session.timeline.data, session.timeline.grad, i)
    assert "∂L/∂x = ∂L/∂(x@w) · wᵀ" in ex.local and "∂L/∂w = xᵀ · ∂L/∂(x@w)" in ex.local
    by_target = {c.label: c for c in ex.contributions}
    assert by_target["w"].numbers == "(1, 2)ᵀ·(1, 1) → (2, 1)"
    assert by_target["x"].numbers == "(1, 1)·(2, 1)ᵀ → (1, 2)"
    # what the rule gives, from numpy: xᵀ @ g and g @ wᵀ with g = 1 - tanh(n)² = 0.5
    g = np.array([[1 - math.tanh(0.8813735870195432) ** 2]])
    x, w = np.array([[2.0, 0.0]]), np.array([[-3.0], [1.0]])
    assert flat(by_target["w"].expected) == pytest.approx((x.T @ g).ravel().tolist())
    assert flat(by_target["x"].expected) == pytest.approx((g @ w.T).ravel().tolist())
    assert not any(c.mismatch for c in ex.contributions)


def test_a_broadcast_add_says_its_gradient_is_summed_over_the_broadcast_axes():
    t = record(SCENARIOS / "tensor_mlp.py")
    (i,) = [i for i in t.events_of(EventKind.BACKWARD, 0, t.passes[2].end)
            if t.op(t.event_node(i)) == "+" and t.label(t.children(t.event_node(i))[1])
            == "model.layers[0].b"]
    session = Session(t)
    session.goto(i + 1)
    ex = explain(t, session.timeline.data, session.timeline.grad, i)
    assert any("broadcast along axes (0,)" in n and "(100, 16) → (1, 16)" in n for n in ex.notes)
    (bias,) = [c for c in ex.contributions if c.label == "model.layers[0].b"]
    assert bias.formula.startswith("model.layers[0].b.grad += Σ[0]")
    assert not bias.mismatch


@pytest.mark.parametrize("bug, label", [("unbroadcast_mean", "b"), ("matmul_transposed", "W"),
                                        ("no_broadcast_sum", None)])
def test_the_worked_numbers_flag_the_wrong_tensor_gradient(bug, label):
    t = record(SCENARIOS / "bugs" / f"{bug}.py")
    session = Session(t)
    flagged = []
    for i in t.events_of(EventKind.BACKWARD):
        session.goto(i + 1)
        ex = explain(t, session.timeline.data, session.timeline.grad, i)
        flagged += [c.label for c in ex.contributions if c.mismatch]
        flagged += [n for n in ex.notes if "changed shape" in n]
    assert flagged, "the wrong gradient is flagged"
    if label is not None:
        assert label in flagged


def test_the_correct_tensor_lessons_flag_nothing():
    for name in ("tensor_neuron", "tensor_mlp"):
        t = record(SCENARIOS / f"{name}.py")
        session = Session(t)
        for i in t.events_of(EventKind.BACKWARD):
            session.goto(i + 1)
            ex = explain(t, session.timeline.data, session.timeline.grad, i)
            assert not any(c.mismatch for c in ex.contributions), (name, i)


def test_print_shows_shapes_and_no_nan():
    from mgtui.tui.report import print_trace

    out = io.StringIO()
    print_trace(TENSOR_NEURON, out)
    text = out.getvalue()
    assert "nan" not in text
    assert "(1, 2) [[-1.5, 0.5]]" in text and "(2, 1) [[1.0], [0.0]]" in text


def test_the_panes_read_arrays_through_the_state():
    t = TENSOR_NEURON
    data, grad = state_values(t, len(t), t.replay.final_data, t.replay.final_grad)
    assert flat(grad[node(t, "w")]) == pytest.approx([1.0, 0.0])
    scalar = record(SCENARIOS / "chain.py")
    final = scalar.replay
    assert state_values(scalar, 0, final.final_data, final.final_grad)[0] is final.final_data
    assert GRAD == 1  # (the table's places, as the file format numbers them)


def test_type_names_not_recorded_reach_the_screen_inert():
    meta = {"entries": [], "unrecorded": [["evil\x1b[2J[bold]x", 3]]}
    data = file_with(arrays_record(meta), version=4)
    t = tracefile.decode(io.BytesIO(data)).trace()
    note = t.arrays.unrecorded_note()
    assert "\x1b" not in note and "(3)" in note


def test_arrays_converted_together_are_each_one_converted_alone():
    """A chunk's arrays are converted in one joined buffer (`from_numpy_many`): each
    comes out as `from_numpy` makes it alone, whatever its dtype, order or strides,
    a big one (summarised) among them."""
    arrays = [np.arange(12.0).reshape(3, 4).T, np.asfortranarray(np.arange(6).reshape(2, 3)),
              np.array([True, False]), np.float32([[1.5, 2.25]])[:, ::-1],
              np.arange(3, dtype=np.uint64), np.array(2.5), np.zeros((0, 3)),
              np.linspace(-1.0, 1.0, WHOLE_LIMIT + 5), np.array([math.nan, 1.0])]
    together = from_numpy_many(arrays)
    assert len(together) == len(arrays)
    for got, a in zip(together, arrays):
        alone = from_numpy(a)
        assert got.same(alone) and got.summary[:2] == pytest.approx(alone.summary[:2],
                                                                     nan_ok=True)
    assert [v.dtype for v in together[:5]] == ["float64", "int64", "bool", "float32", "uint64"]
    assert list(together[0].values) == [0.0, 4.0, 8.0, 1.0, 5.0, 9.0, 2.0, 6.0, 10.0, 3.0,
                                        7.0, 11.0]
    assert list(together[3].values) == [2.25, 1.5] and not together[7].whole


def test_float32_snapshots_keep_their_own_bytes_and_read_and_write_as_doubles():
    """A float32 array (a torch tensor's) is snapshotted as its own bytes, not cast on
    the recording's hot path: read back, and written out (in runs, by `joined_values`,
    among float64 and int arrays), it is the float64 of each element, as numpy casts it;
    the file holds float64, as before."""
    from mgtui.recording.array_values import ArraySnapshots
    from mgtui.trace.arrays import joined_values
    from mgtui.trace.array_numpy import snapshot

    class Rows:  # (the two counts `ArraySnapshots` asks of its records)
        stack: list = []

        def event_count(self):
            return 0

    a = np.float32([[0.1, -2.5, 1e-8], [3.0, np.inf, -0.0]])
    taken = ArraySnapshots(Rows())
    taken.snap(np.zeros(1))  # (numpy seen: the inline paths on)
    values = [taken.snap(a)[0], snapshot(a[:, ::-1]), from_numpy(np.arange(3)),
              snapshot(np.float64([0.3])), taken.snap(np.float32([7.25]))[0]]
    assert values[0]._values == a.tobytes() and values[0].kept == 6
    assert values[1]._values == np.ascontiguousarray(a[:, ::-1]).tobytes()
    wanted = [a.astype(np.float64), a[:, ::-1].astype(np.float64), np.arange(3.0),
              np.float64([0.3]), np.float64([7.25])]
    joined = joined_values(values)
    assert joined.tobytes() == np.concatenate([w.reshape(-1) for w in wanted]).tobytes()
    for v, w in zip(values, wanted):
        assert v.values.tobytes() == w.reshape(-1).tobytes() and v.kept == w.size
    assert [v.dtype for v in values] == ["float32", "float32", "int64", "float64", "float32"]
    chunk = ArrayChunk(tuple((NODE, k, 0, v) for k, v in enumerate(values)))
    back = table.decode_arrays(table.encode_chunk(chunk)[table.RECORD_HEAD_SIZE:])
    assert all(w.same(v) for (_, _, _, w), v in zip(back.entries, values))
    assert values[0].same(ArrayValue((2, 3), "float32", array("d", wanted[0].reshape(-1))))


TRAINING = '''
import numpy as np
from engine.tensor import Tensor
rng = np.random.default_rng(7)
X = rng.normal(size=(4, 3))
W = Tensor(rng.normal(size=(3, 2)), label='W')
b = Tensor(np.zeros((1, 2)), label='b')
seen = []  # the engine's own values after each backward pass and each update (copies)
for k in range(3):
    h = (Tensor(X) @ W + b).relu()
    loss = (h * h).mean() + (W * W).sum()   # W reached twice: its grad `+=` twice
    for p in (W, b):
        p.grad = np.zeros_like(p.data)
    loss.backward()
    seen.append(("grad", W.grad.copy(), b.grad.copy()))
    for p in (W, b):
        p.data -= 0.1 * p.grad              # in place, then set
    seen.append(("data", W.data.copy(), b.data.copy()))
'''


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "hooks"])
def test_the_recorded_arrays_are_the_engines_values_at_each_write(tmp_path, inline):
    """Every write's before is the value its node's field held just then (the last
    value recorded for it: an in-place `+=` changes the array before the write is
    seen), and the values the trace holds at the end of each backward pass and each
    update are the engine's own, as a plain run (no recorder) copied them."""
    path = scenario(tmp_path, TRAINING)
    plain: dict = {"__name__": "__main__"}
    exec(compile(TRAINING, str(path), "exec"), plain)
    t = record(path, inline=inline)
    w, b = node(t, "W"), node(t, "b")
    held: dict = {}  # (node, grad?) -> the value the trace says it holds now
    checked = 0
    grads_after_backward, data_after_update = [], []
    for i in range(len(t)):
        e = t.event(i)
        if e.kind is EventKind.CREATE:
            held[(e.node, True)] = t.values.created_grad(e.node)
            held[(e.node, False)] = t.values.created_value(e.node)
            continue
        if e.kind is EventKind.BACKWARD:
            changes = [(wr.node, wr.field.name == "GRAD",
                        *t.values.write_value(wr.index, wr.before, wr.after)) for wr in t.writes(i)]
        else:
            changes = [(e.node, e.kind is EventKind.GRAD, *t.values.event_value(i, e.before, e.after))]
        for nid, grad, before, after in changes:
            now = held.get((nid, grad))
            if isinstance(now, ArrayValue) and isinstance(before, ArrayValue):
                assert before.same(now), (i, nid, grad)  # the in-place `+=`'s before
                checked += 1
            held[(nid, grad)] = after
        if e.kind is EventKind.DATA and e.node == b:  # an update ends: b's is the last
            grads_after_backward.append((t.values.value_at(w, True, i, 0.0), t.values.value_at(b, True, i, 0.0)))
            data_after_update.append((held[(w, False)], held[(b, False)]))
    assert checked > 30
    expected_grads = [s[1:] for s in plain["seen"] if s[0] == "grad"]
    expected_data = [s[1:] for s in plain["seen"] if s[0] == "data"]
    assert len(grads_after_backward) == len(expected_grads) == 3
    for got, want in zip(grads_after_backward + data_after_update, expected_grads + expected_data):
        for value, array_ in zip(got, want):
            assert value.shape == array_.shape and flat(value) == list(array_.reshape(-1))


def test_the_snapshots_are_let_go_once_cut_and_once_the_engine_lets_go(tmp_path, monkeypatch):
    """A long tensor run cut into chunks as it goes (as the runner's child sends them)
    keeps only the snapshots not yet cut, and the last snapshot of only the arrays the
    engine still holds; the chunks together carry every array the trace of the whole
    run has."""
    from mgtui.recording import array_values
    from mgtui.trace import TraceBuilder

    from tests.conftest import recorded_in_chunks

    monkeypatch.setattr(array_values, "PRUNE_EVERY", 16)
    collected = '    seen.append(("data", W.data.copy(), b.data.copy()))\n'
    assert collected in TRAINING  # (each step's graph, a cycle, collected as it ends)
    path = scenario(tmp_path, TRAINING.replace("range(3)", "range(20)").replace(
        collected, collected + "    import gc; gc.collect()\n"))
    kept: list = []
    cut, recorder = recorded_in_chunks(
        monkeypatch, path, 10, lambda store: kept.append(sum(map(len, store.arrays.values))))
    total = sum(len(c.entries) for c in cut if isinstance(c, ArrayChunk))
    assert len(kept) > 15 and total > 1000
    assert max(kept) < total / 8  # what the last two cuts took, not the whole run's
    assert len(recorder.records.arrays.last) < 100  # W and b, the last step's nodes
    whole = TraceBuilder(str(path))
    for chunk in cut:
        whole.add(chunk)
    alone = record(path)
    t = whole.build(None, "")
    assert t.node_count == alone.node_count
    for nid in range(t.node_count):
        for grad in (False, True):
            assert t.values.final_value(nid, grad).same(alone.values.final_value(nid, grad))
