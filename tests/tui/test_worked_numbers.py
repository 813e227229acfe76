"""Worked numbers for a custom op: a `sigmoid` defined in a `Value` class of the
scenario's own. Its backward step shows what its `_backward` read as it began (`s`,
`out.grad`), the local derivative its write implies (Δgrad / out.grad), and, once the
doctor has run, the numerical one next to it. The values travel in the trace: the JSON
and binary formats carry them, and traces saved without them still load.

Expected numbers come from the sigmoid's formula worked out here.
"""

import json
import math
from pathlib import Path

import pytest

from mgtui.tui.app import MgtuiApp
from mgtui.cli import main
from mgtui.doctor import diagnose
from mgtui.trace.export import dumps, from_json, load
from mgtui.run.runner import run
from mgtui.session import Session
from mgtui.trace.binary import dumpb, loadb
from mgtui.tui.widgets.step_detail import StepDetail

pytestmark = pytest.mark.usefixtures("clean_env")

SCENARIO = '''
"""A neuron with a sigmoid of its own Value class"""
import math


class Value:
    def __init__(self, data, _children=(), _op='', label=''):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = tuple(_children)
        self._op = _op
        self.label = label

    def __add__(self, other):
        out = Value(self.data + other.data, (self, other), '+')
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        out = Value(self.data * other.data, (self, other), '*')
        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def sigmoid(self):
        s = 1 / (1 + math.exp(-self.data))
        out = Value(s, (self,), 'sigmoid')
        def _backward():
            self.grad += DERIVATIVE * out.grad
        out._backward = _backward
        return out

    def backward(self):
        topo, seen = [], set()
        def build(v):
            if v not in seen:
                seen.add(v)
                for c in v._prev:
                    build(c)
                topo.append(v)
        build(self)
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()


x = Value(0.5, label='x')
w = Value(0.4, label='w')
b = Value(0.1, label='b')
z = x * w + b; z.label = 'z'
o = z.sigmoid(); o.label = 'o'
o.backward()
'''

Z = 0.5 * 0.4 + 0.1  # 0.3
S = 1 / (1 + math.exp(-Z))  # 0.5744
RIGHT = S * (1 - S)  # 0.2445


def scenario(tmp_path: Path, derivative: str) -> Path:
    path = tmp_path / "own_sigmoid.py"
    path.write_text(SCENARIO.replace("DERIVATIVE", derivative))
    return path


def sigmoid_step(trace) -> int:
    (o,) = trace.find("o")
    (i,) = [i for i in range(len(trace)) if trace.kind(i) == "backward"
            and trace.event_node(i) == o]
    return i


def test_the_values_the_call_read_are_recorded(tmp_path):
    trace = run(scenario(tmp_path, "s * (1.0 - s)")).trace
    values = dict(trace.values_at(sigmoid_step(trace)))
    assert values["s"] == pytest.approx(S)
    assert values["out.grad"] == 1.0
    assert "self.grad" not in values  # read only to add to it
    # `+` is worked out from its formula, whoever defines it: nothing is recorded for it
    (zi,) = [i for i in range(len(trace)) if trace.kind(i) == "backward"
             and trace.label(trace.event_node(i)) == "z"]
    assert trace.values_at(zi) == ()


def test_the_step_shows_values_and_the_implied_local_derivative(tmp_path):
    trace = run(scenario(tmp_path, "s * (1.0 - s)")).trace
    session = Session(trace)
    exp = session.goto(sigmoid_step(trace) + 1).detail.explanation
    assert exp.values == "s = 0.5744, out.grad = 1.0"
    assert f"∂o/∂z = Δz.grad / o.grad = {RIGHT:.4f} / 1.0 = {RIGHT:.4f}" in exp.local


def test_the_doctor_s_numerical_derivative_is_shown_next_to_it(tmp_path):
    path = scenario(tmp_path, "s * out.grad")  # the bug: the derivative is s * (1 - s)
    report = diagnose(path)
    (f,) = report.findings
    assert f.kind == "wrong-derivative" and f.local == pytest.approx(RIGHT, rel=1e-5)
    trace = run(path).trace
    session = Session(trace)
    session.set_findings(report.findings)
    exp = session.goto(sigmoid_step(trace) + 1).detail.explanation
    assert f"= {S:.4f} / 1.0 = {S:.4f} (numerically {RIGHT:.4f})" in exp.local


async def test_the_app_shows_the_worked_numbers(tmp_path):
    path = scenario(tmp_path, "s * (1.0 - s)")
    app = MgtuiApp(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.debugger
        for _ in range(400):
            if screen.trace is not None:
                break
            await pilot.pause(0.05)
        screen.goto(sigmoid_step(screen.trace) + 1)
        await pilot.pause()
        text = screen.query_one(StepDetail).text
        assert "values at this call: s = 0.5744, out.grad = 1.0" in text
        assert f"local derivative: ∂o/∂z = Δz.grad / o.grad = {RIGHT:.4f}" in text


def test_print_shows_them(tmp_path, capsys):
    assert main([str(scenario(tmp_path, "s * (1.0 - s)")), "--print"]) == 0
    out = capsys.readouterr().out
    assert "values at this call: s = 0.5744, out.grad = 1.0" in out


def test_the_file_formats_carry_the_values_and_old_files_still_load(tmp_path):
    trace = run(scenario(tmp_path, "s * (1.0 - s)")).trace
    i = sigmoid_step(trace)
    for again in (from_json(json.loads(dumps(trace))), loadb(dumpb(trace))):
        assert again.values_at(i) == trace.values_at(i)
    doc = json.loads(dumps(trace))
    for e in doc["events"]:
        e.pop("values", None)  # a trace saved before values were recorded
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps(doc))
    old = load(saved)
    assert old.values_at(i) == () and len(old) == len(trace)
    doc["events"][i]["values"] = [["s", "not a number"]]
    saved.write_text(json.dumps(doc))
    with pytest.raises(Exception, match="values"):
        load(saved)
