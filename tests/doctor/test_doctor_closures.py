"""Explanations that reach the cause: a `_backward` whose closure holds a node other than
its own (a softmax whose closures were bound late in a loop) is said to, with the node
it holds, in the doctor's finding and in the step's explanation.

The node a closure variable holds is recorded at each custom op's call (its id, for every
variable that holds a node, those only written to included); an older trace without
them is told by the values the call read (`out.data`, `out.grad`), matched against the
nodes' recorded values. Which node it should be comes from how the scenario builds them
(the loop's last node), worked out here from the trace's ops.
"""

from pathlib import Path

import pytest

import mgtui
from mgtui.cli import main
from mgtui.doctor import diagnose
from mgtui.trace.engines import explain
from mgtui.trace.explain import fmt
from mgtui.run.runner import run
from mgtui.session.timeline import Timeline

CLOSURES = Path(__file__).resolve().parent.parent / "data" / "closures"
LATE = CLOSURES / "softmax_late.py"


def line_of(path: Path, text: str) -> int:
    (n,) = [i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s]
    return n


def softmax_nodes(trace) -> list[int]:
    return [n for n in range(trace.node_count) if trace.op(n) == "softmax"]


def test_the_finding_says_which_node_the_closure_holds():
    report = diagnose(LATE)
    (f,) = report.findings
    assert (f.kind, f.op, f.line) == ("wrong-derivative", "softmax", line_of(LATE, "# BUG"))
    first, second, last = softmax_nodes(report.trace)
    assert f.node != last  # the last node's own closure holds its own `out`: right
    assert f"`out` here is #{last}, not #{f.node}" in f.message
    assert "bound late" in f.message
    assert "`def _backward(out=out, i=i):`" in f.message


def test_the_step_explains_it_too(capsys):
    trace = run(LATE).trace
    first, second, last = softmax_nodes(trace)
    timeline = Timeline(trace)
    notes = {}
    for i in range(len(trace)):
        timeline.step()
        if trace.kind(i) == "backward" and trace.op(trace.event_node(i)) == "softmax":
            ex = explain(trace, timeline.data, timeline.grad, i)
            notes[trace.event_node(i)] = [n for n in ex.notes if n.startswith("`out`")]
    assert notes[last] == []
    for n in (first, second):
        (note,) = notes[n]
        # the values read are the last node's: its data, and its grad at that moment
        assert note.startswith(f"`out` here is #{last}, not #{n}: this call read "
                               f"out.data = {fmt(trace.node_data[last])}")
    assert main([str(LATE), "--print"]) == 0
    assert f"`out` here is #{last}, not #{first}" in capsys.readouterr().out


def test_closures_made_one_by_one_are_clean():
    assert not mgtui.check(CLOSURES / "softmax_bound.py")
    trace = run(CLOSURES / "softmax_bound.py").trace
    timeline = Timeline(trace)
    for i in range(len(trace)):
        timeline.step()
        if trace.kind(i) == "backward":
            assert trace.op(trace.event_node(i)) != "softmax" or trace.values_at(i)
            assert not any("here is" in n for n in
                           explain(trace, timeline.data, timeline.grad, i).notes)


def test_a_closure_holding_a_node_that_is_not_an_input(tmp_path):
    path = tmp_path / "other_node.py"
    path.write_text('''
"""A scale op whose closure reads a node that is neither its own nor its input"""
from engine import Value

def scaled_by(x, k):
    out = Value(x.data * k.data, (x,), 'scale')
    def _backward():
        x.grad += k.data * out.grad
    out._backward = _backward
    return out

k = Value(3.0, label='k')
x = Value(0.5, label='x')
y = scaled_by(x, k); y.label = 'y'
k = Value(4.0, label='k2')  # a new node for `k`, which the closure does not see
y.backward()
''')
    trace = run(path).trace
    (call,) = [i for i in range(len(trace)) if trace.kind(i) == "backward"
               and trace.op(trace.event_node(i)) == "scale"]
    timeline = Timeline(trace)
    timeline.seek(call + 1)
    ex = explain(trace, timeline.data, timeline.grad, call)
    (k,) = trace.find("k")
    (y,) = trace.find("y")
    (note,) = [n for n in ex.notes if "here is" in n]
    # the closure's own `k`: an input of no node, and not made by the same op: not late
    assert note == (f"`k` here is k (#{k}), which is neither y (#{y}) nor one of its "
                    f"inputs: this call read k.data = 3.0, which are k (#{k})'s.")


@pytest.mark.parametrize("value, shown", [(2, "2"), (2.0, "2.0"), (-3, "-3"), (0.25, "0.25"),
                                          (True, "1.0")])
def test_ints_show_as_ints(value, shown):
    assert fmt(value) == shown


# -- by the node each closure variable holds (recorded at the call) ------------------------

SCALE = CLOSURES / "scale_late.py"


def test_a_late_variable_only_written_to_is_named_by_the_node_it_holds():
    """`x.grad += k * out.grad`: `x` is only written to (no value of it is read), `out`
    only its grad (which tells too little): the node ids recorded at the call say both."""
    (f,) = diagnose(SCALE).findings
    assert (f.kind, f.line) == ("foreign-write", line_of(SCALE, "# BUG"))
    t = run(SCALE).trace
    (a,), (b,) = t.find("a"), t.find("b")
    first, second = [n for n in range(t.node_count) if t.op(n) == "scale"]
    assert f.node == first
    assert f"`x` here is b (#{b}), not a (#{a}): it holds b (#{b}) as this call begins" \
        in f.message
    assert f"here is #{second}, not #{first}: this call read out.grad = 1" in f.message
    assert "`def _backward(out=out, x=x, k=k):`" in f.message  # one advice for both


def test_ints_read_at_a_call_stay_ints():
    trace = run(LATE).trace
    timeline = Timeline(trace)
    shown = []
    for i in range(len(trace)):
        timeline.step()
        if trace.kind(i) == "backward" and trace.values_at(i):
            shown.append(explain(trace, timeline.data, timeline.grad, i).values)
            assert ("i", 2) in trace.values_at(i)
            assert type(dict(trace.values_at(i))["i"]) is int
    assert shown and all("i = 2," in s for s in shown)


def test_an_older_trace_without_node_ids_is_still_read_by_its_values(tmp_path):
    import json

    from mgtui.trace.export import dumps, load

    trace = run(LATE).trace
    doc = json.loads(dumps(trace))
    for e in doc["events"]:
        if "values" in e:
            e["values"] = [pair for pair in e["values"] if not pair[0].endswith("#")]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    older = load(old)
    assert not any(n.endswith("#") for i in range(len(older)) for n, _ in older.values_at(i))
    first, second, last = softmax_nodes(older)
    timeline = Timeline(older)
    notes = []
    for i in range(len(older)):
        timeline.step()
        if older.kind(i) == "backward" and older.event_node(i) == first:
            notes = explain(older, timeline.data, timeline.grad, i).notes
    assert any(n.startswith(f"`out` here is #{last}, not #{first}: this call read out.data")
               for n in notes)
