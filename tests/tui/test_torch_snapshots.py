"""The torch neuron in the app at 80×24 (pytest-textual-snapshot): the lecture's
gradients at the end of torch's backward pass. Looked at by eye before it was accepted;
regenerate with `--snapshot-update` and look again."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from mgtui.tui.app import MgtuiApp  # noqa: E402

from tests.conftest import SCENARIOS  # noqa: E402
from tests.tui.test_app_snapshots import highlighted, no_user_config, wait_loaded  # noqa: E402,F401

pytestmark = pytest.mark.usefixtures("clean_env", "highlighted", "no_user_config")


def test_torch_neuron_at_x1_w1s_mul_backward(snap_compare):
    # step 19: MulBackward0 of x1*w1 gives x1.grad = -1.5 and w1.grad = 1.0
    app = MgtuiApp(SCENARIOS / "torch_neuron.py", step=19)
    assert snap_compare(app, terminal_size=(80, 24), run_before=wait_loaded)


def test_torch_neuron_at_its_last_step(snap_compare):
    # step 21: every gradient is the lecture's (x1 -1.5, w1 1, x2 0.5, w2 0)
    app = MgtuiApp(SCENARIOS / "torch_neuron.py", step=21)
    assert snap_compare(app, terminal_size=(80, 24), run_before=wait_loaded)
