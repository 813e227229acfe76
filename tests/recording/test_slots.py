"""Value classes that keep their fields in `__slots__`: recorded with the same records as
dict-based ones, checked by the doctor, and left with their own slot descriptors.

The chain's figures come from the lecture (a=2, b=-3, c=10, f=-2, L=(a*b+c)*f), never from
the recorder's own output.
"""

from __future__ import annotations

import math
import sys
import textwrap
import types
from pathlib import Path

import pytest

from mgtui.cli import main
from mgtui.doctor import diagnose
from mgtui.recording.recorder import ID, Recorder, SlotsNode, load_scenario, looks_like_value, record
from mgtui.run.runner import run

# L 1, f 4, d -2, e -2, c -2, a 6, b -4: dL/dd = f, dL/df = d, and e, c pass d's grad on
CHAIN_GRADS = {"L": 1.0, "f": 4.0, "d": -2.0, "e": -2.0, "c": -2.0, "a": 6.0, "b": -4.0}

SLOTS_VALUE = '''
class Value:
    __slots__ = SLOTS

    def __init__(self, data, _children=(), _op='', label=''):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op
        self.label = label

    def __add__(self, other):
        out = Value(self.data + other.data, (self, other), '+')
        def _backward():
            self.grad += 1.0 * out.grad
            other.grad += 1.0 * out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        out = Value(self.data * other.data, (self, other), '*')
        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), 'tanh')
        def _backward():
            self.grad += (1 - t**2) * out.grad  # d(tanh)/dx = 1 - tanh²
        out._backward = _backward
        return out

    def backward(self):
        topo, visited = [], set()
        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)
        build_topo(self)
        self.grad = 1.0
        for node in reversed(topo):
            node._backward()
'''

FIELDS = '("data", "grad", "_backward", "_prev", "_op", "label")'

CHAIN = '''
a = Value(2.0, label='a')
b = Value(-3.0, label='b')
c = Value(10.0, label='c')
e = a*b; e.label = 'e'
d = e + c; d.label = 'd'
f = Value(-2.0, label='f')
L = d * f; L.label = 'L'
'''


def scenario(tmp_path: Path, body: str, slots: str = FIELDS, head: str = "",
             name: str = "slots.py") -> Path:
    """A scenario file: `import math`, `head`, the slots Value class, then `body`."""
    source = "import math\n" + textwrap.dedent(head) + SLOTS_VALUE.replace("SLOTS", slots)
    path = tmp_path / name
    path.write_text(source + textwrap.dedent(body))
    return path


def grads(trace) -> dict[str, float]:
    return {trace.label(n): trace.replay.final_grad[n] for n in range(trace.node_count)}


def line_of(path: Path, text: str) -> int:
    lines = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, (path, text, lines)
    return lines[0]


def test_the_chain_on_a_slots_class_has_the_lecture_grads(tmp_path):
    path = scenario(tmp_path, CHAIN + "L.backward()\n")
    trace = record(path)
    assert trace.error is None
    assert grads(trace) == CHAIN_GRADS
    (L,) = trace.find("L")
    assert trace.op(L) == "*"
    assert [trace.label(c) for c in trace.children(L)] == ["d", "f"]
    assert trace.line(L) == line_of(path, "L = d * f")
    assert [p.kind for p in trace.passes] == ["forward", "backward"]
    # backward() walks the topological order from L back: children in the order given
    calls = [e for e in trace.events() if e.kind == "backward"]
    assert [trace.label(e.node) for e in calls] == ["L", "f", "d", "c", "e", "b", "a"]


def test_the_chain_on_a_slots_class_through_the_runner(tmp_path):
    path = scenario(tmp_path, CHAIN + "L.backward()\nprint(round(a.grad, 6))\n")
    result = run(path)
    assert result.trace.error is None, result.trace.error
    assert grads(result.trace) == CHAIN_GRADS
    assert result.trace.output.strip() == "6.0"


def test_backward_calls_made_by_hand_and_their_writes(tmp_path):
    path = scenario(tmp_path, CHAIN + """
L.grad = 1.0
L._backward()
d._backward()
e._backward()
""")
    trace = record(path)
    calls = [e for e in trace.events() if e.kind == "backward"]
    assert [trace.label(e.node) for e in calls] == ["L", "d", "e"]
    assert [(trace.label(w.node), w.before, w.after) for w in calls[0].writes] == [
        ("d", 0.0, -2.0), ("f", 0.0, 4.0)]
    assert [trace.label(w.node) for w in calls[2].writes] == ["a", "b"]
    lines = trace.source.splitlines()
    assert [lines[e.line - 1] for e in calls] == ["L._backward()", "d._backward()", "e._backward()"]
    assert grads(trace) == CHAIN_GRADS


def test_writes_outside_backward_make_zero_grad_and_update_passes(tmp_path):
    path = scenario(tmp_path, CHAIN + """
L.backward()
for v in (a, b):
    v.data += -0.1 * v.grad
for v in (a, b):
    v.grad = 0.0
""")
    trace = record(path)
    assert [p.kind for p in trace.passes] == ["forward", "backward", "update", "zero_grad"]
    (a,) = trace.find("a")
    assert trace.replay.final_data[a] == pytest.approx(2.0 - 0.1 * 6.0)
    assert trace.replay.final_grad[a] == 0.0


def test_late_labels_then_variable_names_then_ids(tmp_path):
    path = scenario(tmp_path, """
x = Value(1.0, label='alpha')
y = Value(2.0)
z = x * y
z.label = 'late'
total = z + Value(3.0)
""")
    trace = record(path)
    assert [trace.label(i) for i in range(trace.node_count)] == ["alpha", "y", "late", "#3", "total"]


def test_the_class_gets_its_own_slot_descriptors_back(tmp_path, monkeypatch):
    (tmp_path / "slotsvalue.py").write_text("import math\n" + SLOTS_VALUE.replace("SLOTS", FIELDS))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slotsvalue", raising=False)
    import slotsvalue

    before = dict(vars(slotsvalue.Value))
    path = tmp_path / "uses.py"
    path.write_text("from slotsvalue import Value\n" + CHAIN + "L.backward()\n")
    assert grads(record(path)) == CHAIN_GRADS
    after = dict(vars(slotsvalue.Value))
    assert after.keys() == before.keys()
    assert all(after[k] is before[k] for k in before)
    assert type(after["grad"]) is types.MemberDescriptorType


def test_a_class_defined_in_the_scenario_is_restored_and_keeps_its_values(tmp_path):
    rec = Recorder(load_scenario(scenario(tmp_path, CHAIN + "L.backward()\n")))
    rec.run()
    Value = rec.globals["Value"]
    for name in ("data", "grad", "_backward", "label", "_prev", "_op"):
        assert type(Value.__dict__[name]) is types.MemberDescriptorType, name
    assert Value.__dict__["__init__"].__name__ == "__init__"
    assert not hasattr(Value.__dict__["__init__"], "__wrapped__")
    assert rec.globals["a"].grad == 6.0 and rec.globals["L"].label == "L"


def test_looks_like_value_sees_a_slots_class():
    namespace: dict = {"math": __import__("math")}
    exec(SLOTS_VALUE.replace("SLOTS", FIELDS), namespace)
    assert looks_like_value(namespace["Value"])


@pytest.mark.parametrize("slots, head", [
    (FIELDS[:-1] + ', "__weakref__")', ""),  # nodes forgotten as they die
    ('("data", "grad", "__dict__")', ""),  # _backward, _prev, _op, label in the dict
    ('("_backward", "_prev", "_op", "label")', """
        class Base:
            __slots__ = ("data", "grad")
    """),
], ids=["weakref", "dict-slot", "slots-base"])
def test_other_slots_layouts_record_the_chain(tmp_path, slots, head):
    path = scenario(tmp_path, CHAIN + "L.backward()\n", slots, head)
    if head:  # the fields split between a slots base and the class
        path.write_text(path.read_text().replace("class Value:", "class Value(Base):"))
    trace = record(path)
    assert trace.error is None, trace.error
    assert grads(trace) == CHAIN_GRADS


@pytest.mark.parametrize("slots", [FIELDS, FIELDS[:-1] + ', "__weakref__")'],
                         ids=["kept-alive", "weakref"])
def test_nodes_that_die_do_not_lend_their_address_to_new_ones(tmp_path, slots):
    path = scenario(tmp_path, """
kept = Value(1.0, label='kept')
for i in range(300):
    Value(float(i))  # gone at once: the next one may be given its address
out = kept * Value(2.0, label='two'); out.label = 'out'
out.backward()
""", slots)
    trace = record(path)
    assert trace.node_count == 1 + 300 + 2
    (out,) = trace.find("out")
    assert [trace.label(c) for c in trace.children(out)] == ["kept", "two"]
    assert {k: v for k, v in grads(trace).items() if k in ("kept", "two", "out")} == {
        "kept": 2.0, "two": 1.0, "out": 1.0}


def test_a_node_the_scenario_drops_is_freed_when_its_class_takes_weak_references(tmp_path):
    path = scenario(tmp_path, """
import weakref
a = Value(1.0)
gone = weakref.ref(a)
del a
assert gone() is None, "the recorder kept a node alive"
""", FIELDS[:-1] + ', "__weakref__")')
    trace = record(path)
    assert trace.error is None, trace.error
    assert trace.node_count == 1


def test_a_subclass_chaining_up_is_one_node(tmp_path):
    path = scenario(tmp_path, """
class Tagged(Value):
    __slots__ = ("tag",)

    def __init__(self, data, _children=(), _op='', label='', tag=''):
        super().__init__(0.0, _children, _op, label)
        self.tag = tag
        self.data = data
        self._prev, self._op = set(_children), _op
        self._backward = lambda: None
        self.grad = 0.0

a = Tagged(2.0, label='a', tag='t')
p = a * Value(3.0, label='k')
p.backward()
""")
    rec = Recorder(load_scenario(path))
    trace = rec.run()
    assert looks_like_value(rec.globals["Tagged"])  # instrumented too, over Value's hooks
    assert trace.node_count == 3
    assert grads(trace) == {"a": 3.0, "k": 2.0, "p": 1.0}
    (a,) = trace.find("a")  # the writes after chaining up are the subclass's own
    assert trace.replay.final_data[a] == 2.0
    assert "__init__" not in vars(rec.globals["Tagged"]) or not hasattr(
        vars(rec.globals["Tagged"])["__init__"], "__wrapped__")
    assert "grad" not in vars(rec.globals["Tagged"])


def test_hooks_see_a_slots_node_as_a_mapping(tmp_path):
    path = scenario(tmp_path, CHAIN + "L.backward()\n")
    seen = []

    def on_create(nid, d):
        assert isinstance(d, SlotsNode) and ID not in d
        if d["label"] == "a":
            d["data"] = d["data"] + 1.0  # a = 3: L = (3*-3 + 10) * -2 = -2

    def before_backward(d, fn):
        seen.append((d.get(ID), d["label"], [c.label for c in d.get("_prev")]))

    trace = record(path, on_create=on_create, before_backward=before_backward)
    (L,) = trace.find("L")
    assert trace.replay.final_data[L] == -2.0
    assert seen[0] == (L, "L", ["d", "f"])


# -- the doctor ----------------------------------------------------------------------------

WRONG_TANH = """
x = Value(0.5, label='x')
w = Value(-1.5, label='w')
n = x*w; n.label = 'n'
t = math.tanh(n.data)
o = Value(t, (n,), 'tanh'); o.label = 'o'
def _backward():
    n.grad += t * o.grad  # BUG: d(tanh)/dx = 1 - tanh²
o._backward = _backward
o.backward()
"""


def test_the_doctor_finds_a_wrong_derivative_in_a_slots_class(tmp_path, capsys):
    path = scenario(tmp_path, WRONG_TANH)
    (f,) = diagnose(path).findings
    assert (f.kind, f.label, f.line) == ("wrong-derivative", "o", line_of(path, "# BUG"))
    t = math.tanh(0.5 * -1.5)
    assert f.numerical == pytest.approx(1 - t**2, rel=1e-6)
    assert f.recorded == pytest.approx(t, rel=1e-9)
    assert main([str(path), "--check"]) == 1


def test_the_doctor_finds_an_overwrite_in_a_slots_class(tmp_path):
    path = scenario(tmp_path, """
a = Value(2.0, label='a')
b = a + a; b.label = 'b'
def _backward():
    a.grad = 1.0 * b.grad  # BUG: = for +=
b._backward = _backward
b.backward()
""")
    kinds = [(f.kind, f.label, f.line) for f in diagnose(path).findings]
    assert ("overwrite", "b", line_of(path, "# BUG")) in kinds


def test_the_doctor_finds_nothing_in_a_correct_slots_class(tmp_path, capsys):
    path = scenario(tmp_path, CHAIN + "o = (L * Value(0.1, label='s')).tanh(); o.backward()\n")
    report = diagnose(path)
    assert report.findings == [] and report.checked_pass is not None
    assert main([str(path), "--check"]) == 0
