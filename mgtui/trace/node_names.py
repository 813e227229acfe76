"""The names a builder's nodes go by when they have no label (the variable a node was
bound to, or its path from a global object: `mgtui.recording.naming`), as a
`TraceBuilder` keeps them while a trace grows: what `NodeNames` holds."""

from __future__ import annotations

from array import array
from itertools import compress
from typing import Sequence

from mgtui.safe import inert_line
from mgtui.trace.model import CodedTexts, Texts
from mgtui.trace.records import TraceFormatError

CODE_LIMIT = {"B": 256, "H": 65536, "i": 2**31}  # how many strings a code column tells apart


class NodeNames:
    """Each distinct name once, in `texts` ("" first), and each node's number among
    them (0: none), by id, in `codes`: an array as narrow as holds them, a byte a node
    for a training loop's few names."""

    def __init__(self) -> None:
        self.codes = array("B")
        self.texts: list[str] = [""]
        self._numbers: dict[str, int] = {"": 0}

    def grow(self, n: int) -> None:
        """Room for `n` more nodes, without names."""
        self.codes.frombytes(bytes(n * self.codes.itemsize))

    def add(self, nid: int, name: str, nodes: int) -> None:
        """Node `nid` (of `nodes`) goes by `name`."""
        if not (isinstance(name, str) and isinstance(nid, int) and 0 <= nid < nodes):
            raise TraceFormatError("names", f"no node {nid!r} to name {name!r}")
        self.codes[nid] = self._number(name)

    def add_run(self, base: int, names: Sequence[str], nodes: int) -> None:
        """The names of nodes `base` on (of `nodes`), "" for a node without one, checked."""
        try:
            "".join(names)  # (strings, checked at C speed)
        except TypeError:
            for k, name in enumerate(names):
                self.add(base + k, name, nodes)  # (raises, naming the first that is not)
            return
        if not names or len(names) > len(self.codes) - base:
            for k in compress(range(len(names)), names):
                self.add(base + k, names[k], nodes)  # (and raises for a node not there)
            return
        for name in set(names) - self._numbers.keys():
            self._number(name)
        self.codes[base:base + len(names)] = array(
            self.codes.typecode, map(self._numbers.__getitem__, names))

    def _number(self, name: str) -> int:
        """The number of `name` among `texts` (added if new)."""
        k = self._numbers.get(name)
        if k is None:
            k = self._numbers[name] = len(self.texts)
            self.texts.append(name)
            if k >= CODE_LIMIT[self.codes.typecode]:  # more names than it holds
                self.codes = array("H" if k < CODE_LIMIT["H"] else "i", self.codes)
        return k

    def texts_of(self, n: int, last: bool) -> Texts:
        """The names of the first `n` nodes, made inert: each distinct name made inert
        once, and each node's number of its name (`CodedTexts`), which the `last` build
        hands over."""
        if len(self.texts) == 1:
            return Texts.of({}, n)
        codes = self.codes if last and len(self.codes) == n else self.codes[:n]
        return CodedTexts(codes, tuple(map(inert_line, self.texts)))
