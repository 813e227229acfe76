"""PyTorch in a recording, without importing it: the torch adapter
(`mgtui.recording.torch_probe`, which imports torch) is put on only once the scenario
has torch, so a micrograd scenario never pays for it and mgtui runs without torch
installed.

`TorchWatch.start()` attaches the adapter at once if torch is loaded already (the
in-code API, a scenario run in-process), and otherwise puts a finder on `sys.meta_path`
that attaches it as soon as the scenario's `import torch` has finished. `stop()` takes
both off again. A scenario that imports torch where it is not installed ends with
`MISSING_TORCH`, which says how to install it.

`function_check` is how the doctor checks custom `torch.autograd.Function`s without the
recording knowing what for (`mgtui.doctor.torch_functions`): while it is set, the adapter
gives it every custom Function's backward call it records.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from typing import Callable

MISSING_TORCH = ("this scenario uses PyTorch, which is not installed here: "
                 "install it with  pip install 'mgtui[torch]'")

# Set by the doctor (`mgtui.doctor.torch_functions`): called with each custom Function's
# backward call as it is recorded (`torch_backward.FunctionCall`).
function_check: Callable[[object], None] | None = None


def set_function_check(check: Callable[[object], None] | None) -> None:
    global function_check
    function_check = check


def torch_module(name: str) -> bool:
    """Is `name` torch's own module (its classes are no micrograd-style values)?"""
    return name == "torch" or name.startswith("torch.")


def missing_torch(exc: BaseException) -> bool:
    """Is `exc` the scenario's `import torch` failing because torch is not installed?"""
    return (isinstance(exc, ModuleNotFoundError)
            and (exc.name or "").partition(".")[0] == "torch")


class TorchWatch:
    """The torch adapter of one recording (`rec`, a `Recorder`), on while it runs."""

    def __init__(self, rec) -> None:
        self.rec = rec
        self.probe = None  # the adapter, once the scenario has torch
        self.finder: _TorchFinder | None = None

    @property
    def used(self) -> bool:
        """Did the scenario use torch (was the adapter put on)?"""
        return self.probe is not None

    def start(self) -> None:
        if "torch" in sys.modules and sys.modules["torch"] is not None:
            self.attach()
        else:
            self.finder = _TorchFinder(self.attach)
            sys.meta_path.insert(0, self.finder)

    def attach(self) -> None:
        if self.probe is not None:
            return
        from mgtui.recording.torch_probe import TorchProbe

        self.probe = TorchProbe(self.rec, lambda: function_check)
        self.probe.attach()

    def stop(self) -> None:
        if self.finder is not None:
            try:
                sys.meta_path.remove(self.finder)
            except ValueError:
                pass
            self.finder = None
        if self.probe is not None:
            self.probe.detach()

    def names(self, scope: dict) -> list[tuple[int, str]]:
        """(id, name) of the tensors recorded that `scope` (the scenario's globals)
        holds: by variable, and a module's parameters by their path (`lin1.weight`)."""
        return self.probe.names(scope) if self.probe is not None else []


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
