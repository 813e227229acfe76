"""The server's heap: what its sessions leave in memory and what Python's collector
makes them cost while they run.

Every session is an app of some 30,000 objects in one process; a class of 30 is a
million. Python's cyclic collector walks every object in its oldest generation at each
full collection, and every session waits: before this module, 15 sessions stepping for
25 s saw four full collections, the longest 988 ms (`bench/serve_load.py` measures a
class's steps: docs/benchmarks.md, "A class of 30 over SSH"). Objects that are already
there when a session starts are frozen (`gc.freeze`: the collector no longer walks
them; reference counting still frees them), so a full collection walks only what
changed since. What freezing keeps from the collector is the garbage with reference
cycles among frozen objects (an ended session's app): it is collected
when the class is empty, or once enough sessions have ended meanwhile.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import warnings
import logging
import time
import weakref
from typing import Callable

from mgtui.memory import resident_bytes, trim

log = logging.getLogger("mgtui.serve")

ENDED_BEFORE_COLLECTING = 8  # ended sessions whose cycles wait for the next thaw
WIND_DOWN = 1.0  # seconds from a session's end to the collection of what it left
EMPTIED_TRIES = 10  # collections after the class has left, while apps are still held
MEMORY_GROWTH = 2.0  # resident memory, over what it was after the last walk: walk again
# A teacher's step is every following session's step at once: the collector waits
# until the class has drawn it (no frame written for STEP_QUIET seconds), STEP_AT_MOST
# seconds at most (a teacher holding a key down).
STEP_QUIET = 0.025
STEP_AT_MOST = 1.0
# The middle generation's collection (45-80 ms in a class of 30: the survivors of ten
# steps) waits for a longer quiet, LONG_QUIET seconds with no step of the class's (a
# key in its middle waits for it), for MIDDLE_AT_MOST quiets at most.
LONG_QUIET = 0.25
MIDDLE_AT_MOST = 20


class SessionHeap:
    """Freezes the heap as sessions start; thaws and collects as they end."""

    def __init__(self) -> None:
        self.ended_frozen = 0  # sessions ended since the last thaw (their cycles kept)
        self.leaving: list[weakref.ref] = []  # the apps of ended sessions, until freed
        self._tries = 0  # collections since the class emptied with apps still there
        self._later: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.resident_walked = 0  # bytes resident after the last walk of the whole heap
        self._due = False
        self.last_frame = 0.0  # when a session last wrote to its terminal (monotonic)
        self._step_since: float | None = None  # a class's step being drawn: since when
        self._middle: asyncio.TimerHandle | None = None  # its collection, in a long quiet
        self._middle_waited = 0  # quiets since the middle collection fell due
        self.after_step: Callable[[], None] | None = None  # then called, in the quiet

    def watch(self) -> None:
        """From now on, what survives a full collection is frozen too: the next one
        walks only what has come since (the strips each step caches, and so on),
        not everything a class's steps have cached so far. Garbage can then hide among
        the frozen objects: once the process's resident memory has doubled since the
        last full walk (or since a session started), the heap is thawed and walked
        whole once (about a second for 30 sessions). Memory, not the frozen objects'
        number: `gc.get_freeze_count()` walks every one of them to count them, 1.2
        million in a class of 30, which took some 150 ms at every full collection on
        top of the collection itself."""
        if self._collected not in gc.callbacks:
            self._loop, self._due = asyncio.get_running_loop(), False
            self.resident_walked = self.resident_walked or resident_bytes()
            gc.callbacks.append(self._collected)

    def _collected(self, phase: str, info: dict) -> None:
        if phase == "stop" and info["generation"] == 2:
            gc.freeze()  # (the younger generations are empty after a full collection)
            if resident_bytes() > MEMORY_GROWTH * self.resident_walked and not self._due:
                self._due = True  # (not from inside the collector: on the loop)
                self._loop.call_soon_threadsafe(self._walk)

    def _walk(self) -> None:
        if self._loop is not None:  # (still watching: the server has not closed)
            self._collect_ended()

    @property
    def drawing(self) -> bool:
        """A class's step is being drawn (the collector waits)."""
        return self._step_since is not None

    def class_step(self) -> None:
        """The teacher has moved: every following session of this process draws the
        step now, one after the other on one loop. The collector waits until they have
        (a collection in between, 20-300 ms, held up every session after it, and it is
        most of the tail of the teacher's step to 30 screens): it then runs in the quiet
        after the step, on the garbage of the whole step at once."""
        if self._middle is not None:  # (the collector is off, waiting for a long quiet)
            self._middle.cancel()
            self._middle = None
        elif self._loop is None or self._step_since is not None or not gc.isenabled():
            return
        self._step_since = time.monotonic()
        gc.disable()
        self._loop.call_later(STEP_QUIET, self._step_drawn)

    def _step_drawn(self) -> None:
        if self._step_since is None:
            return
        now = time.monotonic()
        # still drawing: a frame written lately, or work waiting on the loop (the
        # sessions that have heard the step and not drawn it yet)
        busy = now - self.last_frame < STEP_QUIET or len(getattr(self._loop, "_ready", ()))
        if busy and now - self._step_since < STEP_AT_MOST:
            self._loop.call_later(STEP_QUIET, self._step_drawn)
            return
        self._step_since = None
        # now, in the quiet (else at the next allocation: the next key's); and before the
        # collector is on again, whose first allocation would collect an older generation
        # that is due (a middle collection, 90 ms, in the middle of a class's next step).
        # A middle one waits, the collector off, for a longer quiet: a teacher stepping
        # on would wait for it at the next key.
        if due_generation() == 1 and self._middle_waited < MIDDLE_AT_MOST:
            gc.collect(0)
            self._middle_waited += 1
            self._middle = self._loop.call_later(LONG_QUIET, self._long_quiet)
        else:
            self._collect_due()
        if self.after_step is not None:
            self.after_step()

    def _long_quiet(self) -> None:
        self._middle = None
        self._collect_due()

    def _collect_due(self) -> None:
        generation = due_generation()
        if generation == 1:
            self._middle_waited = 0
        gc.collect(generation)
        gc.enable()

    def stop(self) -> None:
        """The server has closed: nothing stays frozen, nothing watched."""
        if self._middle is not None:
            self._middle.cancel()
            self._middle = None
            gc.enable()
        if self._step_since is not None:
            self._step_since = None
            gc.enable()
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)
        self._loop = None  # (a walk already asked for is not made)
        self._cancel()
        self.thaw()

    def settle(self) -> None:
        """Everything there now is long-lived (the lessons, a session that has just
        drawn its first screen): collect the garbage, then freeze the rest. (The
        collection walks only what came since the last freeze.)"""
        self._cancel()
        self._freeze()

    def _freeze(self) -> None:
        gc.collect()
        gc.freeze()
        self.resident_walked = resident_bytes()

    def session_ended(self, sessions_left: int, app: object | None = None) -> None:
        """A session has ended: when it was the last, thaw, collect and give the memory
        back; otherwise thaw and collect only once enough have ended. Both a moment
        later: the app is still referenced while its last tasks wind down, and garbage
        frozen then would stay. (`app`, the session's app, is watched until it is freed:
        on a busy machine its tasks can take longer than that moment.)"""
        self.ended_frozen += 1
        if app is not None:
            self.leaving = [ref for ref in self.leaving if ref() is not None]
            self.leaving.append(weakref.ref(app))
        if sessions_left == 0:
            self._tries = 0
            self._soon(self._emptied)
        elif self.ended_frozen >= ENDED_BEFORE_COLLECTING:
            self._soon(self._collect_ended)

    def thaw(self) -> None:
        gc.unfreeze()
        self.ended_frozen = 0

    def _collect_ended(self) -> None:
        self._due = False
        start, resident = time.perf_counter(), resident_bytes()
        self.thaw()
        self._freeze()  # (a give-back on its way, the class having left, still comes)
        log.info("walked the whole heap: %.1f MB resident before, %.1f MB after, in %.0f ms",
                 resident / 2**20, self.resident_walked / 2**20,
                 1000 * (time.perf_counter() - start))

    def _emptied(self) -> None:
        """The class has emptied: collect and give back what its sessions held. An app
        whose tasks are still winding down survives that collection, and with nobody
        connected nothing would collect it later: so collect again, a little later each
        time, until every ended session's app is gone."""
        self.thaw()
        give_back_memory()
        self.leaving = [ref for ref in self.leaving if ref() is not None]
        if self.leaving and self._tries < EMPTIED_TRIES:
            self._tries += 1
            log.info("the class has left; %d sessions still winding down: collecting again "
                     "in %.0f s", len(self.leaving), WIND_DOWN * (1 + self._tries))
            self._soon(self._emptied, WIND_DOWN * (1 + self._tries))
        elif self.leaving:
            log.warning("the class has left, but %d sessions' apps are still held",
                        len(self.leaving))
        else:
            log.info("the class has left: its memory is given back")

    def _soon(self, then, delay: float | None = None) -> None:
        self._cancel()
        self._later = asyncio.get_running_loop().call_later(
            WIND_DOWN if delay is None else delay, self._fire, then)

    def _fire(self, then) -> None:
        self._later = None
        then()

    def _cancel(self) -> None:
        if self._later is not None:
            self._later.cancel()
            self._later = None


def due_generation() -> int:
    """The generation to collect now so that the collector's next automatic collection
    is not a middle one: the middle one if its count (of young collections), with this
    collection counted, is past its threshold; else the young one. (Not the oldest:
    Python collects that only once enough has come into it since, which it alone
    knows; `watch` freezes what that leaves.)"""
    counts, thresholds = gc.get_count(), gc.get_threshold()
    return 1 if counts[1] + 1 > thresholds[1] else 0


def give_back_memory() -> None:
    """Empty the caches the sessions filled, collect the apps' reference cycles now,
    and hand the heap they freed back to the system (glibc keeps it otherwise)."""
    forget_caches()
    gc.collect()
    trim()  # (not glibc: the memory is reused all the same)


def forget_caches() -> None:
    """Empty the memo caches that outlive a session (the heap thawed first: frozen
    objects are not among `gc.get_objects()`): Textual's and Rich's (their
    `functools` caches and Textual's `LRUCache`s and `FIFOCache`s, one in every Strip)
    and mgtui's compacted strips. They refill at the next frame; left full, the entries
    a class put there (some 20 MB for 10 sessions, most in the compacted strips) stay,
    and the heap pages around them with them."""
    from textual.cache import FIFOCache, LRUCache

    gc.unfreeze()
    with warnings.catch_warnings():
        # isinstance reads `__class__`, which some libraries' deprecated objects warn on
        # (torch's `distributed.reduce_op`, when torch is in the process)
        warnings.simplefilter("ignore")
        for thing in gc.get_objects():
            if isinstance(thing, (LRUCache, FIFOCache)):
                thing.clear()
            elif (isinstance(thing, functools._lru_cache_wrapper)
                  and (getattr(thing, "__module__", None) or "").split(".")[0]
                  in ("textual", "rich")):
                thing.cache_clear()
    from mgtui.tui.widgets import strips

    strips.clear_caches()
