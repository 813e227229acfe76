"""Every probe writes through the one record store, and they all record the same thing.

Each bundled scenario (and every bug scenario) is recorded through the path the product
uses, a child process of the runner, three ways: as it is (the Value class's code is
rewritten, `mgtui.recording.inline.probe`), with a copy of the engine whose `__init__` the rewrite
leaves alone (the dict hooks, `mgtui.recording.dict_hooks`), and with a copy of the engine whose
`Value` keeps its fields in `__slots__` (`mgtui.recording.slots_hooks`). It is also recorded in
this process by `Recorder.finish`, and by the in-code API (`mgtui.recording.inprocess`). All the
traces must be the same. (`moons.py` is left to `test_inline.py` and the benchmarks.)
"""

from __future__ import annotations

import builtins
import math
import shutil
import sys
from pathlib import Path

import pytest

from mgtui.recording.dict_hooks import DictHooks
from mgtui.recording.inline.probe import Inliner
from mgtui.recording.inprocess import record_call
from mgtui.recording.recorder import Recorder, load_scenario, record
from mgtui.recording.store import EVENT_ROW, NODE_ROW, WRITE_ROW, EventRow, NodeRow, Records, WriteRow
from mgtui.run.runner import Run, RunSpec
from mgtui.recording.sandbox import Isolation, sandboxed
from mgtui.recording.slots_hooks import SlotsHooks
from mgtui.trace import EventKind, Trace
from mgtui.trace.arrays import ArrayValue

ROOT = Path(__file__).resolve().parent.parent.parent
SCENARIOS = [p for p in sorted((ROOT / "scenarios").glob("*.py"))
             + sorted((ROOT / "scenarios" / "bugs").glob("*.py"))
             if p.name not in ("__init__.py", "moons.py")]

VALUE = ROOT / "engine" / "value.py"
INIT_LINE = "    def __init__(self, data, _children=(), _op='', label=''):\n"
DOC_LINE = '    """ stores a single scalar value and its gradient """\n'
# Each variant changes one line of the engine, so every line number stays the same.
VARIANTS = {
    # a `**kwargs` the rewrite does not take on: the class keeps the hooks
    "hooks": (INIT_LINE, INIT_LINE.replace("label=''", "label='', **_more")),
    "slots": (DOC_LINE, '    __slots__ = ("data", "grad", "_backward", "_prev", "_op", '
                        '"label", "__weakref__")\n'),
}
# The same for the numpy `Tensor` (engine/tensor.py), whose arrays every probe records
TENSOR_DOC = '    """ stores an array of numbers and its gradient, of the same shape """\n'
TENSOR_VARIANTS = {"hooks": VARIANTS["hooks"],
                   "slots": (TENSOR_DOC, VARIANTS["slots"][1])}


def variant(tmp_path: Path, name: str, scenario: Path) -> Path:
    """A copy of `scenario` beside a copy of the engine changed as `VARIANTS[name]` says."""
    home = tmp_path / name
    if not home.exists():
        shutil.copytree(ROOT / "engine", home / "engine",
                        ignore=shutil.ignore_patterns("__pycache__"))
        old, new = VARIANTS[name]
        value = home / "engine" / "value.py"
        text = value.read_text()
        assert text.count(old) == 1, "engine/value.py changed: update VARIANTS"
        value.write_text(text.replace(old, new))
        tensor = home / "engine" / "tensor.py"
        old, new = TENSOR_VARIANTS[name]
        text = tensor.read_text()
        assert text.count(old) == 1, "engine/tensor.py changed: update TENSOR_VARIANTS"
        tensor.write_text(text.replace(old, new))
    copy = home / scenario.name
    shutil.copy(scenario, copy)
    return copy


def value(v) -> object:
    """A value as compared: a float, or an array's shape, dtype and elements."""
    return (v.shape, v.dtype, v.whole, list(v.values)) if isinstance(v, ArrayValue) else v


def shape(trace: Trace, names: bool = True) -> dict:
    """What a trace says, without where its files were: every node, every step with its
    writes (arrays too: `mgtui.trace.arrays`), the closures' code, the names, the error
    and the output."""
    t = trace
    nodes = [("" if t.derived_name(n.id) or n.label == f"#{n.id}" else n.label, n.op,
              n.children, value(t.values.created_value(n.id)), value(t.values.created_grad(n.id)), n.line,
              value(t.values.final_value(n.id, False)), value(t.values.final_value(n.id, True)))
             for n in t.nodes()]
    events = [(e.kind, e.node, *map(value, t.values.event_value(e.index, e.before, e.after)),
               e.line, e.closure,
               [(w.node, w.field, *map(value, t.values.write_value(w.index, w.before, w.after)),
                 w.line) for w in e.writes])
              for e in t.events()]
    closures = [(c.name, Path(c.filename).name, c.first_line, c.lines, c.default)
                for c in trace.closures]
    error = None if trace.error is None else (trace.error.type, trace.error.message,
                                              trace.error.line, trace.error.after_event)
    found = {"nodes": nodes, "events": events, "closures": closures, "error": error}
    if names:
        found["names"] = [trace.derived_name(nid) for nid in range(trace.node_count)]
        found["output"] = trace.output
    return found


def same(a, b) -> bool:
    """Equal, with nan equal to nan (a record of a non-finite value)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def in_process(path: Path) -> Trace:
    """The scenario run by the in-code API (`inprocess.record_call`), as a function whose
    code is the scenario file's, so that its lines are the scenario's own."""
    scenario = load_scenario(path)
    namespace = {"__name__": "__main__", "__file__": str(path), "__builtins__": builtins,
                 "_mgtui_code": scenario.code}
    exec(compile("def _mgtui_scenario():\n    exec(_mgtui_code, globals())\n", str(path),
                 "exec"), namespace)
    return record_call(namespace["_mgtui_scenario"])


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_probe_records_every_scenario_the_same(tmp_path, path):
    paths = {"inline": path, "hooks": variant(tmp_path, "hooks", path),
             "slots": variant(tmp_path, "slots", path)}
    runs = {how: Run(RunSpec(str(p))).start() for how, p in paths.items()}  # side by side
    traces = {how: run.wait().trace for how, run in runs.items()}
    expected = shape(traces["inline"])
    assert expected["events"], "it recorded something"
    for how in ("hooks", "slots"):
        assert same(shape(traces[how]), expected), f"{how} (runner) against inline"
    assert same(shape(record(path)), expected), "Recorder.finish, inline"
    assert same(shape(record(path, inline=False)), expected), "Recorder.finish, hooks"
    # The in-code API labels nodes by the caller's variables at the end, and keeps no
    # output: the same records otherwise.
    assert same(shape(in_process(path), names=False), shape(traces["inline"], names=False))


def test_the_variants_are_recorded_by_the_probes_they_are_for(tmp_path, monkeypatch):
    """The hooks variant keeps the dict hooks, the slots variant gets the slots hooks, and
    the engine as it is is rewritten: the comparison above compares three probes."""
    chain = ROOT / "scenarios" / "chain.py"
    took = {}
    for how, path in (("inline", chain), ("hooks", variant(tmp_path, "hooks", chain)),
                      ("slots", variant(tmp_path, "slots", chain))):
        if how != "inline":  # its own copy of the engine, imported afresh
            for name in [m for m in sys.modules if m == "engine" or m.startswith("engine.")]:
                monkeypatch.delitem(sys.modules, name)
        recorder = Recorder(load_scenario(path))
        error, _ = recorder.execute()
        assert error is None
        value = recorder.globals["Value"]
        engine = Path(sys.modules[value.__module__].__file__).parent
        assert engine == (ROOT / "engine" if how == "inline" else path.parent / "engine")
        took[how] = type(recorder.value_classes.attached[value]).__name__
    assert took == {"inline": "Inliner", "hooks": "DictHooks", "slots": "SlotsHooks"}


# -- the probe protocol, one record at a time ---------------------------------------------

PROBE_SCENARIO = "x = 1\n"


def probe_class(tmp_path: Path, how: str) -> type:
    """A Value class, from a source file beside the scenario, for `how`'s probe."""
    source = VALUE.read_text()
    if how == "slots":
        source = source.replace(*VARIANTS["slots"])
    module = tmp_path / f"value_{how}.py"
    module.write_text(source)
    namespace: dict = {"__name__": f"value_{how}"}
    exec(compile(source, str(module), "exec", dont_inherit=True), namespace)
    return namespace["Value"]


@pytest.mark.parametrize("how", ["inline", "hooks", "slots"])
def test_every_probe_writes_through_the_one_store(tmp_path, how):
    """Each probe's three records (`node_made`, `backward_called`, `field_written`) land
    in the store the recorder was given, as named rows, and nowhere else."""
    scenario = tmp_path / "scenario.py"
    scenario.write_text(PROBE_SCENARIO)
    Value = probe_class(tmp_path, how)
    store = Records()
    recorder = Recorder(load_scenario(scenario), records=store, inline=how == "inline")
    assert recorder.records is store
    a, b = Value(2.0), Value(-3.0)
    c = Value(a.data * b.data, (a, b), "*")

    def backward():  # c = a*b: d(a*b)/da = b, d(a*b)/db = a
        frame = sys._getframe()
        probe.field_written(a, "grad", 0.0, -3.0, frame)
        probe.field_written(b, "grad", 0.0, 2.0, frame)

    with sandboxed(recorder, Isolation()):
        recorder.instrument(Value)
        probe = recorder.value_classes.attached[Value]
        assert type(probe) is {"inline": Inliner, "hooks": DictHooks, "slots": SlotsHooks}[how]
        assert probe.records is store
        for node in (a, b, c):
            probe.node_made(node)
        here = sys._getframe()
        probe.field_written(c, "grad", 0.0, 1.0, here)
        probe.field_written(c, "label", "", "c", here)
        probe.backward_called(c, backward, here)
    assert store.node_count() == len(store.nodes) // NODE_ROW == 3
    assert store.nodes[2 * NODE_ROW + NodeRow.OP] == "*"
    assert store.nodes[1 * NODE_ROW + NodeRow.DATA] == -3.0
    assert store.kids == [0, 1]  # c's children, a then b
    kinds = store.events[EventRow.KIND::EVENT_ROW]
    assert kinds == [EventKind.CREATE.code] * 3 + [EventKind.GRAD.code, EventKind.BACKWARD.code]
    assert store.events[3 * EVENT_ROW + EventRow.AFTER] == 1.0
    assert store.events[4 * EVENT_ROW + EventRow.NODE] == 2
    assert store.write_count() == 2
    assert store.writes[WriteRow.NODE::WRITE_ROW] == [0, 1]
    assert store.writes[WriteRow.AFTER::WRITE_ROW] == [-3.0, 2.0]
    assert store.late_labels == {2: "c"}
    trace = recorder.finish(None, "")
    assert trace.label(2) == "c" and trace.node_count == 3
    assert [(w.node, w.after) for w in trace.event(4).writes] == [(0, -3.0), (1, 2.0)]


def test_a_replay_is_taken_back_from_the_store(write_scenario):
    """What a `before_backward` hook records (it replays the closure) is forgotten, and
    the store's replay counter is even again after it."""
    path = write_scenario("replayed", """
    from engine import Value
    a, b = Value(2.0), Value(3.0)
    c = a * b
    c.grad = 1.0
    c._backward()
    """)
    seen = []

    def replay(d, fn):
        seen.append(store.replays)
        fn()  # its writes are taken back
        Value = type(d["_prev"][0]) if isinstance(d, dict) else None
        if Value is not None:
            Value(9.0)  # and so is a node it makes

    store = Records()
    trace = Recorder(load_scenario(path), records=store, before_backward=replay).run()
    assert seen == [1]  # odd while the hook ran
    assert store.replays == 2
    assert trace.node_count == 3
    assert [len(e.writes) for e in trace.events() if e.kind == EventKind.BACKWARD] == [2]
    assert record(path).write_count == trace.write_count


def test_the_store_cuts_the_same_chunks_at_any_mark(write_scenario):
    """Chunks cut at several marks, added one after another, build the trace that one
    chunk of everything builds (what the child's flusher sends, against `finish`)."""
    from mgtui.recording.store import Mark
    from mgtui.trace import TraceBuilder

    path = write_scenario("chunks", """
    from engine import Value
    x = Value(1.0, label='x')
    for _ in range(5):
        x = x * 2.0 + 1.0
    x.label = 'out'
    x.backward()
    """)
    recorder = Recorder(load_scenario(path))
    recorder.execute()
    store = recorder.records
    whole = recorder.finish(None, "")
    end = store.mark()
    builder = TraceBuilder(str(path))
    marks = [Mark(), Mark(3, 4, 0), Mark(10, 17, 2), end]
    n = end.nodes
    for since, upto in zip(marks, marks[1:]):
        for chunk in store.chunks(since, upto):
            builder.add(chunk)
    for nid, label in store.relabelled(end.nodes):
        builder.relabel(nid, label)
    for nid, name in store.names():  # (those `finish` found are in the store too)
        builder.add_name(nid, name)
    for closure in store.closures():
        builder.add_closure(closure)
    parts = builder.build(None, "")
    assert parts.node_count == whole.node_count == n == 21  # x, then 4 nodes a turn
    assert [parts.event(i) for i in range(len(parts))] == [whole.event(i) for i in range(len(whole))]
    assert parts.write_count == whole.write_count > 0
    assert [parts.label(k) for k in range(n)] == [whole.label(k) for k in range(n)]
    assert parts.label(n - 1) == "out" and parts.label(0) == "x"


def test_closure_reads_are_found_from_the_bytecode_as_dis_finds_them():
    """`call_values.reads_of` reads a closure's bytecode itself (on 3.11): the
    instructions it sees, where it looks (closure loads, attribute names), are
    `dis.get_instructions`'s (less `EXTENDED_ARG`s) for every closure of the engines,
    the scenarios and mgtui, and a closure with over 256 names (an `EXTENDED_ARG`
    between `out` and `.grad`, where `out` alone was read before) reads `out.grad` and
    `s`, and not the `x.grad` it only adds to."""
    import dis

    from mgtui.recording import call_values
    from mgtui.recording.inline.rewrite import rewrite_of
    from mgtui.recording.naming import codes_in

    def by_dis(code):
        return [(i.opname, i.argval if i.opname in ("LOAD_DEREF", "LOAD_CLOSURE", "LOAD_ATTR")
                 else None) for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]

    files = [*ROOT.glob("engine/*.py"), *ROOT.glob("scenarios/**/*.py"), *ROOT.glob("mgtui/**/*.py")]
    codes = [c for p in files for c in codes_in(compile(p.read_text(), str(p), "exec"))
             if c.co_freevars]
    assert len(codes) > 100
    assert [c for c in codes if call_values._instructions(c) != by_dis(c)] == []
    # the loads found by a regular expression, each with the instruction after it, as
    # the whole list of instructions has them (the rewritten closures' too)
    rewritten = [c for p in files if (rw := rewrite_of(str(p), p.read_text())) is not None
                 for c in codes_in(rw.code) if c.co_freevars]
    assert len(rewritten) > 100

    def loads(code):
        ins = call_values._instructions(code)
        return [(arg, ins[k + 1] if k + 1 < len(ins) else None)
                for k, (op, arg) in enumerate(ins) if op in ("LOAD_DEREF", "LOAD_CLOSURE")]

    assert [c for c in codes + rewritten if call_values._cell_loads(c) != loads(c)] == []
    assert sum(len(loads(c)) for c in codes) > 300

    many = "; ".join(f"o.a{k}" for k in range(300))
    scope: dict = {}
    exec(f"def op(o, out, x, s):\n    def _backward():\n        {many}\n"
         f"        x.grad += s * out.grad\n    return _backward\n", scope)
    code = scope["op"](None, None, None, None).__code__
    assert any(i.opname == "EXTENDED_ARG" for i in dis.get_instructions(code))
    assert call_values._instructions(code) == by_dis(code)
    assert call_values._cell_loads(code) == loads(code)
    free = code.co_freevars
    assert sorted(call_values.reads_of(code)) == [("out.grad", free.index("out"), "grad"),
                                                  ("s", free.index("s"), "")]


def test_the_module_scan_skips_only_modules_that_cannot_define_a_value_class(tmp_path):
    """`without_values`: mgtui's, numpy's and Python's own modules are not scanned for
    Value classes; a module of the scenario's, even one named like Python's own (a
    `json.py` beside it), and an engine's are."""
    import json
    import types

    import numpy.linalg

    import engine
    from mgtui.recording.probes import without_values

    assert without_values("numpy.linalg", numpy.linalg) and without_values("json", json)
    assert without_values("mgtui.recording.probes", sys.modules["mgtui.recording.probes"])
    assert without_values("sys", sys)  # built in: no file
    own = types.ModuleType("json")
    own.__file__ = str(tmp_path / "json.py")
    assert not without_values("json", own)
    assert not without_values("engine", engine) and not without_values("__main__", own)
    # (remembered by name as that very module: asked again, each gets its own answer)
    assert without_values("json", json) and not without_values("json", own)
