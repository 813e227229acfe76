"""The app of `mgtui diff` at 80×24 (pytest-textual-snapshot): opened at the first
difference, both sides' lines and values in the comparison pane. Looked at by eye before
it was accepted; regenerate with `--snapshot-update` and look again."""

from __future__ import annotations

import pytest

from mgtui.diff import compare
from mgtui.tui.app import diff_app

from tests.tui.test_app_snapshots import highlighted, no_user_config, wait_loaded  # noqa: F401

pytestmark = pytest.mark.usefixtures("clean_env", "highlighted", "no_user_config")


def test_diff_opens_at_the_wrong_tanh_with_both_sides(snap_compare, monkeypatch):
    from tests.diff.test_diff import ROOT

    monkeypatch.chdir(ROOT)  # the pane shows paths relative to here
    c = compare("tests/data/diff/wrong_tanh.py", "neuron")
    assert snap_compare(diff_app(c), terminal_size=(80, 24), run_before=wait_loaded)
