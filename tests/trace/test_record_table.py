"""The record table: every tag, fed through the runner's live stream and through the
file reader, builds the same trace (and says the same about the run). A tag added to
the table without an example here fails `test_each_tag_reads_the_same_live_and_from_a_file`."""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from typing import Callable

import pytest

from mgtui.trace import table
from mgtui.trace import binary as tracefile
from mgtui.trace.decoder import RecordDecoder
from mgtui.recording.recorder import record
from mgtui.run.runner import LiveTrace
from mgtui.trace import EventKind, NodeChunk, Trace, TraceError, TraceFormatError, chunks_of

from tests.conftest import SCENARIOS

NEURON = record(SCENARIOS / "neuron.py")
FIRST_BACKWARD = NEURON.events_of(EventKind.BACKWARD)[0]
TENSOR = record(SCENARIOS / "tensor_neuron.py")  # (numpy arrays: A records)


def final_grad(t: Trace, nid: int) -> list[float]:
    """Node `nid`'s grad at the end, as a flat list (its array's elements)."""
    return list(t.values.value_at(nid, True, len(t), t.replay.final_grad[nid]).values)


def head() -> bytes:
    return table.encode_header(NEURON.scenario, "a neuron", "its notes", NEURON.source)


def body(unlabelled: tuple[int, ...] = ()) -> list[bytes]:
    """The closures and chunks of the neuron's trace, small chunks (several of each);
    the nodes `unlabelled` without their labels."""
    chunks = list(chunks_of(NEURON, size=7))
    first = chunks[0]
    assert isinstance(first, NodeChunk) and max(unlabelled, default=0) < len(first.labels)
    chunks[0] = replace(first, labels=tuple("" if n in unlabelled else label
                                            for n, label in enumerate(first.labels)))
    return ([table.encode_closure(c) for c in NEURON.closures]
            + [table.encode_chunk(c, 0) for c in chunks])


def made(t: Trace, n: int) -> tuple:
    """A node as it was made (not its final values)."""
    return t.label(n), t.op(n), t.children(n), t.node_data[n], t.line(n)


def end(error: TraceError | None = None, output: str = "") -> bytes:
    return table.encode_end(error, output, None)  # as the child sends it: no passes


@dataclass(frozen=True)
class Example:
    """A stream with the tag in it, and what reading it must show."""

    records: list[bytes]
    shows: Callable[[RecordDecoder, Trace | None], bool]


EXAMPLES: dict[str, Example] = {
    table.HEADER: Example(
        [head(), end()],
        lambda d, t: t.title == "a neuron" and t.notes == "its notes" and len(t) == 0),
    table.CLOSURE: Example(
        [head(), *map(table.encode_closure, NEURON.closures), end()],
        lambda d, t: t.closures == NEURON.closures and len(t.closures) > 0),
    table.NODES: Example(
        [head(), *(table.encode_chunk(c) for c in chunks_of(NEURON, size=3)
                   if isinstance(c, NodeChunk)), end()],
        lambda d, t: t.node_count == NEURON.node_count and len(t) == 0
        and [made(t, n) for n in range(t.node_count)]
        == [made(NEURON, n) for n in range(NEURON.node_count)]),
    table.EVENTS: Example(
        [head(), *body(), end()],
        lambda d, t: len(t) == len(NEURON)
        and [t.event(i) for i in range(len(t))] == [NEURON.event(i) for i in range(len(t))]),
    table.WRITES: Example(
        [head(), *body(), end()],
        lambda d, t: t.write_count == NEURON.write_count > 0),
    table.NAMES: Example(
        [head(), *body(unlabelled=(0, 2)), table.encode_names([[0, "w0"], [2, "b"]]), end()],
        lambda d, t: (t.label(0), t.derived_name(0), t.derived_name(2), t.derived_name(1))
        == ("w0", "w0", "b", "")),
    table.VALUES: Example(
        [head(), table.encode_values([(FIRST_BACKWARD, (("k", 2.5), ("t", float("nan"))))]),
         *body(), end()],
        lambda d, t: t.values_at(FIRST_BACKWARD)[0] == ("k", 2.5)
        and t.values_at(FIRST_BACKWARD)[1][1] != t.values_at(FIRST_BACKWARD)[1][1]),
    table.ARRAYS: Example(
        [table.encode_header(TENSOR.scenario, "tensors", "", TENSOR.source),
         *map(table.encode_closure, TENSOR.closures), *(table.encode_chunk(c, 0) for c in chunks_of(TENSOR, size=4)), end()],
        # x.grad and w.grad: the lecture neuron's x1, x2 and w1, w2 grads
        lambda d, t: t.arrays.nodes[0].shape == (1, 2)
        and final_grad(t, 0) == pytest.approx([-1.5, 0.5], abs=1e-12)
        and final_grad(t, 1) == pytest.approx([1.0, 0.0], abs=1e-12)),
    table.END: Example(
        [head(), *body(), end(TraceError("RuntimeError", "boom", 3, 5), "printed\n")],
        lambda d, t: t.error == TraceError("RuntimeError", "boom", 3, 5)
        and t.output == "printed\n"),
    table.LABELS: Example(
        [head(), *body(), table.encode_labels([[1, "renamed"]]), end()],
        lambda d, t: t.label(1) == "renamed"),
    table.NOT_RUN: Example(
        [table.encode_head(), table.encode_not_run("x.py: SyntaxError", "line 1")],
        lambda d, t: t is None
        and d.not_run == {"message": "x.py: SyntaxError", "detail": "line 1"}),
    table.JOB_RESULT: Example(
        [head(), *body(), table.encode_job_result({"findings": [1, 2]}), end()],
        lambda d, t: d.job_result == {"findings": [1, 2]} and len(t) == len(NEURON)),
    table.EXIT: Example(
        [head(), *body(), table.encode_exit(3)],
        lambda d, t: d.exit_code == 3 and t is None),  # no end record: the run ended there
}


def through_the_runner(data: bytes) -> tuple[RecordDecoder, Trace | None]:
    """What `Run` does with its child's stream: fed as it arrives (here in uneven
    pieces, records cut in two), then finished as a run that ran to its end."""
    live = LiveTrace()
    for k in range(0, len(data), 37):
        live.feed(data[k : k + 37])
    live.add_pending()
    assert live.error is None
    d = live.decoder
    if d.builder is None or d.end is None:
        return d, None
    return d, live.finish(d.error(), d.output())


def through_a_file(data: bytes) -> tuple[RecordDecoder, Trace | None]:
    d = tracefile.decode(io.BytesIO(data))
    return d, (d.trace() if d.builder is not None and d.end is not None else None)


def same(a: Trace, b: Trace) -> None:
    assert (a.scenario, a.title, a.notes, a.source, a.output, a.error) == (
        b.scenario, b.title, b.notes, b.source, b.output, b.error)
    assert a.closures == b.closures and a.passes == b.passes
    # (by repr: an array's stand-in in a scalar column is nan, which equals nothing)
    assert repr([a.event(i) for i in range(len(a))]) == repr([b.event(i) for i in range(len(b))])
    assert repr([a.node(n) for n in range(a.node_count)]) == repr(
        [b.node(n) for n in range(b.node_count)])
    assert [a.label(n) for n in range(a.node_count)] == [b.label(n) for n in range(b.node_count)]
    assert [a.derived_name(n) for n in range(a.node_count)] == [
        b.derived_name(n) for n in range(b.node_count)]
    assert repr(list(a.values_recorded())) == repr(list(b.values_recorded()))  # (nan)
    assert [(p, i, s, v.shape, v.dtype, v.values) for p, i, s, v in a.arrays.entries()] == [
        (p, i, s, v.shape, v.dtype, v.values) for p, i, s, v in b.arrays.entries()]


@pytest.mark.parametrize("tag", table.TAGS)
def test_each_tag_reads_the_same_live_and_from_a_file(tag):
    example = EXAMPLES[tag]  # a tag without an example fails here
    data = b"".join(example.records)
    assert any(r[table.HEAD_SIZE if r.startswith(table.MAGIC) else 0 :][:1] == tag.encode()
               for r in example.records)
    live_decoder, live = through_the_runner(data)
    file_decoder, saved = through_a_file(data)
    assert example.shows(live_decoder, live)
    assert example.shows(file_decoder, saved)
    assert (live is None) == (saved is None)
    if live is not None:
        same(live, saved)
    for d in (live_decoder, file_decoder):
        assert (d.not_run, d.job_result, d.exit_code) == (
            live_decoder.not_run, live_decoder.job_result, live_decoder.exit_code)


def test_the_table_names_each_tag_once():
    assert len(set(table.TAGS)) == len(table.TAGS) == 13
    assert all(len(tag) == 1 for tag in table.TAGS)
    assert set(table.RUN_TAGS) <= set(table.STREAM_TAGS)
    assert set(EXAMPLES) == set(table.TAGS)


def test_a_file_holds_only_the_tags_a_file_has():
    """The live stream's own tags (L, X, R, Q) are never written to a file; a saved
    trace is written again from the trace, its labels in its N records."""
    tags = [tag for tag, _ in tracefile.records(io.BytesIO(tracefile.dumpb(NEURON)))]
    assert set(tags) <= set(table.FILE_TAGS)
    assert tags[0] == table.HEADER and tags[-1] == table.END
    assert {table.NODES, table.EVENTS, table.WRITES, table.CLOSURE} <= set(tags)


BAD = {
    "labels not a list": (table.encode_json(table.LABELS, {"0": "a"}), "labels: must be a list"),
    "a label for no node": (table.encode_labels([[10**6, "x"]]), "no node 1000000"),
    "names for no node": (table.encode_names([[-1, "x"]]), "no node -1"),
    "an end that is not an object": (table.encode_json(table.END, [1]), "end: must be an object"),
    "an unknown tag": (table.encode_json(b"?", {}), "unknown tag '?'"),
    "a second header": (table.encode_header("a", "", "", "")[table.HEAD_SIZE:],
                        "a second header"),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_record_is_refused_the_same_way_live_and_from_a_file(case):
    bad, message = BAD[case]
    data = head() + b"".join(body()) + bad + end()
    with pytest.raises(TraceFormatError, match=message):
        through_a_file(data)
    live = LiveTrace()
    live.feed(data)
    live.add_pending()
    assert live.error is not None and message in live.error


def test_a_record_before_the_header_is_refused_live_and_from_a_file():
    data = table.encode_head() + table.encode_labels([[0, "a"]])
    with pytest.raises(TraceFormatError, match="comes before the header"):
        through_a_file(data)
    live = LiveTrace()
    live.feed(data)
    live.add_pending()
    assert "comes before the header" in live.error
