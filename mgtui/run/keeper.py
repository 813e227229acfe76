"""The keeper: the runner's child process, which runs the scenario's process under it and
leaves nothing of it behind.

`python -m mgtui.run.keeper FD` (the process `mgtui.run.runner.Run` starts, in a session
of its own) reads what to run (`RunSpec`), forks the scenario's process, which records
and streams the trace to the parent through FD (`mgtui.run.child`), and stays as its
keeper, a small process that runs no scenario code and loads no more of mgtui than this
(the recorder and the trace are imported after the fork, by the scenario's process). It is a child subreaper (`PR_SET_CHILD_SUBREAPER`, Linux): every process
the scenario starts stays below it, even one that leaves the process group and the
session (`setsid()`) and whose parent ends, so when the scenario's process ends, however
it ends, the keeper kills every process left below it, reaps them, and only then ends,
as the scenario's process ended (the same exit code, or the same signal). The pipes to
the parent close with the last of them: the parent never waits on a pipe that a process
the scenario left behind holds open.

The parent asks it, by a signal to the keeper alone:

    SIGINT   stop: SIGINT to the scenario's process group at once, SIGTERM after
             TERM_AFTER if it has not ended, SIGKILL after KILL_AFTER (a scenario that
             ignores SIGINT, or is blocked in a call, still ends within about a second;
             one that has stopped recording and is sending the rest ignores the SIGTERM)
    SIGTERM  end it now: SIGKILL

The scenario's process stays in the keeper's process group, so that when the keeper is
gone (killed from outside), the parent still ends them all by signalling the group.
Elsewhere than Linux there is no subreaper: the group is all that is ended.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
import time
import traceback
from typing import Callable, NoReturn

from mgtui.run.spec import INTERNAL_ERROR, KILL_AFTER, TERM_AFTER, RunSpec

SWEEP_TIME = 2.0  # seconds the keeper tries to end the processes left below it
PARENT_CHECK = 1.0  # seconds between checks that the parent is still there

PR_SET_CHILD_SUBREAPER = 36
_exit = os._exit  # the real one: the scenario's process is given another while it runs
_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGCHLD}


def become_subreaper() -> bool:
    """Make this process the one that orphans below it are given to (Linux 3.4+)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl here
        return False


def keep(work: Callable[[], object], close_fds: tuple[int, ...] = ()) -> NoReturn:
    """Run `work` in a child process and keep it: relay the parent's requests, end all it
    leaves behind, then exit as it did. `close_fds` are closed in the keeper (the stream
    to the parent: only the scenario's process writes to it)."""
    become_subreaper()
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    parent = os.getppid()
    pid = os.fork()
    if pid == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        _run_child(work)
    for fd in close_fds:
        os.close(fd)
    keeper = Keeper(pid, parent)
    status = keeper.wait()
    keeper.sweep()
    exit_as(status)


def _run_child(work: Callable[[], object]) -> NoReturn:
    """The scenario's process: `work`, then out, never back into the keeper's code, by
    the real `os._exit` (not one the scenario was given, which would report the end as
    the scenario's own `os._exit`). An exception out of `work` is mgtui's own failure:
    INTERNAL_ERROR, never the scenario's exit code."""
    code = 0
    try:
        work()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - an mgtui bug: its traceback goes to the output
        traceback.print_exc()
        code = INTERNAL_ERROR
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    _exit(code)


class Keeper:
    """The keeper's side: waits for the scenario's process (`pid`) while it takes the
    parent's requests, then ends everything left below it."""

    def __init__(self, pid: int, parent: int) -> None:
        self.pid = pid
        self.parent = parent
        self.me = os.getpid()
        self.status: int | None = None  # the scenario's process's wait status
        self.plan: list[tuple[float, int]] = []  # (when, signal) still to send

    def wait(self) -> int:
        """The scenario's process's wait status, once it has ended."""
        while self.status is None:
            now = time.monotonic()
            due = self.plan[0][0] if self.plan else now + PARENT_CHECK
            info = signal.sigtimedwait(_SIGNALS, max(0.0, min(due, now + PARENT_CHECK) - now))
            if info is not None and info.si_signo != signal.SIGCHLD and info.si_pid != self.me:
                self.request(info.si_signo)
            if os.getppid() != self.parent:  # the parent is gone: no one reads the trace
                self.request(signal.SIGTERM)
            self.reap()
            self.escalate()
        return self.status

    def request(self, signo: int) -> None:
        """The parent asks: SIGINT, stop (escalating); SIGTERM, end now."""
        now = time.monotonic()
        if signo == signal.SIGTERM:
            self.plan = [(now, signal.SIGKILL)]
        elif not self.plan:  # (a second SIGINT changes nothing: it is on its way)
            self.plan = [(now, signal.SIGINT), (now + TERM_AFTER, signal.SIGTERM),
                         (now + KILL_AFTER, signal.SIGKILL)]

    def escalate(self) -> None:
        """Send the signals that are due, while the scenario's process lives."""
        now = time.monotonic()
        while self.plan and self.plan[0][0] <= now and self.status is None:
            _, sig = self.plan.pop(0)
            if sig == signal.SIGKILL:
                self._kill(self.pid)  # (not the group: the keeper is in it)
            else:
                try:
                    os.killpg(self.me, sig)  # the scenario's whole group; the keeper
                except OSError:  # pragma: no cover  # has them blocked, and skips its own
                    pass

    def reap(self) -> bool:
        """Reap every child that has ended (the scenario's process notes its status);
        False once there is no child left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.pid:
                self.status = status

    def sweep(self) -> None:
        """Kill every process left below the keeper and reap it: its children, then the
        orphans each of those leaves, which come to the keeper, until none is left."""
        deadline = time.monotonic() + SWEEP_TIME
        while self.reap() and time.monotonic() < deadline:
            for pid in children_of(self.me):
                self._kill(pid)
            time.sleep(0.002)

    @staticmethod
    def _kill(pid: int) -> None:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def children_of(parent: int) -> list[int]:
    """The processes whose parent is `parent`, from /proc ([] without one)."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # ended meanwhile
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # after "pid (comm) "
        if len(fields) > 1 and int(fields[1]) == parent:
            found.append(int(name))
    return found


def exit_as(status: int) -> NoReturn:
    """End this process as the one whose wait status is `status` ended."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        except (ValueError, OSError):  # pragma: no cover
            pass
        if sig != signal.SIGKILL:  # (whose handling cannot be changed)
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # pragma: no cover - a signal whose default is not to end
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


# -- the runner's child ----------------------------------------------------------------------


def child_main(stream_fd: int) -> NoReturn:
    """The runner's child (`python -m mgtui.run.keeper FD`): read the spec, fork the
    scenario's process, which records and streams through `stream_fd`, and keep it.
    `mgtui.run.child` is imported in the scenario's process alone: the parent never
    loads the recorder, and shares only `mgtui.run.spec` with the child."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; see serve()
    spec = RunSpec.from_json(sys.stdin.read())

    def record() -> None:
        from mgtui.run.child import serve

        # The stream is this process's alone: not a program's it starts, and a copy of
        # this process (os.fork, multiprocessing) writes what it records to /dev/null.
        os.set_inheritable(stream_fd, False)
        os.register_at_fork(after_in_child=lambda: _detach(stream_fd))
        serve(spec, stream_fd)

    keep(record, close_fds=(stream_fd,))


def _detach(fd: int) -> None:
    """Point `fd` at /dev/null (in a forked copy of the scenario's process)."""
    null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    os.dup2(null, fd, inheritable=False)
    os.close(null)


def main() -> NoReturn:
    """The keeper's process; failing in its own code (a fork refused: too many
    processes), it says so (the traceback, INTERNAL_ERROR) rather than exit 1 as if the
    scenario had."""
    try:
        child_main(int(sys.argv[1]))
    except Exception:  # noqa: BLE001 - the keeper's own failure (not a signal's)
        traceback.print_exc()
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        _exit(INTERNAL_ERROR)


if __name__ == "__main__":
    main()
