"""The inlined recording (`mgtui.recording.inline.rewrite`) against the hooks: the same records, exactly.

Every bundled scenario and every bug scenario is recorded both ways, and the raw records
(nodes, children, events, writes, late labels, closures) and the finished trace's JSON
must be equal. The hooks are the reference: the inlined path is an optimisation of them.
"""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import pytest

from mgtui.trace.export import dumps
from mgtui.recording.recorder import Recorder, load_scenario, record

ROOT = Path(__file__).resolve().parent.parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.py")) + sorted(
    (ROOT / "scenarios" / "bugs").glob("*.py"))
SCENARIOS = [p for p in SCENARIOS if p.name != "__init__.py"]


def raw_records(path, **options) -> tuple:
    recorder = Recorder(load_scenario(path), **options)
    error, output = recorder.execute()
    records = recorder.records
    closures = records.closures()
    labels = records.relabelled(records.node_count())
    names = recorder.resolve_names()
    recorder.slots_ids.release()
    plain = recorder.inliner is None
    return (list(records.nodes), list(records.kids), list(records.events),
            list(records.writes), dict(records.late_labels), closures, labels,
            None if error is None else (error.type, error.message, error.line), output,
            names), plain


def same(a, b) -> bool:
    """Equal, with nan equal to nan (a record of a non-finite value)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_inlined_records_equal_the_hooks_records(path):
    hooks, plain = raw_records(path, inline=False)
    inlined, not_plain = raw_records(path)
    assert plain and not not_plain
    names = ("nodes", "kids", "events", "writes", "late labels", "closures", "labels",
             "error", "output", "names")
    for name, a, b in zip(names, hooks, inlined):
        assert same(a, b), name
    assert len(hooks[2]) > 0  # it recorded something


@pytest.mark.parametrize("name", ["chain.py", "neuron.py", "mlp.py"])
def test_the_exported_json_is_the_same_both_ways(name):
    path = ROOT / "scenarios" / name
    assert dumps(record(path)) == dumps(record(path, inline=False))


# -- the kinds of class and of code, both ways ---------------------------------------------

from tests.recording.test_recorder import MICROGRAD_NEURON, OWN_CLASS_NEURON  # noqa: E402

BY_HAND = """
    '''Backprop by hand, as in the lecture, with every kind of store'''
    from engine import Value
    a = Value(2.0, label='a'); b = Value(-3.0, label='b')
    e = a*b; e.label = 'e'
    c = Value(10.0, label='c')
    d = e + c; d.label = 'd'
    d.grad = 1.0
    d._backward()
    step = e._backward   # read now, called later
    step()
    a.grad, b.grad = 0.0, 0.0          # a tuple of stores
    a.data = b.data = 5.0              # two targets
    [c.grad, *rest] = [1.0, 2.0, 3.0]  # a starred list
    (e.grad, d.data) = pair = c.grad = (7.0, 8.0)  # a tuple, then more targets
    c.grad = 1.0
    a.data += 0.5
    a.label += '!'
    setattr(c, 'grad', 4.0)            # a store by name
    setattr(b, 'data', b.data * 2)
"""

SUBCLASS = """
    from engine import Value

    class Named(Value):
        def __init__(self, data, name, _children=(), _op=''):
            super().__init__(data, _children, _op, label=name)
            self.grad = 0.5   # after the node is made: a write of its own

    x = Named(2.0, 'x')
    y = Named(3.0, 'y')
    z = x * y
    z.backward()
"""

HOOKED_BESIDE_INLINED = """
    '''A class that keeps the hooks (a class attribute on a field) beside the engine'''
    from engine import Value

    class Odd:
        label = 'odd'
        def __init__(self, data, _children=(), _op=''):
            self.data = data
            self.grad = 0.0
            self._backward = lambda: None
            self._prev = tuple(_children)
            self._op = _op
        def __mul__(self, other):
            out = Odd(self.data * other.data, (self, other), '*')
            def _backward():
                self.grad += other.data * out.grad
                other.grad += self.data * out.grad
            out._backward = _backward
            return out

    p = Odd(2.0); q = Odd(4.0)
    r = p * q
    r.grad = 1.0
    r._backward()
    a = Value(1.0); b = a * 3.0
    b.backward()
    p.grad = 0.0
"""

PARTIAL_BACKWARD = """
    from functools import partial
    from engine import Value

    def _bw(x, out):
        x.grad += 2 * out.grad

    a = Value(3.0, label='a')
    out = Value(6.0, (a,), 'double')
    out._backward = partial(_bw, a, out)
    out.backward()
"""


@pytest.mark.parametrize("body", [MICROGRAD_NEURON, OWN_CLASS_NEURON, BY_HAND, SUBCLASS,
                                  HOOKED_BESIDE_INLINED, PARTIAL_BACKWARD],
                         ids=["micrograd", "own-class", "by-hand", "subclass",
                              "hooked-beside", "partial"])
def test_other_classes_and_stores_record_the_same_both_ways(tmp_path, body):
    path = tmp_path / "scenario.py"
    path.write_text(textwrap.dedent(body))
    hooks, _ = raw_records(path, inline=False)
    inlined, _ = raw_records(path)
    assert hooks[7] is None, hooks[7]  # the scenario ran to its end
    for name, a, b in zip(("nodes", "kids", "events", "writes", "late labels", "closures",
                           "labels", "error", "output", "names"), hooks, inlined):
        if name != "error":
            assert same(a, b), name


def test_figures_of_the_by_hand_scenario(tmp_path):
    """Checked against the arithmetic, not against either recording."""
    path = tmp_path / "by_hand.py"
    path.write_text(textwrap.dedent(BY_HAND))
    trace = record(path)
    kinds = [e.kind for e in trace.events()]
    calls = [e for e in trace.events() if e.kind == "backward"]
    assert [trace.label(e.node) for e in calls] == ["d", "e"]
    # e = a*b: a.grad += b * e.grad = -3, b.grad += a * e.grad = 2; then both set to 0
    assert [(trace.label(w.node), w.after) for w in calls[1].writes] == [("a!", -3.0),
                                                                         ("b", 2.0)]
    assert trace.replay.final_grad[trace.find("a!")[0]] == 0.0
    assert trace.replay.final_data[trace.find("a!")[0]] == 5.5
    assert trace.replay.final_data[trace.find("b")[0]] == 10.0
    assert trace.replay.final_grad[trace.find("c")[0]] == 4.0
    assert trace.replay.final_grad[trace.find("e")[0]] == 7.0
    assert trace.replay.final_data[trace.find("d")[0]] == 8.0
    assert kinds.count("grad") == 8 and kinds.count("data") == 5


def test_a_helper_module_beside_the_scenario_is_rewritten_too(tmp_path):
    """An optimiser in a module of its own, which never names the Value class."""
    (tmp_path / "sgd.py").write_text(textwrap.dedent("""
        def step(params, lr):
            for p in params:
                p.data -= lr * p.grad
                p.grad = 0.0
    """))
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent("""
        from engine import Value
        import sgd
        w = Value(2.0, label='w')
        loss = w * w
        loss.backward()
        sgd.step([w], 0.25)
    """))
    hooks, _ = raw_records(path, inline=False)
    inlined, _ = raw_records(path)
    assert same(hooks[2], inlined[2])
    trace = record(path)
    assert [p.kind for p in trace.passes][-2:] == ["update", "zero_grad"]
    w = trace.find("w")[0]
    assert trace.replay.final_data[w] == 2.0 - 0.25 * 4.0 and trace.replay.final_grad[w] == 0.0


def test_reads_stay_plain_while_recording_and_classes_are_put_back(tmp_path):
    """An adopted class has no descriptor on its fields during the run (so reads of
    `grad` and `data` are the interpreter's own), and every function gets its code back."""
    import engine.nn
    from engine import Value

    before = {name: f.__code__ for name, f in vars(Value).items() if hasattr(f, "__code__")}
    zero_grad = engine.nn.Module.zero_grad.__code__
    path = tmp_path / "look.py"
    path.write_text(textwrap.dedent("""
        from engine import Value
        fields = {name: type(vars(Value).get(name)).__name__
                  for name in ('grad', 'data', '_backward', 'label')}
        print(sorted(fields.items()))
    """))
    trace = record(path)
    assert trace.output.strip() == str(sorted(
        {"grad": "NoneType", "data": "NoneType", "_backward": "NoneType",
         "label": "NoneType"}.items()))
    assert {name: f.__code__ for name, f in vars(Value).items()
            if hasattr(f, "__code__")} == before
    assert all(before[name] is f.__code__ for name, f in vars(Value).items()
               if hasattr(f, "__code__"))
    assert engine.nn.Module.zero_grad.__code__ is zero_grad


def test_the_same_trace_in_fresh_processes(tmp_path):
    """Each mode in a process of its own, so that the engine and micrograd are imported
    during the run, as in the runner's child."""
    import json
    import subprocess
    import sys

    path = tmp_path / "mg.py"
    path.write_text(textwrap.dedent(MICROGRAD_NEURON) + textwrap.dedent("""
        from micrograd.nn import MLP
        model = MLP(3, [4, 1])
        loss = sum((model([1.0, -2.0, 0.5]) - 1.0)**2 for _ in range(2))
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data -= 0.1 * p.grad
    """))
    program = ("import sys; from mgtui.recording.recorder import record; from mgtui.trace.export import dumps; "
               "print(dumps(record(sys.argv[1], inline=sys.argv[2] == 'inline')))")
    outputs = [subprocess.run([sys.executable, "-c", program, str(path), mode],
                              capture_output=True, text=True, check=True, cwd=ROOT).stdout
               for mode in ("inline", "hooks")]
    assert outputs[0] == outputs[1]
    doc = json.loads(outputs[0])
    assert {p["kind"] for p in doc["passes"]} >= {"forward", "zero_grad", "backward", "update"}


def test_what_a_module_beside_the_scenario_does_as_it_is_imported_is_recorded(tmp_path):
    """Its module-level code runs rewritten from its first line (and no bytecode of the
    rewritten code is left behind)."""
    import sys

    (tmp_path / "prepared.py").write_text(textwrap.dedent("""
        from engine import Value
        w = Value(3.0, label='w')
        loss = w * w
        loss.backward()
        w.data -= 0.5 * w.grad   # an update, at import
        w.grad = 0.0
    """))
    path = tmp_path / "uses.py"
    path.write_text("import prepared\nprepared.w.grad = 1.0\n")
    runs = []
    for inline in (False, True):
        sys.modules.pop("prepared", None)
        runs.append(raw_records(path, inline=inline)[0])
    sys.modules.pop("prepared", None)
    for name, a, b in zip(("nodes", "kids", "events", "writes"), *runs):
        assert same(a, b), name
    sys.modules.pop("prepared", None)
    trace = record(path)
    sys.modules.pop("prepared", None)
    assert [p.kind for p in trace.passes] == ["forward", "backward", "update", "zero_grad",
                                              "other"]
    w = trace.find("w")[0]
    assert trace.replay.final_data[w] == 3.0 - 0.5 * 6.0
    assert not list(tmp_path.glob("__pycache__/prepared*.pyc")) or all(
        b"__mgtui" not in pyc.read_bytes() for pyc in tmp_path.glob("__pycache__/*.pyc"))


# -- the short ways of the inlined recording -----------------------------------------------

LOOP = """
    def run(out):  # a loop of `_backward` calls from one frame, as `backward()` makes
        for v in [out, *out._prev]:
            v._backward()
"""

CALLS_FROM_FRAMES = """
    from engine import Value
    from MODULE import run

    a = Value(2.0, label='a'); b = Value(-3.0, label='b')
    c = a * b; c.label = 'c'
    d = c + a; d.label = 'd'
    d.grad = 1.0
    run(d)  # line 9
    e = d * d; e.label = 'e'
    e.grad = 1.0
    run(e)  # line 12: another frame of `run`, the same code
    d._backward()  # line 13: by hand
    e.backward()  # line 14
"""


def test_calls_from_a_new_frame_of_the_same_function_get_its_line(tmp_path):
    """The frame of the last `_backward` call is remembered: a call from another frame,
    even of the same code at the same address, must not take the remembered line."""
    path = tmp_path / "scenario.py"
    path.write_text(textwrap.dedent(CALLS_FROM_FRAMES).replace("MODULE", "loop_of_calls"))
    (tmp_path / "loop_of_calls.py").write_text(textwrap.dedent(LOOP))
    for inline in (True, False):
        trace = record(path, inline=inline)
        calls = [e for e in trace.events() if e.kind == "backward"]
        # run(d): d, c, a (a leaf: its no-op); run(e): e, d (e's one child, the engine
        # keeps no duplicates); by hand: d; then e.backward()'s own calls
        lines = [e.line for e in calls]
        labels = [trace.label(e.node) for e in calls]
        assert labels[:6] == ["d", "c", "a", "e", "d", "d"], (inline, labels)
        assert lines[:6] == [9, 9, 9, 12, 12, 13], (inline, lines)
        assert labels[6:8] == ["e", "d"] and set(lines[6:]) == {14}, (inline, labels, lines)
    hooks, _ = raw_records(path, inline=False)
    inlined, _ = raw_records(path)
    for name, a, b in zip(("nodes", "kids", "events", "writes"), hooks, inlined):
        assert same(a, b), name


SHADOWED_SET = """
    import builtins

    made = []

    def set(items):  # the module's own `set`, which the class below calls
        made.append(len(items))
        return builtins.set(items)

    class Value:
        def __init__(self, data, _children=(), _op=''):
            self.data = data
            self.grad = 0.0
            self._backward = lambda: None
            self._prev = set(_children)
            self._op = _op

        def __add__(self, other):
            out = Value(self.data + other.data, (self, other), '+')
            def _backward():
                self.grad += out.grad
                other.grad += out.grad
            out._backward = _backward
            return out

    a = Value(1.0); b = Value(2.0)
    c = a + b
    d = c + a
    assert made == [0, 0, 2, 2], made
    assert list(d._prev) == [c, a]  # in the order given, not by address
"""


def test_a_module_s_own_set_is_still_called_for_prev(tmp_path):
    """micrograd's `self._prev = set(_children)` is rewritten to keep two children in
    order; where `set` is not Python's, the module's own is called as before."""
    path = tmp_path / "scenario.py"
    path.write_text(textwrap.dedent(SHADOWED_SET))
    hooks, _ = raw_records(path, inline=False)
    inlined, plain = raw_records(path)
    assert not plain
    assert hooks[7] is None and inlined[7] is None, (hooks[7], inlined[7])
    for name, a, b in zip(("nodes", "kids", "events", "writes"), hooks, inlined):
        assert same(a, b), name
    assert inlined[1] == [0, 1, 2, 0]  # c's children a, b; d's c, a


def test_a_module_beside_the_scenario_that_an_earlier_run_imported_is_recorded(tmp_path):
    """The module stays imported, with its functions' rewritten code: the next run must
    give them its helpers again, or their `_backward` calls go unrecorded."""
    path = tmp_path / "scenario.py"
    path.write_text(textwrap.dedent(CALLS_FROM_FRAMES).replace("MODULE", "loop_imported"))
    (tmp_path / "loop_imported.py").write_text(textwrap.dedent(LOOP))
    first, _ = raw_records(path)
    second, _ = raw_records(path)
    hooks, _ = raw_records(path, inline=False)
    for name, a, b, c in zip(("nodes", "kids", "events", "writes"), first, second, hooks):
        assert same(a, b) and same(a, c), name
    assert first[2][0::7].count(1) == 11  # backward calls: 3, 2, 1 by hand, e's graph's 5


CALL_SITES = """
    def twice(fn):
        return fn

    @twice
    def run(out, pick=lambda v: v):
        '''Calls from a function with a docstring, a decorator and a default.'''
        for v in [out, *out._prev]:
            pick(v)._backward()

    def in_a_comprehension(out):
        return [v._backward() for v in [out, *out._prev]]

    by_lambda = lambda v: v._backward()

    class Caller:
        def call(self, v):
            return v._backward()
"""

CALLS_FROM_SITES = """
    from engine import Value
    from call_sites import Caller, by_lambda, in_a_comprehension, run

    a = Value(2.0, label='a'); b = Value(-3.0, label='b')
    c = a * b; c.label = 'c'
    c.grad = 1.0
    run(c)  # line 8
    in_a_comprehension(c)  # line 9
    by_lambda(c)  # line 10
    Caller().call(c)  # line 11
    run(c)  # line 12: a new frame of `run`
"""


def test_backward_calls_from_any_kind_of_code_get_their_line(tmp_path):
    """The rewritten `_backward()` call keeps its frame's line in a list the function
    makes as it starts; a lambda, which cannot make one, takes the long way."""
    path = tmp_path / "scenario.py"
    path.write_text(textwrap.dedent(CALLS_FROM_SITES))
    (tmp_path / "call_sites.py").write_text(textwrap.dedent(CALL_SITES))
    for inline in (True, False):
        sys.modules.pop("call_sites", None)
        trace = record(path, inline=inline)
        calls = [e for e in trace.events() if e.kind == "backward"]
        assert [trace.label(e.node) for e in calls] == ["c", "a", "b"] * 2 + ["c"] * 2 + \
            ["c", "a", "b"], inline
        assert [e.line for e in calls] == [8] * 3 + [9] * 3 + [10, 11] + [12] * 3, inline
    sys.modules.pop("call_sites", None)
    hooks, _ = raw_records(path, inline=False)
    sys.modules.pop("call_sites", None)
    inlined, _ = raw_records(path)
    for name, a, b in zip(("nodes", "kids", "events", "writes"), hooks, inlined):
        assert same(a, b), name


def test_every_name_the_rewrite_injects_is_in_the_one_table():
    """pytest's `@pytest_ar.<name>`: each `__mgtui_...__` name in rewritten code (the
    engine, every scenario) is in `inline_helpers.INJECTED`, which says what it is during
    a run (a helper of that name, or a record column) and after it."""
    import re
    import types

    from mgtui.recording.inline import helpers as inline_helpers
    from mgtui.recording.inline.rewrite import rewrite_of

    injected = {i.name: i for i in inline_helpers.INJECTED}
    seen: set[str] = set()
    for path in [ROOT / "engine" / "value.py", *SCENARIOS]:
        rewrite = rewrite_of(str(path), path.read_text())
        assert rewrite is not None
        for code in rewrite.rewritten.values():
            seen.update(n for n in code.co_names if re.fullmatch(r"__mgtui_\w+__", n))
    assert seen, "the rewrite injected nothing"
    assert seen <= injected.keys()
    for name in seen:
        during = injected[name].during
        if during is not None and during in inline_helpers.HELPERS:
            assert isinstance(getattr(inline_helpers, during), types.FunctionType), name
    # what the rewrite of a `_backward` call and of a write inside one call
    assert {"__mgtui_call_backward__", "__mgtui_add_write__", "__mgtui_made__"} <= seen
