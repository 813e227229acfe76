"""The headless command line: --print, --export json|dot, --list, --version, exit codes,
and a short message on stderr (never a traceback) for every input that cannot run."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mgtui.cli import main

SCENARIOS = Path(__file__).resolve().parent.parent.parent / "scenarios"


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_chain_json_has_the_lecture_grads(capsys):
    code, out, err = run(capsys, SCENARIOS / "chain.py", "--export", "json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["format"] == "mgtui-trace" and doc["version"] == 1
    grads = {n["label"]: n["final_grad"] for n in doc["nodes"]}
    assert grads == {"L": 1, "f": 4, "d": -2, "e": -2, "c": -2, "a": 6, "b": -4}
    assert [n["id"] for n in doc["nodes"]] == list(range(len(doc["nodes"])))
    assert [p["kind"] for p in doc["passes"]] == ["forward", "backward"]
    assert doc["passes"][0] == {"kind": "forward", "start": 0, "end": 7}
    assert doc["error"] is None
    e = next(n for n in doc["nodes"] if n["label"] == "e")
    assert e["op"] == "*" and e["data"] == -6.0 and e["children"] == [0, 1]
    kinds = {ev["kind"] for ev in doc["events"]}
    assert kinds == {"create", "grad", "backward"}


def test_bundled_scenarios_open_by_name(capsys):
    code, out, _ = run(capsys, "chain", "--export", "json")
    assert code == 0 and json.loads(out)["title"] == "The chain rule on a tiny expression"


def test_neuron_print_shows_forward_then_each_backward_with_before_and_after(capsys):
    code, out, _ = run(capsys, "neuron", "--print")
    assert code == 0
    forward = out.index("Pass 1/2: forward")
    backward = out.index("Pass 2/2: backward")
    assert forward < out.index("o = tanh(n) = tanh(0.8814) = 0.7071") < backward
    tail = out[backward:]
    assert "o._backward()" in tail
    assert "n.grad += (1 - o²) × o.grad = 0.5 × 1.0" in tail
    assert "n.grad: 0.0 → 0.5 (+0.5)" in tail
    assert "x1.grad += w1.data × (x1*w1).grad = -3.0 × 0.5" in tail
    assert "x1.grad: 0.0 → -1.5 (-1.5)" in tail
    assert "w1.grad: 0.0 → 1.0 (+1.0)" in tail
    # one `_backward` per node, in reverse topological order: o first
    calls = [line.split("backward: ")[1].split("._backward")[0]
             for line in tail.splitlines() if "backward: " in line]
    assert calls[0] == "o" and len(calls) == 10


def test_fan_out_second_contribution_is_called_out(capsys, tmp_path):
    path = write(tmp_path, "twice.py", """
        from engine import Value
        a = Value(3.0, label='a')
        b = a + a; b.label = 'b'
        b.backward()
    """)
    code, out, _ = run(capsys, path, "--print")
    assert code == 0
    assert "a.grad: 0.0 → 1.0 (+1.0)" in out
    assert "a.grad: 1.0 → 2.0 (+1.0)" in out
    assert "contribution 2 to a.grad" in out


def test_saved_trace_prints_the_same_without_running_code(capsys, tmp_path):
    scenario = write(tmp_path, "neuron.py", (SCENARIOS / "neuron.py").read_text())
    code, out, _ = run(capsys, scenario, "--export", "json")
    saved = tmp_path / "trace.json"
    saved.write_text(out)
    _, printed, _ = run(capsys, scenario, "--print")
    scenario.unlink()  # nothing left to run
    code, reprinted, err = run(capsys, saved, "--print")
    assert code == 0 and err == ""
    assert reprinted == printed
    _, again, _ = run(capsys, saved, "--export", "json")
    assert json.loads(again) == json.loads(out)


def test_non_finite_numbers_are_strings(capsys, tmp_path):
    path = write(tmp_path, "inf.py", """
        from engine import Value
        a = Value(float('inf'), label='a')
        b = a * 0.0; b.label = 'b'
        c = Value(-1e308) * 10; c.label = 'c'
        b.backward()
    """)
    code, out, _ = run(capsys, path, "--export", "json")
    assert code == 0
    assert "NaN" not in out and "Infinity" not in out
    nodes = {n["label"]: n for n in json.loads(out)["nodes"]}
    assert nodes["a"]["data"] == "inf" and nodes["b"]["data"] == "nan"
    assert nodes["c"]["data"] == "-inf"
    assert nodes["a"]["final_grad"] == 0.0  # the other factor, 0.0, times b.grad
    assert nodes["#1"]["final_grad"] == "inf"  # the constant 0.0's grad is a.data = inf


def test_dot_export_draws_records_and_op_nodes(capsys):
    code, out, _ = run(capsys, "chain", "--export", "dot")
    assert code == 0 and out.startswith("digraph")
    assert '{ a | data 2.0000 | grad 6.0000 }' in out
    assert 'n3_op [label="*"]' in out and "n3_op -> n3;" in out
    assert "n0 -> n3_op;" in out and "n1 -> n3_op;" in out


def test_list_and_version(capsys):
    code, out, _ = run(capsys, "--list")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert names[:6] == ["chain", "neuron", "neuron_notebook", "neuron_exp", "mlp", "moons"]
    assert "One neuron with a tanh activation" in out
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("mgtui ")


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "nope.py", "no such file"),
    (lambda d: d, "is a directory"),
    (lambda d: _bytes(d / "pic.png", b"\x89PNG\r\n\x1a\n\0\0\0"), "not a Python file"),
    (lambda d: _bytes(d / "bad.json", b"{not json"), "not valid JSON"),
    (lambda d: _bytes(d / "other.json", b'{"format": "other"}'), "not an mgtui trace"),
])
def test_inputs_that_cannot_run_exit_2_with_one_line(capsys, tmp_path, make, message):
    code, out, err = run(capsys, make(tmp_path), "--print")
    assert code == 2 and out == ""
    assert message in err and err.startswith("mgtui: ")
    assert "Traceback" not in err and len(err.splitlines()) <= 3


def test_syntax_error_shows_line_column_and_caret(capsys, tmp_path):
    path = write(tmp_path, "bad.py", "from engine import Value\nx = Value(1.0))\n")
    code, out, err = run(capsys, path, "--print")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith(f"mgtui: {path}:2:") and "SyntaxError" in lines[0]
    assert lines[1].strip() == "x = Value(1.0))"
    assert lines[2].strip() == "^" and lines[2].index("^") == lines[1].index(")") + 1


def test_exception_partway_exits_1_and_keeps_the_partial_trace(capsys, tmp_path):
    path = write(tmp_path, "boom.py", """
        from engine import Value
        a = Value(2.0, label='a')
        b = a * 3; b.label = 'b'
        b.backward()
        raise ValueError('bad data')
    """)
    code, out, err = run(capsys, path, "--export", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["error"] == {"type": "ValueError", "message": "bad data", "line": 6,
                            "after_event": len(doc["events"])}
    assert {n["label"]: n["final_grad"] for n in doc["nodes"]}["a"] == 3.0
    assert "ValueError at line 6: bad data" in err and "Traceback" not in err


def test_prints_input_and_exit_never_reach_stdout(tmp_path):
    """Through a real process: the scenario's prints must not corrupt the JSON."""
    path = write(tmp_path, "noisy.py", """
        import sys
        from engine import Value
        print('hello from the scenario')
        print('and to stderr', file=sys.stderr)
        a = Value(1.0, label='a')
        name = input('name? ')
    """)
    proc = subprocess.run([sys.executable, "-m", "mgtui.cli", str(path), "--export", "json"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["output"] == "hello from the scenario\nand to stderr\n"
    assert doc["error"]["type"] == "EOFError" and doc["error"]["line"] == 7
    assert proc.stderr.startswith("mgtui: ") and "Traceback" not in proc.stderr
    exits = write(tmp_path, "exits.py", "import sys\nprint('bye')\nsys.exit(4)\n")
    proc = subprocess.run([sys.executable, "-m", "mgtui.cli", str(exits), "--print"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "sys.exit(4)" in proc.stderr


def test_timeout_and_max_nodes(capsys, tmp_path):
    spin = write(tmp_path, "spin.py", "while True:\n    pass\n")
    code, out, err = run(capsys, spin, "--export", "json", "--timeout", "0.3")
    assert code == 1 and "timed out after 0.3 s" in err
    assert json.loads(out)["error"]["type"] == "Stopped"
    grow = write(tmp_path, "grow.py", "from engine import Value\nx = Value(0.0)\nwhile True:\n    x = x + 1\n")
    code, out, err = run(capsys, grow, "--export", "json", "--max-nodes", "100")
    assert code == 1 and "more than 100 nodes" in err
    assert len(json.loads(out)["nodes"]) == 100


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["chain", "--export", "xml"])
    assert info.value.code == 2
    code, _, err = run(capsys, "--print")
    assert code == 2 and "needs a FILE" in err
    code, _, err = run(capsys, "chain", "--print", "--timeout", "-1")
    assert code == 2


def test_app_without_a_terminal_says_so(capsys):
    code, out, err = run(capsys, "chain")
    assert code == 2 and "needs a terminal" in err


def _bytes(path, data):
    path.write_bytes(data)
    return path


ENTRY = "import sys; from mgtui.cli import main; sys.exit(main(sys.argv[1:]))"


def test_a_recording_shows_its_progress_on_a_terminal_stderr(tmp_path):
    """`--export json` with stderr a terminal (a pty): a live line of the nodes recorded
    so far, cleared at the end; stdout stays the JSON alone. Without a terminal, none."""
    root = Path(__file__).resolve().parent.parent.parent
    done, seen = _on_a_terminal([str(root / "scenarios" / "chain.py"), "--export", "json"], root)
    assert done.returncode == 0
    assert json.loads(done.stdout)["nodes"]  # the JSON, and nothing else
    assert b"recording\xe2\x80\xa6 " in seen and b" nodes" in seen  # "recording… N nodes"
    assert seen.endswith(b"\r\x1b[2K")  # the line cleared at the end
    plain = subprocess.run([sys.executable, "-c", ENTRY, str(root / "scenarios" / "chain.py"),
                            "--export", "json"], capture_output=True, cwd=root, timeout=120)
    assert plain.returncode == 0 and b"recording" not in plain.stderr


def _on_a_terminal(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, bytes]:
    """mgtui run with stderr a terminal (a pty): the run, and what stderr showed."""
    import os
    import pty

    master, slave = pty.openpty()
    done = subprocess.run([sys.executable, "-c", ENTRY, *args], stdout=subprocess.PIPE,
                          stderr=slave, cwd=cwd, timeout=120)
    os.close(slave)
    seen = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # (the pty's other end is closed: all read)
            break
        if not data:
            break
        seen += data
    os.close(master)
    return done, seen


def test_a_save_and_a_load_show_their_progress_on_a_terminal_stderr(tmp_path):
    """`--save` shows a bar of the steps written, and `--export` of a saved trace a bar
    of the file read, each cleared at the end, on stderr when it is a terminal."""
    root = Path(__file__).resolve().parent.parent.parent
    saved = tmp_path / "mlp.mgtrace"
    done, seen = _on_a_terminal([str(root / "scenarios" / "mlp.py"), "--save", str(saved)], root)
    assert done.returncode == 0 and saved.is_file()
    assert "saving █".encode() in seen and b" 100%" in seen and seen.endswith(b"\r\x1b[2K")
    done, seen = _on_a_terminal([str(saved), "--export", "json"], root)
    assert done.returncode == 0 and json.loads(done.stdout)["nodes"]  # stdout: the JSON alone
    assert "loading █".encode() in seen and b" 100%" in seen and seen.endswith(b"\r\x1b[2K")
    plain = subprocess.run([sys.executable, "-c", ENTRY, str(saved), "--export", "json"],
                           capture_output=True, cwd=root, timeout=120)
    assert plain.returncode == 0 and b"loading" not in plain.stderr
