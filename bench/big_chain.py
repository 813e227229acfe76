"""A chain of a million nodes: exported as JSON within the recording's memory, and
opened in the app with `G` and `g` fast.

1. Export. A fresh process records the chain (in the runner's child, as
   `mgtui FILE --export json` does) and notes its peak RSS; then it writes the trace as
   JSON to /dev/null and notes the peak RSS again. Target: at most 1.3× the recording's.
   `--old` also measures, in another fresh process, the export as it was before issue
   12 (a dict per event, then `json.dumps`).
2. Reading the JSON back (`mgtui.trace.export.load`), and the binary file, with peak RSS.
3. The app. The saved trace opened in a headless app at 80×24; the time to load and
   show it, then `G` and `g`, each from the key to the repainted screen. Target: under
   0.5 s each.

    python bench/big_chain.py [--nodes 1000000] [--old]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCENARIO = '''"""A chain of {nodes:,} nodes: y = y + 1e-6, over and over."""
from engine import Value

y = Value(1.0, label="y0")
for _ in range({steps}):
    y = y + 1e-6  # two nodes: the constant and the sum
y.backward()
'''

PEAK = "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) * 1024"

EXPORT = textwrap.dedent("""
    import json, os, sys, time
    from mgtui.run.runner import run
    t = time.perf_counter()
    result = run({path!r}, max_nodes=3_000_000, max_memory=20 << 30)
    trace = result.trace
    recorded, rss_recorded = time.perf_counter() - t, {peak}
    t = time.perf_counter()
    with open(os.devnull, "w") as out:
        {export}
    exported, rss_exported = time.perf_counter() - t, {peak}
    if {save!r}:
        from mgtui.trace.export import write_json
        from mgtui.trace.binary import dumpb
        with open({save!r} + ".json", "w") as out:
            write_json(trace, out)
        open({save!r} + ".mgtrace", "wb").write(dumpb(trace))
    print(json.dumps(dict(nodes=trace.node_count, events=len(trace), recorded=recorded,
                          rss_recorded=rss_recorded, exported=exported,
                          rss_exported=rss_exported)))
""")

NEW_EXPORT = "from mgtui.trace.export import write_json; write_json(trace, out)"
# The export before issue 12: a dict per node and per event, then json.dumps of it all.
OLD_EXPORT = textwrap.dedent("""\
        from mgtui.trace.export import num
        doc = {"nodes": [{"id": n.id, "label": n.label, "op": n.op, "children": list(n.children),
                          "data": num(n.data), "line": n.line, "final_data": num(n.final_data),
                          "final_grad": num(n.final_grad)} for n in trace.nodes()],
               "events": [{"kind": e.kind.value, "node": e.node} if e.kind == "create" else
                          {"kind": e.kind.value, "node": e.node, "writes": [
                              {"node": w.node, "before": num(w.before), "after": num(w.after),
                               "line": w.line} for w in e.writes], "line": e.line,
                           "closure": e.closure} if e.kind == "backward" else
                          {"kind": e.kind.value, "node": e.node, "before": num(e.before),
                           "after": num(e.after), "line": e.line} for e in trace.events()]}
        out.write(json.dumps(doc, allow_nan=False))""")


def body(code: str) -> str:
    """Code for the body of the `with` block in EXPORT (indented by four)."""
    return textwrap.indent(code, "    ").lstrip()

READ = textwrap.dedent("""
    import json, time
    from pathlib import Path
    from mgtui.trace.export import load, from_json
    t = time.perf_counter()
    trace = {read}
    print(json.dumps(dict(seconds=time.perf_counter() - t, rss={peak}, events=len(trace))))
""")

APP = textwrap.dedent("""
    import asyncio, json, time
    from pathlib import Path
    from mgtui.tui.app import MgtuiApp

    async def main():
        out = {{}}
        t = time.perf_counter()
        app = MgtuiApp(Path({path!r}))
        async with app.run_test(size=(80, 24)) as pilot:
            while app.loading or app.debugger.trace is None:
                await pilot.pause(0.01)
            await pilot.pause()
            out["open"] = time.perf_counter() - t
            for key in ("G", "g", "G", "g"):
                t, cpu = time.perf_counter(), time.process_time()
                await pilot.press(key)
                await pilot.pause()
                out.setdefault(key, []).append(time.perf_counter() - t)
                out.setdefault(key + "cpu", []).append(time.process_time() - cpu)
            out["step"] = app.debugger.position
            out["nodes"] = app.debugger.trace.node_count
        print(json.dumps(out))

    asyncio.run(main())
""")


def child(program: str) -> dict:
    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True,
                          text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--old", action="store_true", help="also measure the export before issue 12")
    args = parser.parse_args()
    mb = 1 << 20
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "big_chain.py"
        scenario.write_text(SCENARIO.format(nodes=args.nodes, steps=args.nodes // 2 - 1))
        saved = str(Path(tmp) / "big_chain")
        new = child(EXPORT.format(path=str(scenario), peak=PEAK, export=body(NEW_EXPORT), save=saved))
        print(f"{new['nodes']:,} nodes, {new['events']:,} steps, recorded in {new['recorded']:.1f} s")
        runs = [("streamed (write_json)", new)]
        if args.old:
            runs.append(("before: a dict per event", child(EXPORT.format(
                path=str(scenario), peak=PEAK, export=body(OLD_EXPORT), save=""))))
        for name, r in runs:
            print(f"export, {name:26s} {r['exported']:6.1f} s   peak RSS recording "
                  f"{r['rss_recorded'] / mb:7.0f} MB, exporting {r['rss_exported'] / mb:7.0f} MB:"
                  f" {r['rss_exported'] / r['rss_recorded']:.2f}×  (target ≤ 1.3)")
        reads = [(".json", "load(PATH)", "streamed"), (".mgtrace", "load(PATH)", "binary")]
        if args.old:  # as load read JSON before issue 12: the whole document, then the trace
            reads.insert(1, (".json", "from_json(json.loads(Path(PATH).read_text()))",
                             "before: json.loads"))
        for suffix, read, name in reads:
            size = Path(saved + suffix).stat().st_size
            r = child(READ.format(read=read.replace("PATH", repr(saved + suffix)), peak=PEAK))
            print(f"read {suffix:8s} {name:20s} {size / mb:5.0f} MB file   {r['seconds']:6.1f} s"
                  f"   peak RSS {r['rss'] / mb:6.0f} MB")
        # chain.py (15 steps) beside it: what G and g cost in the app whatever the graph
        for name, path in (("chain.py", str(ROOT / "scenarios" / "chain.py")),
                           ("big .mgtrace", saved + ".mgtrace"), ("big .json", saved + ".json")):
            r = child(APP.format(path=path))
            print(f"app on {name:12s} open {r['open']:5.1f} s   G {max(r['G']):.3f} s "
                  f"(CPU {max(r['Gcpu']):.3f})   g {max(r['g']):.3f} s (CPU {max(r['gcpu']):.3f})"
                  f"   slowest of 2 each; target < 0.5 s")


if __name__ == "__main__":
    main()
