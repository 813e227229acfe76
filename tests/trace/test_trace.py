"""The trace's query API and its builder: what callers may ask, checked by hand-built
traces whose answers are known, and by a JSON round trip of a recorded one."""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mgtui.trace import lanes

from mgtui.trace import validation as trace_validation
from mgtui.trace.export import dumps, from_json
from mgtui.recording.recorder import record
from mgtui.session.timeline import Timeline
from mgtui.trace import Closure, EventKind, Field, TraceBuilder, TraceFormatError

from tests.conftest import SCENARIOS, add_records, stream_of

CREATE, BACKWARD, GRAD, DATA = EventKind


def lecture_chain():
    """e = a*b, d = e + c, L = d*f (the lecture's first expression), backward by hand.

    a=2, b=-3, c=10, f=-2: e=-6, d=4, L=-8; grads L 1, f 4, d -2, e -2, c -2, a 6, b -4.
    """
    b = TraceBuilder("chain.py", "chain")
    a_ = b.add_node("a", "", (), 2.0, 1)
    b_ = b.add_node("b", "", (), -3.0, 2)
    c_ = b.add_node("c", "", (), 10.0, 3)
    e_ = b.add_node("e", "*", (a_, b_), -6.0, 4)
    d_ = b.add_node("d", "+", (e_, c_), 4.0, 5)
    f_ = b.add_node("f", "", (), -2.0, 6)
    L_ = b.add_node("L", "*", (d_, f_), -8.0, 7)
    for nid in range(7):
        b.add_event(CREATE, nid)
    b.add_event(GRAD, L_, 0.0, 1.0, line=8)
    b.add_event(BACKWARD, L_, line=9, closure=0)
    b.add_write(d_, Field.GRAD, 0.0, -2.0, 20)
    b.add_write(f_, Field.GRAD, 0.0, 4.0, 21)
    b.add_event(BACKWARD, d_, line=9, closure=1)
    b.add_write(e_, Field.GRAD, 0.0, -2.0, 30)
    b.add_write(c_, Field.GRAD, 0.0, -2.0, 31)
    b.add_event(BACKWARD, e_, line=9, closure=0)
    b.add_write(a_, Field.GRAD, 0.0, 6.0, 20)
    b.add_write(b_, Field.GRAD, 0.0, -4.0, 21)
    b.add_event(DATA, a_, 2.0, 1.94, line=10)
    return b.build(), dict(a=a_, b=b_, c=c_, e=e_, d=d_, f=f_, L=L_)


def test_passes_and_final_state_of_a_hand_built_trace():
    t, n = lecture_chain()
    assert [(p.kind, p.start, p.end) for p in t.passes] == [
        ("forward", 0, 7), ("backward", 7, 11), ("update", 11, 12)]
    grads = {name: t.replay.final_grad[nid] for name, nid in n.items()}
    assert grads == dict(L=1.0, f=4.0, d=-2.0, e=-2.0, c=-2.0, a=6.0, b=-4.0)
    assert t.replay.final_data[n["a"]] == 1.94 and t.node_data[n["a"]] == 2.0
    assert t.write_count == 6


def test_queries_name_what_callers_used_to_compute():
    t, n = lecture_chain()
    forward, backward, update = t.passes
    assert t.kind(7) is EventKind.GRAD and t.kind(8) == "backward"
    assert t.event_node(8) == n["L"] and t.change(7) == (0.0, 1.0)
    assert t.backward_calls(backward) == [8, 9, 10]
    assert t.first_backward(backward) == 8 and t.first_backward(forward) is None
    assert t.backward_order(backward) == [n["L"], n["d"], n["e"]]
    assert t.backward_root(backward) == n["L"]
    assert t.made_in(forward) == list(range(7))
    assert t.index.created_at(n["e"]) == 3
    writes = t.writes(9)
    assert [(w.node, w.field, w.before, w.after, w.line) for w in writes] == [
        (n["e"], Field.GRAD, 0.0, -2.0, 30), (n["c"], Field.GRAD, 0.0, -2.0, 31)]
    assert [w.node for w in t.writes_in(backward)] == [n[x] for x in "dfecab"]
    assert t.grad_targets(7) == [n["L"]] and t.grad_targets(10) == [n["a"], n["b"]]
    assert t.grad_targets(11) == [] and t.grad_targets(0) == []
    assert t.closure_index(8) == 0 and t.closure_index(7) is None
    assert t.line_of(3) == 4 and t.line_of(8) == 9 and t.event_line(3) is None
    assert t.children(n["L"]) == (n["d"], n["f"]) and t.is_leaf(n["a"])
    assert t.ancestors(n["d"]) == sorted([n["a"], n["b"], n["c"], n["e"], n["d"]])
    assert t.events_of(EventKind.DATA) == [11]
    assert [t.index.uses[n[x]] for x in "abcdefL"] == [1, 1, 1, 1, 1, 1, 0]


def test_apply_and_undo_are_inverse_at_every_step():
    t, _ = lecture_chain()
    data, grad = array("d", t.node_data), array("d", bytes(8 * t.node_count))
    states = [(list(data), list(grad))]
    made = 0
    for i in range(len(t)):
        made += t.replay.apply(i, data, grad)
        states.append((list(data), list(grad)))
    assert made == t.node_count
    assert (list(data), list(grad)) == (list(t.replay.final_data), list(t.replay.final_grad))
    for i in range(len(t) - 1, -1, -1):
        made -= t.replay.undo(i, data, grad)
        assert (list(data), list(grad)) == states[i]
    assert made == 0


def test_a_second_contribution_is_counted():
    """b = a + a: both writes of b's _backward go to a, the second is contribution 2."""
    bld = TraceBuilder("s.py")
    a = bld.add_node("a", "", (), 3.0)
    b = bld.add_node("b", "+", (a, a), 6.0)
    bld.add_event(CREATE, a)
    bld.add_event(CREATE, b)
    bld.add_event(GRAD, b, 0.0, 1.0)
    bld.add_event(BACKWARD, b)
    bld.add_write(a, Field.GRAD, 0.0, 1.0)
    bld.add_write(a, Field.GRAD, 1.0, 2.0)
    t = bld.build()
    assert [t.index.contribution(w) for w in t.writes(3)] == [1, 2]
    assert t.index.uses[a] == 1  # one user, which uses it twice


def test_a_long_run_of_grad_writes_to_one_node_splits_in_linear_time():
    """100,000 `a.grad = 1.0` writes in a row: splitting them into passes used to look
    ahead from every write, which is quadratic and never finished."""
    n = 100_000
    bld = TraceBuilder("s.py")
    a = bld.add_node("a", "", (), 1.0)
    bld.add_event(CREATE, a)
    for k in range(n):
        bld.add_event(GRAD, a, float(k), float(k + 1))
    bld.add_event(BACKWARD, a)
    t = bld.build()
    # every write is followed, through writes to the same node, by a _backward: seeds
    assert [(p.kind, p.start, p.end) for p in t.passes] == [
        ("forward", 0, 1), ("backward", 1, n + 2)]
    assert t.replay.final_grad[a] == float(n)


def test_the_recorder_handles_a_long_run_of_grad_writes(write_scenario):
    path = write_scenario("writes", """
        from engine import Value
        a = Value(1.0)
        for _ in range(100_000):
            a.grad = 1.0
        a.grad = 0.0
    """)
    t = record(path)
    assert t.error is None and len(t) == 100_002
    kinds = [p.kind for p in t.passes]
    assert kinds == ["forward", "other", "zero_grad"]
    assert len(t.passes[1]) == 100_000


def test_a_json_round_trip_answers_every_query_the_same():
    t = record("scenarios/neuron.py")
    back = from_json(json.loads(dumps(t)))
    assert len(back) == len(t) and back.node_count == t.node_count
    assert back.passes == t.passes
    for i in range(len(t)):
        assert back.event(i) == t.event(i)
        assert back.line_of(i) == t.line_of(i)
        assert back.closure_of(i) == t.closure_of(i)
    for nid in range(t.node_count):
        assert back.node(nid) == t.node(nid)
    assert list(back.replay.final_grad) == list(t.replay.final_grad)
    # the lecture's figures, through the round trip
    grads = {back.label(n): back.replay.final_grad[n] for n in range(back.node_count)}
    assert grads["x1"] == pytest.approx(-1.5) and grads["w1"] == pytest.approx(1.0)
    assert grads["x2"] == pytest.approx(0.5) and grads["w2"] == 0.0


def test_a_timeline_over_a_built_trace_walks_both_ways():
    t, n = lecture_chain()
    tl = Timeline(t)
    tl.seek(len(t) - 1)  # before the update
    assert tl.grad[n["a"]] == 6.0 and tl.data[n["a"]] == 2.0
    tl.step()
    assert tl.data[n["a"]] == 1.94 and tl.at_end
    tl.seek(7)
    assert tl.created == 7 and not any(tl.grad)


def test_a_trace_checked_and_built_as_it_grows_matches_a_replay_of_each_prefix():
    t = record("scenarios/mlp.py")
    for size in (1, 37, 1000):
        b = TraceBuilder(t.scenario)
        for c in t.closures:
            b.add_closure(c)
        for what, lo, hi in stream_of(t, size):
            add_records(b, t, what, lo, hi)
            if what != "nodes" and b.consistent and (size > 1 or lo % 97 == 0):
                b.validate()
                grown = b.build()
                replay = Timeline(grown)
                while replay.step():  # one event at a time, never the final state
                    pass
                assert list(grown.replay.final_grad) == list(replay.grad)
                assert list(grown.replay.final_data) == list(replay.data)
        b.validate()
        whole = b.build()
        assert list(whole.replay.final_grad) == list(t.replay.final_grad)
        assert whole.passes == t.passes and len(whole) == len(t)


def test_a_bad_record_in_a_later_chunk_is_named_by_its_index_in_the_whole_trace():
    t = record("scenarios/neuron.py")
    b = TraceBuilder(t.scenario)
    for c in t.closures:
        b.add_closure(c)
    steps = list(stream_of(t, 5))
    for what, lo, hi in steps[:4]:
        add_records(b, t, what, lo, hi)
    b.validate()
    checked = b.event_count
    made = b.add_node("made", "", (), 1.0)
    b.add_event(EventKind.CREATE, made)
    later = b.add_node("later", "", (), 2.0)  # its creation has not come yet
    b.add_event(EventKind.BACKWARD, later)
    with pytest.raises(TraceFormatError, match=rf"events\[{checked + 1}\]\.node"):
        b.validate()
    b = TraceBuilder(t.scenario)
    for c in t.closures:
        b.add_closure(c)
    for what, lo, hi in steps[:4]:
        add_records(b, t, what, lo, hi)
    b.validate()
    b.add_event(EventKind.BACKWARD, b.node_count + 3)  # and no such node at all
    with pytest.raises(TraceFormatError, match=rf"events\[{checked}\]\.node: "
                       rf"{b.node_count + 3} is not a node"):
        b.validate()


def test_indexes_extended_from_an_earlier_prefix_equal_indexes_built_afresh():
    t = record("scenarios/mlp.py")
    older = None
    from tests.conftest import prefixes_of

    for prefix in prefixes_of(t, 700):
        prefix.index.build_indexes(older=None if older is None else older.index)
        again = from_json(json.loads(dumps(prefix)))
        assert list(prefix.index.uses) == list(again.index.uses)
        assert [prefix.index.created_at(n) for n in range(prefix.node_count)] == \
            [again.index.created_at(n) for n in range(again.node_count)]
        for i in range(len(prefix)):
            for w in prefix.writes(i):
                assert prefix.index.contribution(w) == again.index.contribution(w)
        older = prefix


def test_state_at_is_the_timeline_at_that_step():
    """`Trace.replay.state_at(k)`, replayed in bulk, is what stepping a Timeline to k gives."""
    from mgtui.recording.recorder import record
    from mgtui.session.timeline import Timeline

    root = Path(__file__).resolve().parent.parent.parent / "scenarios"
    for name in ("mlp.py", "bugs/foreign_write.py", "bugs/late_pass.py"):
        trace = record(root / name)
        for k in sorted({0, 1, len(trace) // 3, len(trace) // 2, len(trace) - 1, len(trace)}):
            data, grad = trace.replay.state_at(k)
            at = Timeline(trace, k)
            assert list(data) == list(at.data) and list(grad) == list(at.grad), (name, k)


def test_replay_of_a_span_is_applying_its_events():
    from array import array

    from mgtui.recording.recorder import record

    root = Path(__file__).resolve().parent.parent.parent / "scenarios"
    for name in ("mlp.py", "bugs/no_zero_grad.py"):
        trace = record(root / name)
        for p in trace.passes:
            data, grad = trace.replay.state_at(p.start)
            want_data, want_grad = array("d", data), array("d", grad)
            for i in p.steps:
                trace.replay.apply(i, want_data, want_grad)
            trace.replay.between(p.start, p.end, data, grad)
            assert data == want_data and grad == want_grad, (name, p)


def test_the_queries_views_use_answer_as_a_plain_scan_would():
    """events_of, made_ids, inputs_before and backward_order (issue 12: C-speed scans)
    against the same questions asked one event at a time."""
    t = record("scenarios/mlp.py")
    for kind in EventKind:
        for start, stop in ((0, len(t)), (5, 300), (len(t) // 3, len(t) // 2)):
            expected = [i for i in range(start, stop) if t.kind(i) is kind]
            assert t.events_of(kind, start, stop) == expected
    for p in t.passes:
        made = [t.event_node(i) for i in p.steps if t.kind(i) is EventKind.CREATE]
        assert list(t.made_ids(p)) == made
        inside = set(made)
        used = sorted({c for n in made for c in t.children(n) if c not in inside and c >= 0})
        assert t.inputs_before(p) == used
        calls = [t.event_node(i) for i in p.steps if t.kind(i) is EventKind.BACKWARD]
        assert t.backward_order(p) == calls
    assert any(t.inputs_before(p) for p in t.passes if p.kind == "forward")


def long_runs(used: int) -> TraceBuilder:
    """100 nodes made, 100 grad writes (one of them to node `used`), 100 more nodes:
    runs long enough that events are checked a run at a time."""
    b = TraceBuilder("t.py")
    for k in range(200):
        b.add_node("", "", (k - 1,) if k else (), 1.0)
    for k in range(100):
        b.add_event(EventKind.CREATE, k)
    for k in range(100):
        b.add_event(EventKind.GRAD, used if k == 37 else k, 0.0, 1.0)
    for k in range(100, 200):
        b.add_event(EventKind.CREATE, k)
    return b


def test_a_node_used_before_it_is_made_is_refused_in_a_long_run():
    long_runs(used=99).validate()  # the last node made before the run: fine
    with pytest.raises(TraceFormatError, match=r"events\[137\]\.node: node 100 is used before"):
        long_runs(used=100).validate()
    with pytest.raises(TraceFormatError, match=r"events\[137\]\.node: 200 is not a node"):
        long_runs(used=200).validate()


def test_lone_writes_keep_their_values_and_others_have_none():
    b = long_runs(used=5)
    b.add_events(array("b", [EventKind.GRAD.code, EventKind.CREATE.code]), array("i", [3, 200]),
                 array("d", [2.0, 9.0]), array("d", [4.0, 9.0]), array("i", [0, 0]),
                 array("i", [-1, -1]), array("i", [0, 0]))  # a value for each event, as v1
    b.add_node("", "", (), 1.0)
    trace = b.build()
    assert trace.change(137) == (0.0, 1.0) and trace.event(137).node == 5
    assert trace.change(300) == (2.0, 4.0) and trace.change(301) == (0.0, 0.0)
    assert trace.change(0) == (0.0, 0.0) and trace.event(0).after == 0.0
    assert trace.replay.final_grad[3] == 4.0 and trace.replay.final_grad[5] == 1.0


@pytest.mark.parametrize("every", [1, 3, 50])
def test_texts_answer_as_the_list_they_were_made_from(every):
    from mgtui.trace import Texts

    values = [f"n{k}" if k % every == 0 else "" for k in range(300)]
    texts = Texts(values)
    assert (texts._some is None) == (every < 4)  # kept by id only when few are set
    assert len(texts) == 300 and list(texts) == values
    assert [texts.get(k) or "" for k in range(300)] == values
    assert texts.slice(10, 60) == tuple(values[10:60]) == tuple(texts[10:60])
    assert texts[-1] == values[-1]
    with pytest.raises(IndexError):
        texts[300]  # noqa: B018
    made = Texts.of({k: v for k, v in enumerate(values) if v}, 300)
    assert made == texts and made.slice(0, 300) == tuple(values)


# -- the column-at-a-time checks name the same first bad field as a plain scan ------------

def first_bad_field(b: TraceBuilder) -> str | None:
    """The field validate() must name first, found by a plain scan in the order it checks:
    children, then events' kinds, nodes (used once made, within the node count; then
    creations in order), closures, the writes' order and their nodes."""
    n, kinds, nodes = b.node_count, list(b.ev_kind), list(b.ev_node)
    for o in range(n):
        for k, c in enumerate(b.child_ids[b.child_start[o] : b.child_start[o + 1]]):
            if not -1 <= c < o:
                return f"nodes[{o}].children[{k}]"
    for i, kind in enumerate(kinds):
        if not 0 <= kind <= 3:
            return f"events[{i}].kind"
    made = 0
    for i, (kind, nid) in enumerate(zip(kinds, nodes)):
        made += kind == EventKind.CREATE.code
        if not 0 <= nid < min(made, n):
            return f"events[{i}].node"
    made = 0
    for i, (kind, nid) in enumerate(zip(kinds, nodes)):
        if kind == EventKind.CREATE.code:
            if nid != made:
                return f"events[{i}].node"
            made += 1
    for i, c in enumerate(b.ev_closure):
        if not -1 <= c < len(b.closures):
            return f"events[{i}].closure"
    starts = list(b.ev_write_start) + [len(b.wr_node)]
    if starts[0] != 0 or any(x > y for x, y in zip(starts, starts[1:])):
        return "events.writes"
    for j, nid in enumerate(b.wr_node):
        if not 0 <= nid < n:
            return f"writes[{j}].node"
    return None


EDGY_INT = st.one_of(st.integers(-3, 40), st.sampled_from([-(2**31), 2**31 - 1, 2**28, 255, 256]))


@st.composite
def built_and_broken(draw):
    """A random trace, well formed, then one number in it changed (or none)."""
    b = TraceBuilder("t.py")
    for k in range(2):
        b.add_closure(Closure(f"c{k}", "t.py", 1, ("pass",)))
    n = draw(st.integers(1, 40))
    many = draw(st.booleans())  # a node with more children than the laid-out check takes
    for o in range(n):
        count = draw(st.integers(0, 7 if many else 2))
        b.add_node("", "+", [draw(st.integers(-1, o - 1)) if o else -1 for _ in range(count)], 0.0)
    made = 0
    for _ in range(draw(st.integers(0, 80))):
        if made < n and draw(st.booleans()):
            b.add_event(EventKind.CREATE, made)
            made += 1
        elif made:
            kind = draw(st.sampled_from([EventKind.BACKWARD, EventKind.GRAD, EventKind.DATA]))
            b.add_event(kind, draw(st.integers(0, made - 1)), 0.0, 1.0,
                        closure=draw(st.integers(-1, 1)))
            for _ in range(draw(st.integers(0, 3)) if kind is EventKind.BACKWARD else 0):
                b.add_write(draw(st.integers(0, n - 1)), Field.GRAD, 0.0, 1.0)
    columns = {"child": b.child_ids, "node": b.ev_node, "closure": b.ev_closure,
               "kind": b.ev_kind, "write": b.wr_node, "start": b.ev_write_start}
    which = draw(st.sampled_from(sorted(columns) + ["none"]))
    column = columns.get(which)
    if column:
        at = draw(st.integers(0, len(column) - 1))
        value = draw(st.integers(-128, 127) if which == "kind" else EDGY_INT)
        if which == "closure" and not -128 <= value < 128:  # (a byte a closure while they fit)
            b.ev_closure = column = array("i", column)
        column[at] = value
    return b


@pytest.mark.parametrize("small", [False, True], ids=["as-loaded", "small-blocks-and-runs"])
@settings(max_examples=400, deadline=None)
@given(b=built_and_broken())
def test_validate_names_the_first_bad_field_a_plain_scan_finds(small, b):
    """The checks at C speed (mgtui.trace.lanes, a run of events at a time) accept exactly the
    traces a plain scan accepts, and name the same first bad field."""
    with pytest.MonkeyPatch.context() as mp:
        if small:  # block edges and runs of every length, even in a small trace
            mp.setattr(lanes, "_BLOCK", 3)
            mp.setattr(trace_validation, "RUN_LENGTH", 1)
        expected = first_bad_field(b)
        if expected is None:
            b.validate()
        else:
            with pytest.raises(TraceFormatError) as caught:
                b.validate()
            assert caught.value.where == expected


def test_an_event_cannot_make_a_node_that_is_not_there():
    b = TraceBuilder("t.py")
    b.add_node("a", "", (), 1.0)
    b.add_event(EventKind.CREATE, 0)
    b.add_event(EventKind.CREATE, 1)  # the next id, but there is no node 1
    with pytest.raises(TraceFormatError, match=r"events\[1\]\.node: 1 is not a node \(there are 1\)"):
        b.validate()


def test_the_indexes_at_c_speed_agree_with_a_count_by_hand(tmp_path):
    """`uses`, `uses_within`, `contribution` and `created_at`, found in the packed
    columns at C speed (issue 24), against the same counted node by node: a graph that
    gives a child twice (`a*a`) and uses a node in several passes."""
    path = tmp_path / "twice.py"
    path.write_text("from engine import Value\n"
                    "w = Value(3.0, label='w')\n"
                    "for _ in range(3):\n"
                    "    a = Value(2.0, label='a')\n"
                    "    sq = a * a\n"
                    "    out = sq * w + a * w\n"
                    "    out.backward()\n")
    t = record(path, inline=False)
    n = t.node_count
    for nid in range(n):
        users = [u for u in range(n) if nid in t.children(u)]
        assert t.index.uses[nid] == len(users)
        for p in t.passes:
            made = t.made_ids(p)
            assert t.index.uses_within(nid, made) == sum(1 for u in users if u in made)
        assert t.index.created_at(nid) == next(i for i in range(len(t))
                                         if t.event(i).kind is CREATE and t.event_node(i) == nid)
    nths = []
    for p in t.passes:
        if p.kind != "backward":
            continue
        seen: dict = {}
        for i in range(p.start, p.end):
            for w in t.writes(i):
                seen[w.node, w.field] = seen.get((w.node, w.field), 0) + 1
                assert t.index.contribution(w) == seen[w.node, w.field]
                nths.append(seen[w.node, w.field])
    assert max(nths) >= 2  # (a*a: a's grad is written twice in one pass)
    assert max(t.index.uses) >= 3  # (w, in every pass)


def test_a_big_traces_final_data_is_its_data_writes_over_node_data(monkeypatch):
    """Where few nodes' data was written (a training loop's parameters), the final data
    is a layer of those writes over `node_data`, not a copy; it reads the same numbers
    as the state replayed in full."""
    from mgtui.trace import replay
    from mgtui.trace.replay import Layer

    monkeypatch.setattr(replay, "SPARSE_FINAL", 1)
    trace = record(SCENARIOS / "mlp.py")
    data, grad = trace.replay.final_data, trace.replay.final_grad
    full_data, full_grad = trace.replay.state_at(len(trace))
    assert isinstance(data, Layer) and data.base is trace.node_data
    assert 0 < len(data.changes) <= trace.node_count >> 3
    assert data.array() == full_data and grad == full_grad
    assert [data[n] for n in range(trace.node_count)] == list(full_data)


def test_the_event_that_made_each_node_is_kept_as_runs_of_creations():
    """In a training loop each forward pass makes its nodes in order: the index is
    where each run of creations starts, and answers as a scan of the events does."""
    from mgtui.trace.index import Creations

    trace = record(SCENARIOS / "mlp.py")
    assert isinstance(trace.index.creations, Creations)
    assert len(trace.index.creations._events) < trace.node_count // 16
    made = {trace.event_node(i): i for i in range(len(trace)) if trace.kind(i) == "create"}
    assert [trace.index.created_at(n) for n in range(trace.node_count)] == [
        made[n] for n in range(trace.node_count)]
    with pytest.raises(IndexError):
        trace.index.creations[trace.node_count]


def test_node_names_are_coded_a_byte_a_node_and_read_back_the_same():
    """A training loop's nodes go by a few names: each node holds its name's number."""
    from mgtui.trace.model import CodedTexts

    trace = record(SCENARIOS / "mlp.py")
    names = trace._name
    assert isinstance(names, CodedTexts) and names._codes.itemsize <= 2
    assert len(names._strings) < trace.node_count
    back = from_json(json.loads(dumps(trace)))
    assert [trace.label(n) for n in range(trace.node_count)] == [
        back.label(n) for n in range(trace.node_count)]
    assert names.slice(0, 50) == tuple(names[n] for n in range(50)) == names[0:50]
