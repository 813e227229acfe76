"""The names the torch adapter (`mgtui.recording.torch_recorder`) gives its tensors: a
tensor an assignment binds as it is made is named by its variable (`loss`, at every
training step); at the end, the scenario's globals name the rest, a module's parameters
by their path (`lin1.weight`)."""

from __future__ import annotations

from typing import Callable

import torch


class TensorNames:
    """The names given so far (node -> name, also appended to the recording's
    `name_ids` / `name_texts`), and the tensors bound by an assignment whose frame has
    not stored them yet (`pending`). `nid_of(t)` is the adapter's: tensor -> node or None."""

    def __init__(self, records, spots: dict, nid_of: Callable, path: str) -> None:
        self.records = records
        self.path = path  # the scenario's file
        self.spots = spots  # assignments, by code and instruction (`naming`)
        self.nid_of = nid_of
        self.pending: list[tuple] = []  # tensors made under one, until it is stored
        self.named: dict[int, str] = {}

    def made(self, frame, t, nid: int) -> None:
        """`bound`, from the scenario's frame whose call made tensor `t` (node `nid`): the
        torch call's caller `frame` itself, or the nearest scenario frame above it for a
        tensor made inside a library's function (`loss = F.cross_entropy(logits, y)`:
        `nll_loss` under it makes the tensor that `loss` then holds)."""
        path = self.path
        if frame.f_code.co_filename != path:
            frame = frame.f_back
            while frame is not None and frame.f_code.co_filename != path:
                frame = frame.f_back
            if frame is None:
                return
            spots = self.spots.get(id(frame.f_code))
            if not spots or frame.f_lasti not in spots:
                return  # (most: an op inside a module's forward, its call no assignment's)
        self.bound(frame, t, nid)

    def bound(self, frame, t, nid: int) -> None:
        """Tensor `t` (node `nid`) was made by a torch call straight from the
        scenario's `frame`: if that instruction is an assignment's value
        (`mgtui.recording.naming`'s spots), the variable names it once the frame has
        stored it (`loss`, at every training step)."""
        if self.pending:
            self.settle(frame)
        spots = self.spots.get(id(frame.f_code))
        spot = spots.get(frame.f_lasti) if spots else None
        if spot is not None:
            self.pending.append((frame, frame.f_lasti, spot[1], spot[0], id(t), nid))

    def settle(self, now=None) -> None:
        """Name the pending tensors whose frame has moved on from their statement (all
        of them, `now` None: the run has ended) if their variable holds them. One made
        at the very instruction `now` is at has moved on: a loop has come back to it
        (`out = lin(x).sum()` in each round, with no other name bound between)."""
        keep = []
        for entry in self.pending:
            frame, start, end, target, address, nid = entry
            if now is not None and frame is now and start < frame.f_lasti <= end:
                keep.append(entry)
                continue
            try:
                held = frame.f_locals.get(target)
            except Exception:  # noqa: BLE001 - a frame that cannot be read: no name
                held = None
            if id(held) == address and nid not in self.named and self.nid_of(held) == nid:
                self._give(nid, target)
        self.pending = keep

    def _give(self, nid: int, name: str) -> None:
        self.named[nid] = name
        self.records.name_ids.append(nid)
        self.records.name_texts.append(name)

    def names(self, scope: dict) -> list[tuple[int, str]]:
        """Every name given: the variables that bound tensors as they were made, then
        (for the rest) the scenario's globals, a module's parameters by their path."""
        self.settle()
        modules, tensors = [], []
        for name, v in list(scope.items()):
            if name.startswith("_"):
                continue
            if isinstance(v, torch.Tensor):
                tensors.append((name, v))
            elif isinstance(v, torch.nn.Module):
                modules.append((name, v))
        for name, module in modules:  # (first: a loop's `p` is a parameter's too)
            for path, p in module.named_parameters():
                nid = self.nid_of(p)
                if nid is not None and nid not in self.named:
                    self._give(nid, path if len(modules) == 1 else f"{name}.{path}")
        for name, v in tensors:
            nid = self.nid_of(v)
            if nid is not None and nid not in self.named:
                self._give(nid, name)
        return sorted(self.named.items())
