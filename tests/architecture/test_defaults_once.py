"""Every default a recording starts from is defined once (`mgtui/defaults.py`), and the
node id's attribute name once (`mgtui/recording/store.py`): the rest import them (issue 18)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent.parent / "mgtui"
ONCE = {"DEFAULT_MAX_NODES", "DEFAULT_MAX_MEMORY", "DEFAULT_TIMEOUT", "GC_GEN0_THRESHOLD",
        "FLUSH_EVERY", "ID"}


def assignments(package: Path = PACKAGE) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {name: [] for name in ONCE}
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # module level: a constant, not a local
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and name.id in ONCE:
                        found[name.id].append(path.relative_to(package.parent).as_posix())
    return found


def test_each_default_is_defined_in_one_module():
    found = assignments()
    assert {name: places for name, places in found.items() if len(places) != 1} == {}


def test_the_check_sees_a_second_definition(tmp_path):
    copy = tmp_path / "mgtui"
    copy.mkdir()
    (copy / "a.py").write_text("DEFAULT_MAX_NODES = 1\n")
    (copy / "b.py").write_text("X = 2\nDEFAULT_MAX_NODES: int = 1\n")
    assert assignments(copy)["DEFAULT_MAX_NODES"] == ["mgtui/a.py", "mgtui/b.py"]
