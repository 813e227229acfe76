"""Runs every corpus case against the code in this checkout and prints, for each, how
long the doctor (or `mgtui diff`) took, whether its verdict is right, and what it said.
Not a test: `python tests/corpus/measure.py [--json] [--only TOOL]` (with PYTHONPATH at the
checkout; `--only diff` runs only the `mgtui diff` cases, `--only check` the doctor's).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"corpus_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (a dataclass looks its module up there)
    spec.loader.exec_module(module)
    return module


def run_diff(a: Path, b: Path) -> tuple[int, dict]:
    from mgtui.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["diff", str(a), str(b), "--json"])
    try:
        return code, json.loads(out.getvalue())
    except ValueError:
        return code, {"error": (out.getvalue() + err.getvalue()).strip()[-300:]}


def rows(folder: Path, only: str | None = None):
    found = every_row(folder, only)
    return (r for r in found if only is None or r[0] == only)


def every_row(folder: Path, only: str | None):
    from mgtui.doctor import diagnose

    cases = load("cases")
    if only == "diff":
        yield from diff_rows(folder, cases)
        return
    for engine in cases.ENGINES:
        path = HERE / f"{engine}.py"
        started = time.perf_counter()
        report = diagnose(path)
        yield ("check", f"{engine}:correct", time.perf_counter() - started,
               cases.judge_clean(report), cases.summary(report))
    for case in cases.PLANTED:
        path = case.write(folder)
        started = time.perf_counter()
        report = diagnose(path)
        yield ("check", case.id, time.perf_counter() - started,
               cases.judge_planted(case, path, report), cases.summary(report))
    for engine in cases.ENGINES:
        started = time.perf_counter()
        report = cases.check_in_process(HERE / f"{engine}.py", f"corpus_fn_{engine}")
        yield ("check(fn)", f"{engine}:correct", time.perf_counter() - started,
               cases.judge_clean(report), cases.summary(report))
    for case in cases.PLANTED:
        path = case.write(folder)
        started = time.perf_counter()
        report = cases.check_in_process(path, f"corpus_fn_{case.engine}_{case.name}")
        yield ("check(fn)", case.id, time.perf_counter() - started,
               cases.judge_planted(case, path, report, by_name=False), cases.summary(report))
    if only is None:
        yield from diff_rows(folder, cases)


def diff_rows(folder: Path, cases):
    for engine, twin in cases.ENGINES.items():
        if twin:
            started = time.perf_counter()
            code, doc = run_diff(HERE / f"{engine}.py", HERE / f"{twin}.py")
            yield ("diff", f"{engine}:correct", time.perf_counter() - started,
                   cases.judge_diff_clean(code, doc), cases.diff_summary(doc))
    for case in cases.DIFFED:
        path = case.write(folder)
        started = time.perf_counter()
        code, doc = run_diff(path, HERE / f"{cases.ENGINES[case.engine]}.py")
        yield ("diff", case.id, time.perf_counter() - started,
               cases.judge_diff_planted(case, path, code, doc), cases.diff_summary(doc))


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv[:-1] else None
        found = list(rows(Path(folder), only))
    if "--json" in sys.argv:
        print(json.dumps([dict(zip(("tool", "case", "seconds", "wrong", "says"), r))
                          for r in found], indent=1))
        return
    for tool, case, seconds, wrong, says in found:
        verdict = "right" if not wrong else "WRONG: " + "; ".join(wrong)
        print(f"{tool:9} {case:45} {seconds:6.1f} s  {verdict}\n      says: {says}")


if __name__ == "__main__":
    main()
