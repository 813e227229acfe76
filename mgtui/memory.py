"""Memory that mgtui frees goes back to the system, and the cyclic collector paused
where it would only rescan a big heap.

A trace is a few dozen flat arrays of a few megabytes each, and a trace that grows
while its scenario records is built again at every update. glibc's malloc serves such
big blocks with `mmap` and unmaps them when they are freed, but only until the first
one is freed: it then raises its threshold to that block's size, and later blocks come
from the heap, which keeps what is freed in the middle of it. After a big recording the
debugger would hold several times its trace. Fixing the threshold keeps the first
behaviour for good (setting it turns off glibc's adjustment).
"""

from __future__ import annotations

import gc
import os
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
BIG_BLOCK = 256 * 1024


def return_freed_memory() -> bool:
    """Have big blocks mapped on their own, and unmapped when freed. True if the C
    library took it (glibc on Linux); elsewhere nothing changes."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return bool(ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, BIG_BLOCK))
    except (OSError, AttributeError):  # no glibc (musl has no mallopt)
        return False


def with_system_malloc() -> None:
    """Start this process again on the C library's malloc (PYTHONMALLOC=malloc), unless
    it already runs on it; returns only then (or where that cannot be done).

    For a process that many short-lived sessions come and go in (`mgtui serve`).
    Python's own allocator takes memory in 1 MiB arenas and gives an arena back only
    once every object in it is freed: the objects a class's sessions leave behind (a
    few cache entries each) keep most of their arenas, and the server stayed at three
    times its size after everyone left. glibc's `malloc_trim` gives back every free
    page, however few objects are left around it (bench/README.md, "A class over SSH").
    """
    if os.environ.get("PYTHONMALLOC") or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim  # glibc (musl has none: its malloc is kept)
    except (OSError, AttributeError):
        return
    env = dict(os.environ, PYTHONMALLOC="malloc")
    try:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
    except OSError:  # (the process goes on as it is, on Python's allocator)
        return


def resident_bytes() -> int:
    """This process's resident memory, from one small read of /proc (where there is no
    /proc: its peak so far; 0 where not even that is known)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # (Windows)
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # (bytes there, KiB elsewhere)


def trim() -> bool:
    """Hand back to the system the memory freed in the middle of the heap and of the
    threads' arenas, which glibc keeps otherwise: after a big trace has loaded, whose
    growing copies and decoded chunks were freed. True if the C library did it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
        return True
    except (OSError, AttributeError):  # no glibc
        return False


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: for work that makes many objects and no
    garbage cycles (the walks over a big trace, a graph copied for `mgtui.show`).
    Without it, the collector keeps rescanning the heap a recording left (every node of
    a scenario is in a cycle with its closure)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def pause_collector() -> Callable[[], None]:
    """Pause the cyclic collector until the function returned is called (once is enough;
    later calls do nothing). For the app's start: its first frame makes tens of thousands
    of objects and no garbage worth a collection, and the collections they would set off
    (a full one among them, over every module and class imported) cost the first paint
    a quarter of what mgtui adds to Textual's own start. A collector paused already (by
    the program that opens the app) stays paused."""
    was_enabled = gc.isenabled()
    gc.disable()
    resumed = False

    def resume() -> None:
        nonlocal resumed
        if not resumed:
            resumed = True
            if was_enabled:
                gc.enable()

    return resume
