"""Explanations that reach the cause: a `_backward` whose closure holds a node other than
its own (a softmax whose closures were bound late in a loop) is said to, with the node
it holds, in the doctor's finding and in the step's explanation.

The node a closure holds is told by the values the call read (`out.data`, `out.grad`),
matched against the nodes' recorded values; which node it should be comes from how the
scenario builds them (the loop's last node), worked out here from the trace's ops.
"""

from pathlib import Path

import pytest

import mgtui
from mgtui.cli import main
from mgtui.doctor import diagnose
from mgtui.trace.explain import explain, fmt
from mgtui.run.runner import run
from mgtui.session.timeline import Timeline

CLOSURES = Path(__file__).resolve().parent / "data" / "closures"
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
