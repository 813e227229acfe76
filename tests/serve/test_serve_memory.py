"""What `mgtui serve` does so that memory returns after a class leaves: the C library's
malloc for the server's process, and the caches the sessions filled emptied."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

SCRIPT = """
import os, sys
from mgtui.memory import with_system_malloc
print("run", os.environ.get("PYTHONMALLOC"), sys.argv[1:], flush=True)
with_system_malloc()
print("went on", flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_the_server_starts_again_on_the_c_librarys_malloc_with_its_arguments():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, "serve", "a b"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, env=dict(env, PYTHONPATH=str(ROOT)))
    assert done.stdout.splitlines() == [
        "run None ['serve', 'a b']", "run malloc ['serve', 'a b']", "went on"], done.stderr


def test_a_process_already_on_a_chosen_allocator_goes_on_as_it_is():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=60, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONMALLOC="pymalloc"))
    assert done.stdout.splitlines() == ["run pymalloc []", "went on"], done.stderr


def test_the_caches_sessions_fill_are_emptied():
    from rich.style import Style
    from textual.cache import LRUCache
    from textual.strip import Strip

    from rich.segment import Segment

    from mgtui.serve.heap import forget_caches
    from mgtui.tui.widgets.strips import _LOOKS, _compacted

    cache = LRUCache(10)
    cache.set("key", "value")
    Style.parse("bold red on blue")  # (an lru_cache of Rich's)
    strip = Strip([Segment("a", Style(bold=True)), Segment("b", Style(bold=True))])
    small = _compacted(strip)
    assert len(small) == 1 and _compacted(strip) is small  # compacted once, then kept
    assert len(cache) == 1 and Style.parse.cache_info().currsize and _LOOKS
    forget_caches()
    assert len(cache) == 0 and Style.parse.cache_info().currsize == 0 and not _LOOKS
    again = _compacted(strip)  # the strip's own caches were emptied too
    assert again is not small and again.text == small.text == "ab"
    assert Style.parse("bold red on blue") == Style(bold=True, color="red", bgcolor="blue")


async def test_the_heap_freezes_what_lives_and_collects_what_does_not():
    import gc
    import weakref

    from mgtui.serve.heap import SessionHeap

    class Node:
        pass

    heap = SessionHeap()
    kept, garbage = Node(), Node()
    garbage.me = garbage  # a reference cycle, unreachable once the name goes
    gone = weakref.ref(garbage)
    del garbage
    try:
        heap.watch()
        heap.settle()
        assert gone() is None  # collected before the freeze, not frozen
        assert gc.get_freeze_count() > 0 and heap.resident_walked > 0
        frozen = gc.get_freeze_count()
        gc.collect()  # a full collection: its survivors are frozen too
        assert gc.get_freeze_count() >= frozen and kept is not None
    finally:
        heap.stop()
    assert gc.get_freeze_count() == 0 and heap._collected not in gc.callbacks


class Node:
    """An object that can be its own garbage (`node.me = node`: a reference cycle)."""


@contextlib.contextmanager
def class_step():
    """A watched heap and its class, whose teacher has just taken a step: the collector
    waits (`SessionHeap.class_step`)."""
    from mgtui.serve.heap import SessionHeap
    from mgtui.session import Position
    from mgtui.session.follow import Classroom

    heap = SessionHeap()
    room = Classroom()
    room.subscribe(lambda _position: heap.class_step())
    try:
        heap.watch()
        room.publish(Position(1))
        yield heap, room
    finally:
        heap.stop()


async def test_the_collector_waits_while_the_class_draws_the_teachers_step():
    # A teacher's step is every following session's step at once, on one loop: a
    # collection in between would hold up every session after it. The collector waits
    # until no frame has been written for a moment, and collects then.
    import asyncio
    import gc
    import time
    import weakref

    from mgtui.serve.heap import STEP_AT_MOST, STEP_QUIET
    from mgtui.session import Position

    with class_step() as (heap, room):
        assert not gc.isenabled()  # the class is drawing the step
        garbage = Node()
        garbage.me = garbage
        gone = weakref.ref(garbage)
        del garbage
        for _ in range(4):  # frames keep coming: it keeps waiting
            heap.last_frame = time.monotonic()
            await asyncio.sleep(STEP_QUIET / 2)
            assert not gc.isenabled() and gone() is not None
        await asyncio.sleep(STEP_QUIET * 4)  # no frame since: collected, and on again
        assert gc.isenabled() and gone() is None
        room.publish(Position(2))
        started = time.monotonic()
        while not gc.isenabled() and time.monotonic() - started < 5:
            heap.last_frame = time.monotonic()  # a class that never stops drawing
            await asyncio.sleep(0.01)
        assert gc.isenabled() and time.monotonic() - started < STEP_AT_MOST + 0.5
        room.publish(Position(3))
    assert gc.isenabled()  # (stopped mid-step: on again)


def middle_garbage():
    """A reference cycle in the middle generation, whose collection is due at the next
    young one (a weak reference to it returned)."""
    import gc
    import weakref

    gc.collect(1)  # (the middle generation's count from 0)
    held = Node()
    held.me = held
    gone = weakref.ref(held)
    for _ in range(gc.get_threshold()[1]):  # young collections, each a count of the
        gc.collect(0)  # middle generation's: the next one makes its turn come
    del held  # (garbage now, in the middle generation: a young collection leaves it)
    assert gc.get_count()[1] == gc.get_threshold()[1] and gone() is not None
    return gone


async def test_the_quiet_after_a_step_collects_the_generations_that_are_due():
    # Collected in the quiet: the young generation; an older one whose turn has come
    # (else the first allocation once the collector is on again collects it, in the
    # middle of the class's next step) in a longer quiet, with the collector off till then
    # (45-80 ms in a class of 30: a teacher stepping on would wait for it).
    import asyncio
    import gc

    from mgtui.serve.heap import LONG_QUIET, STEP_QUIET

    with class_step():
        assert not gc.isenabled()
        gone = middle_garbage()
        await asyncio.sleep(STEP_QUIET * 6)
        assert not gc.isenabled() and gone() is not None  # (waiting for a longer quiet)
        assert gc.get_count()[1] == gc.get_threshold()[1] + 1  # (the young one collected)
        await asyncio.sleep(LONG_QUIET + STEP_QUIET * 4)
        assert gc.isenabled() and gone() is None
        assert gc.get_count()[1] < gc.get_threshold()[1]  # (the next automatic: a young one)


async def test_a_class_stepping_on_puts_the_middle_collection_off_for_so_many_steps(
        monkeypatch):
    import asyncio
    import gc

    from mgtui.serve import heap
    from mgtui.session import Position

    monkeypatch.setattr(heap, "LONG_QUIET", 60.0)  # (never so long a quiet here)
    monkeypatch.setattr(heap, "MIDDLE_AT_MOST", 3)
    with class_step() as (_heap, room):
        gone = middle_garbage()
        for step in range(2, 5):  # three quiets, each followed by the next step
            await asyncio.sleep(heap.STEP_QUIET * 6)
            assert not gc.isenabled() and gone() is not None
            room.publish(Position(step))
        await asyncio.sleep(heap.STEP_QUIET * 6)  # the fourth: collected now all the same
        assert gc.isenabled() and gone() is None


async def test_the_whole_heap_is_walked_once_memory_has_doubled(monkeypatch):
    # Garbage with reference cycles can hide among frozen objects: once the process's
    # memory has doubled since the last walk, the heap is thawed and walked whole.
    import asyncio
    import gc
    import weakref

    from mgtui.serve import heap as heap_module
    from mgtui.serve.heap import SessionHeap

    class Node:
        pass

    resident = [100 << 20]
    monkeypatch.setattr(heap_module, "resident_bytes", lambda: resident[0])
    heap = SessionHeap()
    try:
        heap.watch()
        heap.settle()
        assert heap.resident_walked == 100 << 20
        hidden = Node()
        hidden.me = hidden
        gone = weakref.ref(hidden)
        heap.settle()  # frozen while it lived ...
        del hidden  # ... then garbage among the frozen objects
        resident[0] = 150 << 20
        gc.collect()
        await asyncio.sleep(0.05)
        assert gone() is not None and not heap._due  # grown by half: not yet
        resident[0] = 210 << 20
        gc.collect()
        assert heap._due  # doubled: a walk is on its way, made on the event loop
        for _ in range(20):
            await asyncio.sleep(0.05)
            if gone() is None:
                break
        assert gone() is None and not heap._due and heap.resident_walked == 210 << 20
    finally:
        heap.stop()
    assert gc.get_freeze_count() == 0


async def test_an_app_still_winding_down_when_the_class_leaves_is_collected_later(monkeypatch):
    # On a busy machine an ended session's app can outlive the collection made when the
    # class empties; with nobody connected, nothing would collect it after that.
    import asyncio
    import gc
    import weakref

    from mgtui.serve import heap as heap_module
    from mgtui.serve.heap import SessionHeap

    monkeypatch.setattr(heap_module, "WIND_DOWN", 0.05)

    class App:
        pass

    heap = SessionHeap()
    app = App()
    app.me = app  # apps are full of reference cycles: only the collector frees them
    still_running = [app]  # (its last task, say)
    gone = weakref.ref(app)
    try:
        heap.watch()
        heap.settle()  # frozen, as a running session's objects are
        heap.session_ended(0, app)
        del app
        await asyncio.sleep(0.2)
        assert gone() is not None and len(heap.leaving) == 1
        assert heap._later is not None  # another collection is on its way
        still_running.clear()  # the task ends: now only its cycle holds the app
        for _ in range(40):
            await asyncio.sleep(0.05)
            if not heap.leaving:
                break
        assert gone() is None and heap.leaving == [] and heap._later is None
    finally:
        heap.stop()
    assert gc.get_freeze_count() == 0
