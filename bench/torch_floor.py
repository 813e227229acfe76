"""How cheap can a recording of torch through a `TorchFunctionMode` be? (issue 32:
`scenarios/torch_mlp.py`'s training step at most 2.5x plain, CPU.)

mgtui's torch adapter sees the scenario's torch calls through one `TorchFunctionMode`
(`mgtui.recording.torch_mode`) and each backward step through a hook on its autograd
node. This bench builds the least a recorder of that design has to do, here and in
nothing but a few lines, and times it, layer by layer, against the plain run and
against mgtui's own recording, side by side in one process:

1. `mode`: a mode that passes each call on, and `torch.autograd.backward` wrapped;
2. `+ lines`: each tensor autograd tracks, its scenario line found (a walk up the frames);
3. `+ values`: its value copied (a numpy copy of its memory);
4. `+ children`: its node's children, from `next_functions` (each node marked in its
   autograd node's `metadata`);
5. `+ backward hooks`: a hook on its autograd node that copies each gradient the node
   passes on while a backward pass runs: each step of the pass, in the engine's order.

That is less than a trace of the run is: no leaves (the parameters' values), no names,
no events for `zero_grad` and the updates, no store and no chunks. Two other layers,
each beside row 4:

- `raw grads`: the hook keeps the gradient tensors it is given, uncopied (the issue's
  lean prototype: "each edge's gradient kept raw");
- `retain_grad`: no Python hook in the backward at all: each tracked tensor's
  `retain_grad()` (a hook in C++), its grad read and copied after the pass. This
  loses what a step-through debugger is for: the order of the steps and what each step
  passed to a tensor that two ops used.

CPU time of this process (`time.process_time`), a step = (40 steps - 10 steps) / 30,
alternating, medians; torch on one thread. Each row's recorder checks it saw every node.

    python bench/torch_floor.py [--rounds 9]
    python bench/torch_floor.py --quick   # seconds: does it still run?
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from contextlib import redirect_stdout
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # time this tree's recorder, not whichever mgtui is installed
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

import torch_overhead as to  # noqa: E402

LAYERS = ["mode", "+ lines", "+ values", "+ children", "+ backward hooks"]
BESIDE = ["raw grads", "retain_grad"]
TARGET = 2.5


class Floor:
    """The least a recorder of the mode's design keeps, up to layer `depth` (an index
    into `LAYERS`), or one of `BESIDE` (`kind`)."""

    def __init__(self, path: str, depth: int, kind: str = "") -> None:
        self.path, self.depth, self.kind = path, depth, kind
        self.nodes: list = []  # (node, the function, line, value, children)
        self.steps: list = []  # (node, the gradients it passed on)
        self.held: list = []  # (node, tensor) for `retain_grad`
        self.running = [False]  # a backward pass under way


def noted(floor: Floor, nid: int, grads_in, grads_out) -> None:
    """An autograd node's hook: the step, its gradients copied."""
    if floor.running[0]:
        floor.steps.append((nid, [g.detach().numpy().copy() if g is not None else None
                                  for g in grads_in]))


def noted_raw(floor: Floor, nid: int, grads_in, grads_out) -> None:
    """`noted`, the gradients kept as they are."""
    if floor.running[0]:
        floor.steps.append((nid, grads_in))


class FloorMode(TorchFunctionMode):
    def __init__(self, floor: Floor) -> None:
        super().__init__()
        self.floor = floor

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **kwargs) if kwargs else func(*args)
        floor = self.floor
        if floor.depth == 0 or type(out) is not torch.Tensor or not out.requires_grad:
            return out
        fn = out.grad_fn
        if fn is None:
            return out
        f = sys._getframe(1)
        while f is not None and f.f_code.co_filename != floor.path:
            f = f.f_back
        line = f.f_lineno if f is not None else 0
        nid = len(floor.nodes)
        value = out.detach().numpy().copy() if floor.depth >= 2 else None
        kids = None
        if floor.depth >= 3:
            kids = [nf.metadata.get("floor") if nf is not None else None
                    for nf, _ in fn.next_functions]
            fn.metadata["floor"] = nid
        floor.nodes.append((nid, func, line, value, kids))
        if floor.kind == "retain_grad":
            out.retain_grad()
            floor.held.append((nid, out))
        elif floor.kind == "raw grads":
            fn.register_hook(partial(noted_raw, floor, nid))
        elif floor.depth >= 4:
            fn.register_hook(partial(noted, floor, nid))
        return out


def floor_run(scenario, depth: int, kind: str = "") -> tuple[float, Floor]:
    """The scenario run under the floor's recorder: (CPU time, what it kept)."""
    floor = Floor(str(scenario.path.resolve()), depth, kind)
    backward = torch.autograd.backward

    def wrapped(*args, **kwargs):
        floor.running[0] = True
        try:
            return backward(*args, **kwargs)
        finally:
            floor.running[0] = False
            for nid, t in floor.held:  # (`retain_grad`: each grad, read after the pass)
                g = t.grad
                floor.steps.append((nid, g.detach().numpy().copy() if g is not None else None))
            floor.held.clear()

    scope = {"__name__": "__main__", "__file__": str(scenario.path)}
    start = time.process_time()
    torch.autograd.backward = wrapped
    try:
        with redirect_stdout(io.StringIO()), FloorMode(floor):
            exec(scenario.code, scope)
    finally:
        torch.autograd.backward = backward
    return time.process_time() - start, floor


def rows() -> list[tuple[str, object]]:
    """(label, scenario -> CPU time) for each row, plain first."""
    out: list[tuple[str, object]] = [("plain", lambda sc: to.plain(sc)[0])]
    for depth, label in enumerate(LAYERS):
        out.append((label, partial(lambda sc, d: floor_run(sc, d)[0], d=depth)))
    for kind in BESIDE:
        out.append((f"{kind} (beside {LAYERS[3]})",
                    partial(lambda sc, k: floor_run(sc, 3, k)[0], k=kind)))
    out.append(("mgtui's recording", lambda sc: sum(to.recorded(sc)[:2])))
    return out


def seen_every_node(scenario, steps: int) -> None:
    """Each layer saw the step's tensors (10 a training step of `torch_mlp.py`: three
    `addmm`s, three `tanh`s, `squeeze`, `sub`, `pow`, `sum`; mgtui records the weights'
    transposes inside `F.linear` too) and, with hooks, a backward step for each."""
    for depth in range(1, len(LAYERS)):
        nodes = len(floor_run(scenario, depth)[1].nodes)
        assert nodes == 10 * steps, (LAYERS[depth], nodes)
    for kind in ("", *BESIDE):
        floor = floor_run(scenario, len(LAYERS) - 1 if not kind else 3, kind)[1]
        assert len(floor.steps) == len(floor.nodes) == 10 * steps, (kind, len(floor.steps))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--quick", action="store_true", help="one round: does it run?")
    args = ap.parse_args()
    torch.set_num_threads(1)
    scenario = to.load_scenario(to.MLP)
    long_n = 11 if args.quick else 40
    short, long = scenario, to.steps(scenario, long_n)
    seen_every_node(short, 10)
    table = rows()
    times = {label: ([], []) for label, _ in table}
    for k, sc in enumerate((short, long)):  # (warm: torch's first calls, the caches)
        for _, run in table:
            run(sc)
    for _ in range(1 if args.quick else args.rounds):
        for k, sc in enumerate((short, long)):
            for label, run in table:
                times[label][k].append(run(sc))
    per = {label: (statistics.median(b) - statistics.median(a)) / (long_n - 10)
           for label, (a, b) in times.items()}
    print(f"a training step of torch_mlp.py, CPU ({long_n} steps against 10, medians of "
          f"{1 if args.quick else args.rounds}, alternating; target <= {TARGET:g}x plain):")
    for label, t in per.items():
        print(f"  {label:34s} {t * 1000:6.3f} ms  {t / per['plain']:4.2f}x plain")


if __name__ == "__main__":
    main()
