"""Snapshot tests of the debugger at 80×24 and 120×40 (pytest-textual-snapshot).

Each snapshot was looked at by eye before it was accepted. Regenerate with
`pytest tests/tui/test_app_snapshots.py --snapshot-update`, then look at every changed one
in snapshot_report.html before committing.
"""

from __future__ import annotations

import pytest

from mgtui.tui.app import MgtuiApp

from tests.conftest import SCENARIOS

pytestmark = pytest.mark.usefixtures("clean_env", "highlighted", "no_user_config")


@pytest.fixture(scope="module")
def highlighted():
    """Source panes highlighted, as in every accepted snapshot. The app warms the
    highlighter only after a recording in its worker, so without this a snapshot would
    depend on which tests ran before it in the same process."""
    from mgtui.tui.widgets.source_view import warm_highlighter

    warm_highlighter()


@pytest.fixture
def no_user_config(monkeypatch, tmp_path):
    """The default keys, whatever the developer's own ~/.config/mgtui holds."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


async def wait_loaded(pilot) -> None:
    app = pilot.app
    for _ in range(1000):
        await pilot.pause(0.02)
        if not app.loading and (app.debugger.trace is not None or app.screen is not app.debugger):
            break
    await app.workers.wait_for_complete()
    await pilot.pause()


def go_to_pass(kind: str, into: int):
    """run_before: wait for the trace, then go `into` steps into the first `kind` pass."""

    async def run_before(pilot) -> None:
        await wait_loaded(pilot)
        screen = pilot.app.debugger
        p = next(p for p in screen.trace.passes if p.kind == kind)
        screen.goto(p.start + into)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES)
def test_chain_at_a_forward_step(snap_compare, size):
    # step 4 creates e = a * b
    app = MgtuiApp(SCENARIOS / "chain.py", step=4)
    assert snap_compare(app, terminal_size=size, run_before=wait_loaded)


@pytest.mark.parametrize("size", SIZES)
def test_neuron_at_a_backward_step_with_accumulation(snap_compare, size):
    # step 13: n._backward() adds into (x1*w1 + x2*w2).grad and b.grad
    app = MgtuiApp(SCENARIOS / "neuron.py", step=13)
    assert snap_compare(app, terminal_size=size, run_before=wait_loaded)


@pytest.mark.parametrize("size", SIZES)
def test_add_self_at_its_second_contribution(snap_compare, size, add_self):
    # step 4: b._backward() adds into a.grad twice
    app = MgtuiApp(add_self, step=4)
    assert snap_compare(app, terminal_size=size, run_before=wait_loaded)


@pytest.mark.parametrize("size", SIZES)
def test_mlp_in_a_zero_grad_pass(snap_compare, size):
    app = MgtuiApp(SCENARIOS / "mlp.py")
    assert snap_compare(app, terminal_size=size, run_before=go_to_pass("zero_grad", 3))


@pytest.mark.parametrize("size", SIZES)
def test_no_color(snap_compare, size, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = MgtuiApp(SCENARIOS / "neuron.py", step=13)
    assert snap_compare(app, terminal_size=size, run_before=wait_loaded)


@pytest.mark.parametrize("size", SIZES)
def test_error_screen_for_a_syntax_error(snap_compare, size, write_scenario, monkeypatch):
    path = write_scenario("bad", '''
        """Bad syntax"""
        from engine import Value
        a = Value(2.0
        b = 3
    ''')
    monkeypatch.chdir(path.parent)  # the message names the file as given: bad.py
    app = MgtuiApp(path.relative_to(path.parent))
    assert snap_compare(app, terminal_size=size, run_before=wait_loaded)


@pytest.mark.parametrize("size", SIZES)
def test_tensor_neuron_at_a_forward_step(snap_compare, size):
    # step 4 makes x@w: (1, 2) @ (2, 1) → (1, 1), its inputs' arrays in full
    app = MgtuiApp(SCENARIOS / "tensor_neuron.py", step=4)
    assert snap_compare(app, terminal_size=size, run_before=wait_loaded)


@pytest.mark.parametrize("size", SIZES)
def test_tensor_neuron_at_the_matmul_backward_step(snap_compare, size):
    # step 11: (x@w)._backward() adds into x.grad and w.grad, each rule with its shapes
    app = MgtuiApp(SCENARIOS / "tensor_neuron.py", step=11)
    assert snap_compare(app, terminal_size=size, run_before=wait_loaded)


@pytest.mark.parametrize("size", SIZES)
def test_tensor_mlp_at_the_broadcast_bias_step(snap_compare, size):
    # the first layer's `+` in the first backward pass: the bias's gradient is summed
    # over the 100 rows it was broadcast along, (100, 16) → (1, 16)
    app = MgtuiApp(SCENARIOS / "tensor_mlp.py", step=88)
    assert snap_compare(app, terminal_size=size, run_before=wait_loaded)
