"""Fixtures for the app tests: a clean environment, small scenarios, a loaded app."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


@pytest.fixture
def clean_env(monkeypatch):
    """No NO_COLOR and no TEXTUAL_* settings from the developer's shell: the app and its
    snapshots look the same everywhere."""
    for name in list(os.environ):
        if name.startswith("TEXTUAL_SNAPSHOT"):  # pytest-textual-snapshot's own
            continue
        if name == "NO_COLOR" or name.startswith("TEXTUAL_") or name == "COLORTERM":
            monkeypatch.delenv(name, raising=False)
    # The source pane shows plain text until pygments' lexer is built, once per process,
    # by whichever load path comes first. Build it now, so that what a test sees does not
    # depend on which tests ran before it in the same process (or on the xdist worker).
    from mgtui.widgets.source_view import warm_highlighter

    warm_highlighter()
    yield
    # the recorder swaps sys.stdout while it runs; never leave a test with a stale one
    if sys.stdout is not sys.__stdout__ and type(sys.stdout).__name__ in ("StringIO", "_PrintCapture"):
        sys.stdout = sys.__stdout__


@pytest.fixture
def write_scenario(tmp_path):
    """Write a scenario file into tmp_path: write_scenario("name", source) -> Path."""

    def write(name: str, source: str) -> Path:
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
        return path

    return write


@pytest.fixture
def add_self(write_scenario):
    """`b = a + a`: a used twice, so a.grad gets two contributions (the += lesson)."""
    return write_scenario("add_self", '''
        """b = a + a: one node used twice

        `a` feeds both inputs of `b`, so `b._backward` adds into `a.grad` twice.
        """
        from engine import Value

        a = Value(3.0, label='a')
        b = a + a; b.label = 'b'
        b.backward()
        print("a.grad =", a.grad)
    ''')
