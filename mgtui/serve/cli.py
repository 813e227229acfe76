"""`mgtui serve LESSON...`: record the lessons once, then serve them to a class over SSH
(or, with --web, to browsers), every session replaying the same traces."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from mgtui.memory import return_freed_memory
from mgtui.safe import inert
from mgtui.serve.limits import LOGINS_PER_ADDRESS, SESSIONS_PER_LOGIN
from mgtui.serve.log import setup_log

EXIT_OK, EXIT_UNUSABLE = 0, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mgtui serve",
        description="Serve lessons to a class: each SSH connection gets its own debugger, "
        "following the teacher's step. Lessons are recorded once, when the server starts.")
    parser.add_argument("lessons", nargs="+", metavar="LESSON",
                        help="scenario files, saved traces, directories of them, or bundled "
                        "scenario names")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (default 127.0.0.1: this machine only; "
                        "0.0.0.0 for every network)")
    parser.add_argument("--port", type=int, default=None,
                        help="the port (default 2222; 8000 with --web)")
    parser.add_argument("--authorized-keys", type=Path, metavar="FILE",
                        help="the students' public keys, in OpenSSH authorized_keys format")
    parser.add_argument("--teacher-keys", type=Path, metavar="FILE",
                        help="the teachers' public keys: their sessions lead the class")
    parser.add_argument("--password-file", type=Path, metavar="FILE",
                        help="a file (chmod 600) whose first line is the class password")
    parser.add_argument("--teach", action="store_true",
                        help="teach from this terminal: the class follows this session")
    parser.add_argument("--quiz", action="store_true",
                        help="start in quiz mode: students predict each backward step's grad "
                        "before they see it (the teacher's Q turns it on and off)")
    parser.add_argument("--quiz-scores", type=Path, metavar="FILE",
                        help="write the quiz's scores per student to FILE (CSV) when the class "
                        "ends or the server stops, and when a teacher presses W; a FILE that "
                        "exists is kept (FILE-2.csv … instead, said at start)")
    parser.add_argument("--record", type=Path, metavar="FILE",
                        help="record the class as the students see it (at 120x40) to FILE, "
                        "an asciicast v2 file a student plays with: asciinema play FILE "
                        "(an earlier recording there is kept: this one goes to FILE-2 ...)")
    parser.add_argument("--web", action="store_true",
                        help="serve to browsers through textual-serve instead of SSH")
    parser.add_argument("--max-sessions", type=int, default=60, metavar="N",
                        help="sessions at once (default 60)")
    parser.add_argument("--idle-timeout", type=float, default=60, metavar="MINUTES",
                        help="end a session after this long with no keys and nothing new "
                        "drawn (default 60)")
    parser.add_argument("--max-logins-per-address", type=int, default=LOGINS_PER_ADDRESS,
                        metavar="N", help="connections from one address logging in at once "
                        f"(default {LOGINS_PER_ADDRESS}; more for a class behind one NAT "
                        "address)")
    parser.add_argument("--max-sessions-per-login", type=int, default=SESSIONS_PER_LOGIN,
                        metavar="N", help="sessions one person's login may have open at once "
                        f"(a key, or a login name of their own; default {SESSIONS_PER_LOGIN})")
    parser.add_argument("--max-sessions-per-address", type=int, default=None, metavar="N",
                        help="sessions open at once from one address (default: half of "
                        "--max-sessions, 10 at least; more for a class behind one NAT address)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="processes serving the sessions (default: one a CPU, at most "
                        "8); 1 serves every session in this process")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="seed for `random` when the lessons are recorded (default 0)")
    parser.add_argument("--timeout", type=float, default=120, metavar="SECONDS",
                        help="stop recording a lesson after this many seconds (default 120)")
    return parser


def fail(message: str) -> int:
    print(f"mgtui serve: {inert(message)}", file=sys.stderr)
    return EXIT_UNUSABLE


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if (args.max_sessions < 1 or args.idle_timeout <= 0 or args.timeout <= 0
            or args.max_logins_per_address < 1 or args.max_sessions_per_login < 1
            or (args.max_sessions_per_address is not None and args.max_sessions_per_address < 1)
            or (args.workers is not None and args.workers < 1)):
        return fail("--max-sessions, --max-sessions-per-login, --max-sessions-per-address, "
                    "--max-logins-per-address, --workers, --idle-timeout and --timeout must "
                    "be positive")
    from mgtui.serve.log import quiet_asyncssh_warnings

    quiet_asyncssh_warnings()
    try:
        import asyncssh  # noqa: F401
    except ImportError:
        return fail("serving a class needs the serve extra: pip install 'mgtui[serve]'")
    from mgtui.serve.auth import Auth, AuthError
    from mgtui.serve.workers import supported

    if not args.web and (args.workers or 1) > 1 and not supported():
        return fail("this system cannot hand connections to worker processes: "
                    "use --workers 1")
    auth = None
    if not args.web:
        try:
            auth = Auth.from_files(args.authorized_keys, args.teacher_keys, args.password_file)
        except AuthError as exc:
            return fail(str(exc))
    if args.record is not None and args.web:
        return fail("--record records a class served over SSH (not --web)")
    if args.quiz_scores is not None:  # (never over another class's file)
        from mgtui.serve.scores import fresh_scores_path

        args.quiz_scores, note = fresh_scores_path(args.quiz_scores)
        if note:
            print(f"mgtui serve: {inert(note)}", file=sys.stderr, flush=True)
    args.recording = None
    if args.record is not None:
        from mgtui.serve.class_cast import open_recording

        try:
            args.recording = open_recording(args.record)
            args.record = Path(args.recording.name)  # (another name if that one was taken)
        except OSError as exc:
            return fail(f"cannot write the recording {args.record}: {exc.strerror or exc}")
    recordings = None
    try:  # (the class opens with the first lesson: the others join when recorded)
        recordings = start_recordings(args)
        if not args.web:
            load_the_app()  # (while the lessons record: not in each worker's event loop)
        lessons = recordings.all() if args.web else recordings.first()
    except Exception as exc:  # noqa: BLE001 - LessonError and the like: one line, no traceback
        if recordings is not None:
            recordings.close()
        return fail(str(exc))
    return_freed_memory()
    if args.web:
        from mgtui.serve.web import serve_web

        return serve_web(lessons, args)
    from mgtui.serve.workers import default_workers

    workers = args.workers or default_workers()
    try:
        if workers > 1:
            return serve_in_workers(lessons, auth, args, workers, recordings)
        return asyncio.run(serve_ssh(lessons, auth, args, recordings))
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        recordings.close()


def start_recordings(args):
    """Every lesson named, being recorded side by side (`mgtui.serve.later`), by unique
    name; each said as it starts."""
    from mgtui.run.bundled import resolve
    from mgtui.run.lessons import lesson_paths
    from mgtui.serve.later import Recordings

    named: dict[str, Path] = {}
    for path in lesson_paths([resolve(t) for t in args.lessons]):
        named[path.name if path.name not in named else f"{path.parent.name}/{path.name}"] = path
    for name in named:
        print(f"mgtui serve: recording {inert(name)} …", file=sys.stderr, flush=True)
    return Recordings(named, seed=args.seed, timeout=args.timeout)


def load_the_app() -> None:
    """Import the sessions' app now, while the lessons record in their runner children:
    each worker forked after has it (a worker importing it first took its event loop
    half a second, some at a student's first login: issue 35)."""
    import mgtui.serve.app  # noqa: F401
    import mgtui.serve.driver  # noqa: F401
    import mgtui.serve.server  # noqa: F401
    import mgtui.serve.warm  # noqa: F401
    import mgtui.tui.widgets.dialogs  # noqa: F401


def later_note(recordings) -> str:
    """What the start-up line says of the lessons still being recorded."""
    waiting = len(recordings.waiting) if recordings is not None else 0
    return f" ({waiting} more being recorded: each joins the picker when ready)" if waiting \
        else ""


def serve_in_workers(lessons: dict, auth, args, count: int, recordings=None) -> int:
    """Listen here and serve the sessions in `count` forked worker processes
    (`mgtui.serve.workers`)."""
    import socket

    from mgtui.serve.auth import AuthError, host_key
    from mgtui.serve.workers import start_zygote
    try:
        key = host_key()
    except AuthError as exc:
        return fail(str(exc))
    port = 2222 if args.port is None else args.port
    try:
        listener = socket.create_server(
            (args.host, port), family=socket.AF_INET6 if ":" in args.host else socket.AF_INET,
            backlog=100)
    except OSError as exc:
        return fail(f"cannot listen on {args.host}:{port}: {exc.strerror or exc}")
    zygote = start_zygote(lessons, auth, args, key, listener)  # (the lessons so far)
    return asyncio.run(serve_front(listener, zygote, count, lessons, args, recordings))


async def serve_front(listener, zygote, count: int, lessons: dict, args,
                      recordings=None) -> int:
    import signal

    from mgtui.serve.server import Limits, join_command
    from mgtui.session.follow import Classroom
    from mgtui.serve.later import Shelf, serve_later

    limits = Limits.asked(args)
    shelf = Shelf(recordings.order if recordings is not None else list(lessons))
    front = lessons_front(listener, zygote, count, Classroom(),  # (as one process caps them)
                          max_connections=limits.max_connections,
                          logins_per_address=limits.logins_per_address, shelf=shelf)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, front.stopped.set)
    where = setup_log(args.teach)
    front.classroom.join_command = join_command(args.host, listener.getsockname()[1])
    front.classroom.traces = {name: lesson.trace for name, lesson in lessons.items()}
    front.classroom.quiz_on = bool(args.quiz)
    recording = later = None
    if recordings is not None and recordings.waiting:  # (to the workers, starting or not)
        later = loop.create_task(serve_later(recordings, lessons, front.classroom,
                                             front.lesson_ready))
    try:
        if not await front.start(wait=READY_WAIT):
            return fail("the worker processes did not start: see the log above")
        port = listener.getsockname()[1]
        print(f"mgtui serve: {len(lessons)} lesson{'s' if len(lessons) != 1 else ''} on "
              f"{args.host}:{port} in {count} processes; students type: ssh -p {port} "
              f"class@HOST (log: {where}; ctrl+c stops){later_note(recordings)}",
              file=sys.stderr, flush=True)
        recording = start_recording(lessons, front.classroom, args)  # (its app takes stderr)
        if args.teach:
            from mgtui.serve.app import ServedApp

            from mgtui.serve.scores import write_quiz_scores

            teacher = ServedApp(lessons, front.classroom, teacher=True)
            teacher.quiz_mode.save_scores = lambda: write_quiz_scores(front.classroom, args.quiz_scores)
            done = loop.create_task(teacher.run_async())
            stopped = loop.create_task(front.stopped.wait())
            await asyncio.wait({done, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if not done.done():
                teacher.exit(0)
                await done
            stopped.cancel()
        else:
            await front.stopped.wait()
    finally:
        if later is not None:
            later.cancel()
        await stop_recording(recording)
        await front.stop()
        shelf.close()
        from mgtui.serve.scores import write_quiz_scores

        write_quiz_scores(front.classroom, args.quiz_scores)  # (every worker's answers)
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return EXIT_OK


READY_WAIT = 300.0  # seconds for the workers to warm up


def lessons_front(*args, shelf, **options):
    """The front (`mgtui.serve.front.Front`) that also hands its workers the lessons
    recorded since they were forked (`mgtui.serve.later`): each worker running or
    starting when one is recorded, and each forked after, before anything else."""
    from mgtui.serve.front import Front

    class LessonsFront(Front):
        def lesson_ready(self, lesson) -> None:
            message = shelf.saved(lesson)
            for worker in self.workers:  # (one not ready yet reads it first when it is)
                self._post(worker, message)

        def _spawn(self) -> bool:
            if not super()._spawn():
                return False
            for message in shelf.messages:  # (the zygote has the lessons of the start)
                self._post(self.workers[-1], message)
            return True

    return LessonsFront(*args, **options)


async def class_ended(classroom) -> None:
    """Until a teacher ends the class (`q`, then e)."""
    ended = asyncio.Event()
    classroom.watch(lambda: ended.set() if classroom.ended else None, roster=False)
    await ended.wait()


async def until_stopped(teacher, ended, stopping: asyncio.Event) -> None:
    """Until the teacher's own session ends (with `--teach`, else until `ended`), or the
    server is told to stop (`stopping`: its sessions are ended after)."""
    running = asyncio.ensure_future(teacher.run_async() if teacher is not None else ended)
    stop = asyncio.ensure_future(stopping.wait())
    await asyncio.wait({running, stop}, return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    if not running.done():
        if teacher is not None:
            teacher.exit(0)
            await running
        else:
            running.cancel()


async def serve_ssh(lessons: dict, auth, args, recordings=None) -> int:
    from mgtui.serve.auth import AuthError, host_key
    from mgtui.serve.server import Class, Limits, start_server, start_worker_threads
    from mgtui.serve.warm import warm_up_later

    try:
        key = host_key()
    except AuthError as exc:
        return fail(str(exc))
    klass = Class(lessons, auth, Limits.asked(args), quiz_scores=args.quiz_scores)
    klass.classroom.quiz_on = args.quiz
    import signal

    stopping = asyncio.Event()  # SIGTERM: end every session, write the scores, exit 0
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    await start_worker_threads()
    port = 2222 if args.port is None else args.port
    try:
        server = await start_server(klass, args.host, port, key)
    except OSError as exc:
        return fail(f"cannot listen on {args.host}:{port}: {exc.strerror or exc}")
    where = setup_log(args.teach)
    server.warming = warm_up_later(klass, key)  # (students are let in meanwhile)
    later = None
    if recordings is not None and recordings.waiting:
        from mgtui.serve.later import serve_later

        later = asyncio.get_running_loop().create_task(
            serve_later(recordings, klass.lessons, klass.classroom))
    print(f"mgtui serve: {len(lessons)} lesson{'s' if len(lessons) != 1 else ''} on "
          f"{args.host}:{server.port}; students type: ssh -p {server.port} class@HOST "
          f"(log: {where}; ctrl+c stops){later_note(recordings)}", file=sys.stderr,
          flush=True)
    recording = start_recording(lessons, klass.classroom, args)  # (its app takes stderr)
    try:
        teacher = None
        if args.teach:
            from mgtui.serve.app import ServedApp
            from mgtui.serve.server import write_scores

            teacher = ServedApp(lessons, klass.classroom, teacher=True, quiz=args.quiz)
            teacher.quiz_mode.save_scores = lambda: write_scores(klass)
        await until_stopped(teacher, class_ended(klass.classroom), stopping)
    finally:
        if later is not None:
            later.cancel()
        await stop_recording(recording)
        await server.close()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return EXIT_OK


def start_recording(lessons: dict, classroom, args):
    """`--record FILE`: the class recorded as its students see it, in the background
    (`mgtui.serve.class_cast`); None if not asked for. Returns (task, stop event)."""
    if getattr(args, "recording", None) is None:
        return None
    from mgtui.serve.class_cast import record_class

    print(f"mgtui serve: recording the class to {inert(str(args.record))}", file=sys.stderr,
          flush=True)
    stop = asyncio.Event()
    task = asyncio.get_running_loop().create_task(
        record_class(lessons, classroom, args.recording, stop))
    return task, stop


async def stop_recording(recording) -> None:
    """End the class's recording (its file closed, playable)."""
    if recording is not None:
        task, stop = recording
        stop.set()
        try:
            await task
        except Exception:  # noqa: BLE001 - logged: the class has ended anyway
            import logging

            logging.getLogger("mgtui.serve").exception("the class's recording failed")
