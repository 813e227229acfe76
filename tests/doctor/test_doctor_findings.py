"""How findings name things: the topological-order finding points at the line that
builds the order (in a plain function or in a `Value` class's own `backward()`), and a
node with no label of its own is named once, not `#25 (#25, op softplus…`."""

import re
import textwrap
from pathlib import Path

from mgtui.cli import main
from mgtui.doctor import diagnose

CLASS_WITH_BAD_TOPO = '''
"""A Value class of its own whose backward() appends each node before its children"""
import math


class Value:
    def __init__(self, data, _children=(), _op=''):
        self.data = data
        self.grad = 0.0
        self._prev = tuple(_children)
        self._op = _op
        self._backward = lambda: None

    def __mul__(self, other):
        out = Value(self.data * other.data, (self, other), '*')
        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def __add__(self, other):
        out = Value(self.data + other.data, (self, other), '+')
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def backward(self):
        order, seen = [], set()
        def visit(v):
            if v not in seen:
                seen.add(v)
                order.append(v)  # wrong: before the children
                for c in v._prev:
                    visit(c)
        visit(self)
        self.grad = 1.0
        for v in reversed(order):
            v._backward()


a, b, c = Value(2.0), Value(-3.0), Value(10.0)
e = a * b
d = e + c
L = d * Value(-2.0)
L.backward()
'''

SOFTPLUS_NAN = '''
"""A softplus that overflows, on nodes with no labels"""
import math
from engine import Value


def softplus(x):
    out = Value(math.log(1 + math.exp(x.data)) if x.data < 700 else float("inf"), (x,), 'softplus')
    def _backward():
        x.grad += out.grad / (1 + math.exp(-x.data))
    out._backward = _backward
    return out


softplus(Value(2.0) * Value(500.0)).backward()
'''


def write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def line_of(path: Path, text: str) -> int:
    (n,) = [i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s]
    return n


def test_topo_finding_names_the_line_of_a_class_backward_that_builds_the_order(tmp_path):
    path = write(tmp_path, "own_class.py", CLASS_WITH_BAD_TOPO)
    report = diagnose(path)
    (f,) = [f for f in report.findings if f.kind == "topo-order"]
    assert f.line == line_of(path, "order.append(v)  # wrong")
    assert "order.append(v)" in f.text


def test_a_node_without_a_label_is_named_once(tmp_path, capsys):
    path = write(tmp_path, "softplus.py", SOFTPLUS_NAN)
    assert main([str(path), "--check"]) == 1
    out = capsys.readouterr().out
    (node_line,) = [s for s in out.splitlines() if s.lstrip().startswith("node ")]
    assert "op softplus" in node_line
    label = node_line.split()[1]
    # no `.label`: it goes by the variable it was bound to (`out`), then its id, once
    assert label == "out" and re.search(r"node +out \(#\d+, op softplus\)", node_line)
    assert node_line.count("#") == 1
