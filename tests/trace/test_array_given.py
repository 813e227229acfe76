"""A recording's array chunk taken into an `ArrayTable` in whole (its keys and values
kept as given, found by bisection when read), not a dict entry a value: what a reader
sees is what the entry-by-entry table gave (issue 32)."""

from __future__ import annotations

from mgtui.trace.arrays import EVENT, GRAD, NODE, WRITE, ArrayChunk, ArrayTable, ArrayValue


E = ([], [])  # a place with no values


def value(x: float) -> ArrayValue:
    return ArrayValue((2,), "float64", __import__("array").array("d", [x, x]))


def recorded_chunk(values: dict) -> ArrayChunk:
    """A chunk as `ArraySnapshots.chunk` gives it: by place, keys in order (a node's
    place: its id times two), values beside them."""
    node = [values["n0"], values["n3"]]
    grad = [values["g0"]]
    event = [values["e1b"], values["e1a"]]
    write = [values["w0a"], values["w4b"], values["w4a"]]
    return ArrayChunk(columns=(([0, 6], node), ([0], grad), ([2, 3], event),
                               ([1, 8, 9], write)))


def entry_by_entry(chunk: ArrayChunk) -> ArrayTable:
    """The same chunk given as entries, one at a time (the way a file's chunk is)."""
    table = ArrayTable()
    table.add(ArrayChunk(chunk.entries))
    return table


def test_a_recording_chunk_reads_as_its_entries_do():
    values = {name: value(k) for k, name in enumerate(
        ["n0", "n3", "g0", "e1b", "e1a", "w0a", "w4b", "w4a"])}
    chunk = recorded_chunk(values)
    given, each = ArrayTable(), entry_by_entry(chunk)
    given.add(chunk)
    assert not given.nodes.made  # (taken in whole: nothing made a value at a time)
    for place in ("nodes", "grads", "events", "writes"):
        a, b = getattr(given, place), getattr(each, place)
        assert list(a) == list(b) and len(a) == len(b)
        for key in range(12):
            assert a.get(key) is b.get(key), (place, key)
            assert (key in a) == (key in b)
            assert a.shape(key) == b.shape(key)
    assert given.nodes[3] is values["n3"] and given.nodes.get(1) is None
    assert ArrayTable.pair(given.writes, 4) == (values["w4b"], values["w4a"])
    assert ArrayTable.pair(given.writes, 0) == (None, values["w0a"])
    assert list(given.entries()) == list(each.entries())
    copied = given.copy()
    assert copied.events.get(3) is values["e1a"]


def test_the_last_value_given_for_a_key_wins():
    first, second, third = value(1.0), value(2.0), value(3.0)
    table = ArrayTable()
    table.events[3] = first  # (one given by hand first)
    table.add(ArrayChunk(columns=(E, E, ([3], [second]), E)))
    assert table.events[3] is second
    table.add(ArrayChunk(columns=(E, E, ([2, 3], [first, third]), E)))
    assert table.events[3] is third and table.events[2] is first
    del table.events[3]  # (a stream cut short takes a key out)
    assert 3 not in table.events and table.events.get(3) is None
    assert list(table.events) == [2]
    table.add(ArrayChunk(columns=(E, E, ([3], [second]), E)))  # (and given again)
    assert table.events[3] is second


def test_keys_out_of_order_are_taken_one_by_one():
    a, b = value(1.0), value(2.0)
    table = ArrayTable()
    table.add(ArrayChunk(columns=(([4, 2], [a, b]), E, E, E)))
    assert table.nodes[2] is a and table.nodes[1] is b
    assert list(table.nodes) == [1, 2]
    assert (NODE, GRAD, EVENT, WRITE) == (0, 1, 2, 3)
