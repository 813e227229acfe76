"""PyTorch in a recording, without importing it: the torch adapter
(`mgtui.recording.torch_recorder`, which imports torch) is put on only once the scenario
has torch, so a micrograd scenario never pays for it and mgtui runs without torch
installed.

`TorchWatch` is the torch engine's probe (`mgtui.recording.probes.Probe`), one of the
recorder's probes: it attaches to torch's `Tensor`, at once if torch is loaded already
(the in-code API, a scenario run in-process), and otherwise through a finder on
`sys.meta_path` as soon as the scenario's `import torch` has finished. `detach()` takes
both off again. A scenario that imports torch where it is not installed ends with a
message that says how to install it (`mgtui.recording.extras`).

The doctor checks custom `torch.autograd.Function`s through the recording's hooks, as
it drives every recording (`Hooks.on_function`, `mgtui.doctor.torch_functions`): the
adapter gives it every custom Function's backward call it records.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from typing import Callable

from mgtui.recording.context import RecordingContext
from mgtui.recording.shapes import MICROGRAD, FieldMap

def torch_module(name: str) -> bool:
    """Is `name` torch's own module (its classes are no micrograd-style values)?"""
    return name == "torch" or name.startswith("torch.")


class TorchWatch:
    """The torch engine's probe of one recording (`context`, what a probe may read and
    write of it), on while it runs:
    the adapter (`mgtui.recording.torch_recorder`) once the scenario has torch."""

    def __init__(self, context: RecordingContext) -> None:
        self.context = context
        self.records = context.records
        self.adapter = None  # the adapter, once the scenario has torch
        self.finder: _TorchFinder | None = None

    @property
    def used(self) -> bool:
        """Did the scenario use torch (was the adapter put on)?"""
        return self.adapter is not None

    @property
    def recorded(self) -> bool:
        """Did the adapter record a tensor (is the run the torch engine's)? (With torch
        loaded already, in-process, the adapter is on for a micrograd run too.)"""
        return self.adapter is not None and self.adapter.recorded

    def start(self) -> None:
        if "torch" in sys.modules and sys.modules["torch"] is not None:
            self.attach(sys.modules["torch"].Tensor)
        else:
            self.finder = _TorchFinder(lambda: self.attach(sys.modules["torch"].Tensor))
            sys.meta_path.insert(0, self.finder)

    def attach(self, cls: type, fields: FieldMap = MICROGRAD) -> bool:
        """Record torch's tensors from now on: `cls` must be torch's `Tensor` (False for
        any other class: the class probes take those)."""
        torch = sys.modules.get("torch")
        if torch is None or cls is not getattr(torch, "Tensor", None):
            return False
        if self.adapter is None:
            from mgtui.recording.torch_recorder import TorchRecorder

            hooks = self.context.hooks
            self.adapter = TorchRecorder(self.context, lambda: hooks.on_function)
            self.adapter.attach()
        return True

    def detach(self) -> None:
        if self.finder is not None:
            try:
                sys.meta_path.remove(self.finder)
            except ValueError:
                pass
            self.finder = None
        if self.adapter is not None:
            self.adapter.detach()

    def names(self, scope: dict) -> list[tuple[int, str]]:
        """(id, name) of the tensors recorded that `scope` (the scenario's globals)
        holds: by variable, and a module's parameters by their path (`lin1.weight`)."""
        return self.adapter.names(scope) if self.adapter is not None else []


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Finds `torch` as the finders after it would, and has `then()` called once its
    module has run."""

    def __init__(self, then: Callable[[], None]) -> None:
        self.then = then

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, then = spec.loader, self.then

        class Then(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                then()

        spec.loader = Then()
        return spec
