"""The recording core stays a tree: no import cycle in `mgtui`, and recording never
imports the doctor (the doctor drives the recorder through its hooks, as pdb drives bdb).

Checked on the import graph itself (grimp, which import-linter is built on), so a new
module is covered without being added to a list.
"""

from __future__ import annotations

import grimp
import pytest

# The modules that record: the lifecycle, the store, the probes, the sandbox, the runner's
# child. (Only `mgtui.doctor` may reach into them, never the other way.)
RECORDING = ("mgtui.recorder", "mgtui.records", "mgtui.probes", "mgtui.dict_hooks",
             "mgtui.slots_hooks", "mgtui.inline", "mgtui.inline_helpers",
             "mgtui.inline_probe", "mgtui.sandbox", "mgtui.scenario", "mgtui.inprocess",
             "mgtui.runner_child", "mgtui.call_values", "mgtui.naming", "mgtui.defaults")


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("mgtui")


def cycles(graph) -> list[list[str]]:
    """The import cycles among the modules of `graph` (its strongly connected parts of
    more than one module), by Tarjan's algorithm, without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                part = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    part.append(w)
                    if w == v:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def test_the_cycle_finder_finds_a_cycle():
    """The check is not one that cannot fail: a → b → a is found, c alone is not."""
    graph = grimp.ImportGraph()
    for name in ("a", "b", "c"):
        graph.add_module(name)
    graph.add_import(importer="a", imported="b")
    graph.add_import(importer="b", imported="a")
    graph.add_import(importer="c", imported="a")
    assert cycles(graph) == [["a", "b"]]


def test_no_import_cycle_in_mgtui(graph):
    # (`mgtui.serve`'s own cycle is issue 22's, being taken apart on its own branch.)
    found = [part for part in cycles(graph)
             if not all(m.startswith("mgtui.serve.") for m in part)]
    assert found == []


def test_recording_never_imports_the_doctor_or_the_app(graph):
    for module in RECORDING:
        imported = graph.find_modules_directly_imported_by(module)
        above = sorted(m for m in imported if m.startswith(("mgtui.doctor", "mgtui.app",
                                                            "mgtui.cli", "mgtui.widgets")))
        assert above == [], module
