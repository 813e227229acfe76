"""Saving is all or nothing: a save that fails or is killed partway leaves the file that
was there, and a failed `--save` exits 2 with the reason (issue 22, item 9)."""

import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mgtui.cli import main
from mgtui.trace.export import load

ROOT = Path(__file__).resolve().parent.parent.parent
SCENARIOS = ROOT / "scenarios"


def test_a_save_into_a_folder_that_does_not_exist_exits_2(capsys, tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "chain.mgtrace"
    code = main([str(SCENARIOS / "chain.py"), "--save", str(target), "--print"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "cannot write" in err and str(target) in err
    assert "Traceback" not in err
    assert "L" in out  # what was asked for besides the save is still printed
    assert not target.parent.exists()


def _limit_file_size():
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_a_save_over_the_file_size_limit_exits_2_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "mlp.mgtrace"
    assert main([str(SCENARIOS / "chain.py"), "--save", str(target)]) == 0
    good = target.read_bytes()
    assert 0 < len(good) < 4096
    proc = subprocess.run(
        [sys.executable, "-m", "mgtui.cli", str(SCENARIOS / "mlp.py"), "--save", str(target)],
        capture_output=True, text=True, timeout=120, preexec_fn=_limit_file_size, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "File too large" in proc.stderr and "Traceback" not in proc.stderr
    assert target.read_bytes() == good
    assert load(target).node_count == 7  # still the chain, and it still opens
    assert [p.name for p in tmp_path.iterdir()] == ["mlp.mgtrace"]  # no partial file left


KILLED_AT = textwrap.dedent("""
    import os, signal, sys
    from mgtui.recording.recorder import record
    from mgtui.trace.saving import save_trace
    trace = record(sys.argv[1])
    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)
    setattr(os, sys.argv[3], die)  # killed at that point of the save
    save_trace(trace, sys.argv[2])
""")


@pytest.mark.parametrize("point", ["fsync", "replace"])
def test_a_save_killed_partway_leaves_the_old_file(tmp_path, point):
    target = tmp_path / "chain.mgtrace"
    assert main([str(SCENARIOS / "chain.py"), "--save", str(target)]) == 0
    good = target.read_bytes()
    proc = subprocess.run([sys.executable, "-c", KILLED_AT, str(SCENARIOS / "neuron.py"),
                           str(target), point], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert target.read_bytes() == good


def test_recording_save_raises_and_writes_nothing_where_it_cannot(tmp_path):
    import mgtui
    from engine import Value

    with mgtui.record(probe=False) as rec:
        a = Value(2.0)
        (a * a).backward()
    target = tmp_path / "missing" / "x.mgtrace"
    with pytest.raises(OSError):
        rec.save(target)
    assert not target.parent.exists()
    saved = rec.save(tmp_path / "x.json")
    assert load(saved).node_count == 2 and os.listdir(tmp_path) == ["x.json"]
