"""The record store packs its rows as they are made (issue 24): every probe (the
inlined recording, the dict hooks, the slots hooks, the in-process API) records a run
long enough to be packed several times, and its trace is the one recorded with packing
off, and the chain's numbers are the lecture's chain rule; the runner's child holds
only what it has not sent; and the line memo holds no frame that has returned."""

from __future__ import annotations

import gc
import math
from array import array

import pytest

from mgtui.recording import store as store_module
from mgtui.recording.recorder import Recorder, load_scenario, record
from mgtui.run.child import Flusher
from mgtui.run.runner import Run, RunSpec
from mgtui.trace import binary

from tests.recording.test_probes import in_process, same, shape, variant

STEPS = 9_000  # 4 nodes a step (the constants too): 36,000 nodes, past two packs
CHAIN = f'''
from engine import Value

x0 = Value(1.0, label="x0")
x = x0
for _ in range({STEPS}):
    x = x * 1.0001 + 0.0
x.backward()
'''


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    path = tmp_path_factory.mktemp("packed") / "chain.py"
    path.write_text(CHAIN)
    return path


@pytest.fixture(scope="module")
def unpacked(chain):
    """The chain recorded with packing off: every row fresh until the end."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(store_module, "PACK_EVERY", 1 << 40)
        recorder = Recorder(load_scenario(chain))
        trace = recorder.run()
        assert not recorder.records.shelf and recorder.records.packed.nodes == 0
    return trace


def test_the_chain_rule_holds_in_the_unpacked_reference(unpacked):
    """x = x*1.0001 + 0.0, STEPS times: the last data is 1.0001**STEPS, and x0's grad
    is the product of the local derivatives, 1.0001 each step (the lecture's chain
    rule: d(a*b)/da = b, d(a+b)/da = 1)."""
    t = unpacked
    assert t.node_count == 1 + 4 * STEPS
    assert math.isclose(t.node_data[t.node_count - 1], 1.0001 ** STEPS, rel_tol=1e-9)
    assert math.isclose(t.replay.final_grad[0], 1.0001 ** STEPS, rel_tol=1e-9)


def test_in_process_recordings_pack_and_record_the_same(chain, unpacked):
    """The inlined recording and the dict hooks, in this process: the rows were packed
    (the shelf holds them, the lists only the last ones), and the trace is the same."""
    expected = shape(unpacked)
    for inline in (True, False):
        recorder = Recorder(load_scenario(chain), inline=inline)
        trace = recorder.run()
        records = recorder.records
        assert len(records.shelf) >= 2 and records.packed.nodes >= 2 * 16_384
        assert len(records.nodes) < 16_384 * len(store_module.NodeRow)  # only fresh ones
        assert sum(map(len, records.ends)) == records.packed.nodes  # (4 bytes a node)
        # whether a node is a leaf, read from the packed ends (across packs) and the
        # fresh rows, as the trace says it
        leaves = [records.is_leaf(n.id) for n in trace.nodes()]
        assert leaves == [not trace.children(n.id) for n in trace.nodes()]
        assert True in leaves[16_384:] and False in leaves[16_384:]
        assert same(shape(trace), expected), f"inline={inline}"
    # the in-code API (the hooks, on the caller's own classes) labels nodes by the
    # caller's variables: the same records otherwise
    assert same(shape(in_process(chain), names=False), shape(unpacked, names=False))


def test_every_probe_in_the_runners_child_records_the_same(tmp_path, chain, unpacked):
    """The inlined recording, the dict hooks and the slots hooks, each in a runner's
    child that packs, sends and lets go: the parent's trace is the unpacked one."""
    expected = shape(unpacked)
    paths = {"inline": chain, "hooks": variant(tmp_path, "hooks", chain),
             "slots": variant(tmp_path, "slots", chain)}
    runs = {how: Run(RunSpec(str(p))).start() for how, p in paths.items()}  # side by side
    for how, run in runs.items():
        assert same(shape(run.wait().trace), expected), how


class Sent:
    """A stream that keeps what is sent (the child's pipe, here)."""

    def __init__(self) -> None:
        self.data: list[bytes] = []

    def send(self, data: bytes) -> None:
        self.data.append(data)


def test_the_child_holds_only_what_it_has_not_sent(chain, unpacked):
    """As the child does: a flush now and then sends the new records and the store lets
    them go. Each time a pack is due, what the store still holds (packed or fresh) is at
    most about one pack's worth, whatever the run's length; and what was sent builds the
    whole trace."""
    held = []
    sent = Sent()
    flusher = None

    def progress(nodes: int) -> None:  # (the probes call it as each pack falls due)
        records = flusher.records
        shelf = sum(len(c.ops) for _, chunks in records.shelf for c in chunks
                    if hasattr(c, "ops"))
        held.append(shelf + len(records.nodes) // len(store_module.NodeRow))
        flusher.flush()

    recorder = Recorder(load_scenario(chain), on_progress=progress)
    flusher = Flusher(recorder.records, sent)
    error, output = recorder.execute()
    assert error is None
    recorder.resolve_names()
    flusher.flush()
    assert not recorder.records.shelf  # all sent, all let go
    assert len(held) >= 3 and max(held) <= 2 * 16_384
    head = binary.encode_header(str(chain), "", "", "")
    trace = binary.loadb(head + b"".join(sent.data) + binary.encode_end(None, "", None))
    assert same(shape(trace, names=False), shape(unpacked, names=False))


def test_the_line_memo_keeps_no_graph_alive(write_scenario):
    """A training loop's `backward()` frames (each holding its graph's `topo`) are let
    go as the loop goes on: the line memo (`LineFinder.memo`) and the namer's frames
    (`direct`) hold only those of the stack the last walk found, so once the loop is
    over, no more than the last step's graph or two is alive (the memo used to keep up
    to 256 frames, and with them every graph of the last 256 steps)."""
    path = write_scenario("loop", """
    from engine import Value

    for step in range(60):
        w = Value(1.0)
        loss = w * 2.0 + 1.0
        loss.backward()
    """)
    for inline in (True, False):
        recorder = Recorder(load_scenario(path), inline=inline)
        error, _ = recorder.execute()
        assert error is None
        Value = recorder.globals["Value"]
        gc.collect()
        alive = sum(1 for o in gc.get_objects() if type(o) is Value)
        assert alive <= 2 * 5, (inline, alive)  # 5 nodes a step: the last ones at most
        assert len(recorder.context.lines.memo) <= 4 and len(recorder.context.lines.direct) <= 1


@pytest.mark.parametrize("values", [
    [], [0, 1, -1, 2**31 - 1, -2**31], [True, False, 7], list(range(5000)),
])
def test_int_columns_are_the_arrays_array_makes(values):
    assert store_module.int32s(values) == array("i", values)
    assert store_module.ints(values) == array("i", values)


def test_a_column_keeps_what_array_says_of_values_that_are_not_int32():
    with pytest.raises(OverflowError):
        store_module.int32s([1, 2**31])
    with pytest.raises(TypeError):
        store_module.int32s([1, 2.5])
    assert store_module.ints([4, None, 2.5, 6]) == array("i", [4, 0, 0, 6])
    assert store_module.packed("i", [1, "2"]) is None


def test_float_columns_are_the_arrays_array_makes():
    values = [0.0, -1.5, 1e308, math.inf, 3, True, 2**60]
    assert store_module.floats(values) == array("d", values)
    nan_at = store_module.floats([1.0, None, "x", 10**400, 2.0])
    assert nan_at[0] == 1.0 and nan_at[4] == 2.0
    assert all(map(math.isnan, nan_at[1:4]))
    same_nan = store_module.floats([math.nan])
    assert math.isnan(same_nan[0])
