"""Value shapes: which attributes of a micrograd-style class hold a node's number, its
gradient, its inputs, its backward callable, its op and its label (a `FieldMap`), found
from what the class's `__init__` stores (`ShapeFinder`, the one detector every probe and
the inline rewrite use), or named by the user where the stores cannot tell
(`[tool.mgtui] fields` in a `pyproject.toml` above the scenario, or `--fields`).

The probes hand nodes to the recorder's hooks, the doctor and `mgtui.show` as views
keyed by micrograd's own names (`KEYS`: `data`, `grad`, `_prev`, `_backward`, `_op`,
`label`), whatever the class calls them. A class without an op field has its op
inferred from the method that made the node (`op_of_maker`: `__mul__` gives `*`).
"""

from __future__ import annotations

import dis
import os
import re
import sys
import types
from pathlib import Path
from typing import NamedTuple

from mgtui.errors import NotAGraph, ScenarioLoadError

__all__ = ["FieldMap", "FieldsOptionError", "NotAGraph", "ShapeFinder", "Unrecorded"]

ROLES = ("data", "grad", "inputs", "backward", "op", "label")
REQUIRED_ROLES = ("data", "grad", "inputs", "backward")
# the key a node view reads each role by: micrograd's own name for it
KEYS = {"data": "data", "grad": "grad", "inputs": "_prev", "backward": "_backward",
        "op": "_op", "label": "label"}
# The attribute names each role goes by in the micrograd forks mgtui knows, micrograd's
# first: a class whose `__init__` stores one of each required role is a Value class.
CANDIDATES: dict[str, tuple[str, ...]] = {
    "data": ("data", "value", "val", "_data", "_value"),
    "grad": ("grad", "_grad", "gradient"),
    "inputs": ("_prev", "_children", "children", "parents", "_parents", "prev", "inputs",
               "_inputs"),
    "backward": ("_backward", "backward_fn", "_backward_fn", "grad_fn", "_grad_fn",
                 "backward_func", "_backprop"),
    "op": ("_op", "op", "_operation", "operation"),
    "label": ("label", "_label", "name"),
}
# what an op is called by the method that made its node, where the name is not the op
OPS_OF_METHODS = {
    "__add__": "+", "__radd__": "+", "__iadd__": "+", "__sub__": "-", "__rsub__": "-",
    "__mul__": "*", "__rmul__": "*", "__imul__": "*", "__truediv__": "/",
    "__rtruediv__": "/", "__neg__": "neg", "__pow__": "**", "__rpow__": "**",
    "relu": "ReLU",
}


class FieldMap(NamedTuple):
    """Which attribute of a node holds each role (None: the class has no such field)."""

    data: str = "data"
    grad: str = "grad"
    inputs: str = "_prev"
    backward: str = "_backward"
    op: str | None = "_op"
    label: str | None = "label"

    @property
    def keys(self) -> dict[str, str]:
        """A node view's key (`KEYS`) -> the attribute it reads."""
        return {KEYS[role]: name for role, name in zip(ROLES, self) if name is not None}

    @property
    def renamed(self) -> bool:
        """Does any field go by a name other than micrograd's? (A missing op or label
        does not count.) Then the hooks see its nodes through a view (`KEYS`), and the
        inline rewrite, which records micrograd's names, leaves the class to the hooks."""
        return any(name is not None and name != KEYS[role] for role, name in zip(ROLES, self))

    @property
    def hooked(self) -> tuple[str, ...]:
        """The attributes a hook probe observes: grad, data, backward and label."""
        return tuple(n for n in (self.grad, self.data, self.backward, self.label) if n)

    def describe(self) -> str:
        return ", ".join(f"{role}={name}" for role, name in zip(ROLES, self) if name)


MICROGRAD = FieldMap()


class Sighting(NamedTuple):
    """A class that looked like an autograd value but was not recorded: its name, where
    it is defined, the fields its `__init__` stores that mgtui knows, and why not."""

    name: str
    where: str
    stored: tuple[str, ...]
    why: str


# -- reading what an `__init__` stores ------------------------------------------------------


def init_code(cls: type) -> types.CodeType | None:
    """The code of the `__init__` `cls` defines itself (under the recorder's wrapper)."""
    init = cls.__dict__.get("__init__")
    init = getattr(init, "__wrapped__", init)
    return getattr(init, "__code__", None)


_STORE_ATTR, _LOAD_FAST = dis.opmap["STORE_ATTR"], dis.opmap["LOAD_FAST"]
_EXTENDED_ARG, _CACHE = dis.opmap["EXTENDED_ARG"], dis.opmap.get("CACHE", -1)
REWRITE_TEMPORARY = "__mgtui_o"  # (`mgtui.recording.inline.rewrite.OBJ`; in a class body, `_Value__mgtui_o`)
_KNOWN = frozenset(name for names in CANDIDATES.values() for name in names)
_STORED: dict[int, tuple[types.CodeType, frozenset[str]]] = {}  # by the code's id


def stored_fields(code: types.CodeType) -> frozenset[str]:
    """The attributes `code` (an `__init__`) stores on its first argument (or, in code
    `mgtui.recording.inline.rewrite` rewrote, on the temporary it stores through)."""
    found = _STORED.get(id(code))
    if found is not None and found[0] is code:
        return found[1]
    me = code.co_varnames[0] if code.co_argcount else None
    varnames, attrs, raw = code.co_varnames, code.co_names, code.co_code
    names = set()
    last_op = last_arg = -1
    extended = 0
    for k in range(0, len(raw), 2):  # (what `dis` reads, without its objects: quicker)
        op, arg = raw[k], raw[k + 1] | extended
        if op == _EXTENDED_ARG:
            extended = arg << 8
            continue
        extended = 0
        if op == _CACHE:
            continue
        if op == _STORE_ATTR and last_op == _LOAD_FAST and last_arg < len(varnames):
            local = varnames[last_arg]
            if local == me or local.endswith(REWRITE_TEMPORARY):
                names.add(attrs[arg])
        last_op, last_arg = op, arg
    stored = frozenset(names)
    if len(_STORED) > 4096:
        _STORED.clear()
    _STORED[id(code)] = (code, stored)
    return stored


class ShapeFinder:
    """The one detector: is a class a Value class, and which fields hold what? `given`
    is the user's mapping (role -> attribute), tried first: a class that stores every
    attribute it names takes those, and the rest as found."""

    def __init__(self, given: dict[str, str] | None = None) -> None:
        self.given = dict(given or {})
        self._by_code: dict[int, tuple[types.CodeType, FieldMap | None, str]] = {}
        self._names = _KNOWN | frozenset(self.given.values())  # (`may_be_value`)

    def may_be_value(self, cls: type) -> bool:
        """A quick look, before `fields` and `why_not`: does the `__init__` of `cls`
        name any field a role may go by? (Most classes' do not.)"""
        code = init_code(cls)
        return code is not None and not self._names.isdisjoint(code.co_names)

    def fields(self, cls: type) -> FieldMap | None:
        """The fields of a Value class whose own `__init__` stores them, else None."""
        code = init_code(cls)
        return None if code is None else self.fields_of_code(code)

    def fields_of_code(self, code: types.CodeType) -> FieldMap | None:
        return self._decide(code)[0]

    def why_not(self, cls: type) -> str | None:
        """Why `cls`, whose `__init__` stores some autograd fields, is not a Value class
        (None: it is one, or it looks nothing like one)."""
        code = init_code(cls)
        return None if code is None else self._decide(code)[1] or None

    def _decide(self, code: types.CodeType) -> tuple[FieldMap | None, str]:
        found = self._by_code.get(id(code))
        if found is not None and found[0] is code:
            return found[1], found[2]
        if self.given or _KNOWN.intersection(code.co_names):
            fields, why = self._from_stored(stored_fields(code))
        else:  # (a quick look first: most classes store none of the names)
            fields, why = None, ""
        self._by_code[id(code)] = (code, fields, why)
        return fields, why

    def _from_stored(self, stored: frozenset[str]) -> tuple[FieldMap | None, str]:
        """(the fields, "") or (None, why not: "" for a class that looks nothing like
        an autograd value)."""
        if not stored:
            return None, ""
        chosen: dict[str, str | None] = {}
        unsure: dict[str, list[str]] = {}
        given = self.given if all(name in stored for name in self.given.values()) else {}
        for role in ROLES:
            if role in given:
                chosen[role] = given[role]
                continue
            names = [n for n in CANDIDATES[role] if n in stored]
            if len(names) > 1 and role in REQUIRED_ROLES and names[0] != CANDIDATES[role][0]:
                unsure[role] = names  # `value` and `val`: which is the number?
            chosen[role] = names[0] if names else None
        missing = [r for r in REQUIRED_ROLES if chosen[r] is None]
        present = len(REQUIRED_ROLES) - len(missing)
        if not missing and not unsure:
            return FieldMap(*(chosen[r] for r in ROLES)), ""  # type: ignore[arg-type]
        if chosen["grad"] is None or present < 3:
            return None, ""  # not an autograd value (a grad and most of the rest)
        why = []
        if missing:
            why.append("no field for " + " or ".join(missing))
        why += [f"{role} could be any of {', '.join(names)}" for role, names in unsure.items()]
        return None, "; ".join(why)


# -- the op of a node made by a method ----------------------------------------------------------


def op_of_maker(frame: types.FrameType | None, class_codes: dict | None = None) -> str:
    """The op of a node whose class has no op field, from the method or function that
    called its class (`frame`): `__mul__` gives `*`, `tanh` gives `tanh`, `__pow__` gives
    `**k` with its exponent. A private helper of the class (`_make`) is passed through to
    its caller."""
    for _ in range(4):
        if frame is None:
            return ""
        code = frame.f_code
        name = code.co_name
        if name.startswith("_") and not name.startswith("__") and class_codes is not None \
                and id(code) in class_codes:
            frame = frame.f_back
            continue
        if name.startswith("<"):
            return ""  # a module, a lambda, a comprehension: not an op's method
        op = OPS_OF_METHODS.get(name, name.strip("_"))
        if op == "**":
            exponent = _second_argument(frame)
            if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
                op = f"**{exponent}"
        return op
    return ""


def _second_argument(frame: types.FrameType) -> object:
    code = frame.f_code
    if code.co_argcount < 2:
        return None
    try:
        return frame.f_locals.get(code.co_varnames[1])
    except Exception:  # noqa: BLE001 - a frame that cannot be read: no exponent
        return None


# -- the user's mapping -----------------------------------------------------------------------


class FieldsOptionError(ScenarioLoadError, ValueError):
    """A `--fields` option or a `[tool.mgtui] fields` table that cannot be read."""


def parse_fields(text: str) -> dict[str, str]:
    """`data=value,inputs=parents` (the `--fields` option) as a mapping."""
    given: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        role, eq, name = (s.strip() for s in part.partition("="))
        if not eq:
            raise FieldsOptionError(f"--fields takes role=attribute pairs, not {part!r} "
                                    f"(e.g. data=value,inputs=parents)")
        given[role] = name
    return checked_fields(given, "--fields")


def checked_fields(given: object, where: str) -> dict[str, str]:
    if not isinstance(given, dict):
        raise FieldsOptionError(f"{where}: expected a table of role = attribute")
    out = {}
    for role, name in given.items():
        if role not in ROLES:
            raise FieldsOptionError(f"{where}: {role!r} is not a role (the roles are "
                                    f"{', '.join(ROLES)})")
        if not isinstance(name, str) or not name.isidentifier():
            raise FieldsOptionError(f"{where}: the {role} field must be an attribute name, "
                                    f"not {name!r}")
        out[role] = name
    return out


def project_fields(start: str | os.PathLike) -> dict[str, str]:
    """`[tool.mgtui] fields` of the first `pyproject.toml` found walking up from the
    scenario's folder (or from `start` itself); {} if there is none."""
    here = Path(start).resolve()
    for folder in ([here] if here.is_dir() else []) + list(here.parents):
        candidate = folder / "pyproject.toml"
        try:
            mtime = candidate.stat().st_mtime_ns
        except OSError:
            continue
        found = _PROJECTS.get(str(candidate))
        if found is None or found[0] != mtime:
            found = _PROJECTS[str(candidate)] = (mtime, _read_fields(candidate))
        return dict(found[1])
    return {}


_PROJECTS: dict[str, tuple[int, dict[str, str]]] = {}  # each pyproject.toml read: its fields
MAX_PROJECT = 1 << 22  # bytes of a pyproject.toml read (they have a few thousand)
_MGTUI_KEY = re.compile(rb"^\s*mgtui\s*[=.]", re.M)  # (`mgtui = {...}` in a `[tool]` table)


def _read_fields(path: Path) -> dict[str, str]:
    try:
        with path.open("rb") as f:
            data = f.read(MAX_PROJECT + 1)
    except OSError as exc:
        raise FieldsOptionError(f"{path}: cannot be read: {exc.strerror}") from None
    if len(data) > MAX_PROJECT:
        raise FieldsOptionError(f"{path}: not read: it is over {MAX_PROJECT >> 20} MB (a "
                                "pyproject.toml has a few kilobytes)")
    if b"tool.mgtui" not in data and not (b"[tool]" in data and _MGTUI_KEY.search(data)):
        return {}  # (no table of ours: not parsed, in each run's process)
    import tomllib

    try:
        table = tomllib.loads(data.decode("utf-8")).get("tool", {}).get("mgtui", {})
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise FieldsOptionError(f"{path}: cannot be read: {exc}") from None
    except RecursionError:  # (tomllib recurses into nested arrays and tables)
        raise FieldsOptionError(f"{path}: cannot be read: it is nested too deeply") from None
    if not isinstance(table, dict) or "fields" not in table:
        return {}
    return checked_fields(table["fields"], f"{path} [tool.mgtui] fields")


# -- what was not recorded --------------------------------------------------------------------


class Unrecorded:
    """What a recording saw but did not record: the classes defined during the run
    (`defined`, by name), and the classes that look like autograd values but whose
    fields could not be told (`ShapeFinder.why_not`). The `__init__` of each of those
    is wrapped to count its instances while the run lasts (`watch`, `restore`): only a
    class the run made instances of is told about (`sightings`)."""

    def __init__(self, shapes: ShapeFinder) -> None:
        self.shapes = shapes
        self.defined: list[type] = []  # (the user's told apart when they are named)
        self.watched: list[tuple[type, object, str]] = []  # (class, its own __init__, why)
        self.made: dict[type, int] = {}  # instances made of each watched class

    def consider(self, cls: type) -> None:
        """`cls` is not a Value class: watch it if it looks like one all the same."""
        why = self.shapes.why_not(cls)
        if not why or any(c is cls for c, _, _ in self.watched) or \
                (cls.__module__ or "").startswith("mgtui"):
            return
        init = cls.__dict__["__init__"]
        made = self.made

        def __init__(self, *args, **kwargs):
            made[cls] = made.get(cls, 0) + 1
            return init(self, *args, **kwargs)

        __init__.__wrapped__ = init  # type: ignore[attr-defined]
        self.watched.append((cls, init, why))
        try:
            cls.__init__ = __init__  # type: ignore[misc]
        except (TypeError, AttributeError):  # a class that cannot be changed: not counted
            self.watched.pop()

    def restore(self) -> None:
        for cls, init, _ in reversed(self.watched):
            try:
                cls.__init__ = init  # type: ignore[misc]
            except (TypeError, AttributeError):
                pass

    def sightings(self) -> list[Sighting]:
        """The watched classes the run made instances of."""
        found = []
        for cls, init, why in self.watched:
            if self.made.get(cls):
                code = getattr(init, "__code__", None)
                where = (f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"
                         if code is not None else cls.__module__)
                stored = tuple(sorted(_KNOWN.intersection(stored_fields(code)))) \
                    if code is not None else ()
                found.append(Sighting(cls.__qualname__, where, stored, why))
        return found

    def message(self, nodes: int) -> str | None:
        """Why a run that finished must not be shown as recorded: no node was recorded,
        or instances of classes that look like autograd values were made but not
        recorded (None: neither)."""
        sightings = self.sightings()
        if nodes and not sightings:
            return None
        defined = [c.__qualname__ for c in self.defined if not _installed(c)]
        return nothing_recorded(sightings, nodes, defined)


def _installed(cls: type) -> bool:
    """Is `cls` Python's own or an installed package's (not the user's)?"""
    global _INSTALLED
    if _INSTALLED is None:
        import sysconfig

        paths = sysconfig.get_paths()
        _INSTALLED = tuple({paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")})
    module = sys.modules.get(cls.__module__ or "")
    filename = getattr(module, "__file__", None) or ""
    return not filename or filename.startswith(_INSTALLED)


_INSTALLED: tuple[str, ...] | None = None  # where Python's library and packages live


# -- saying what was not recorded -------------------------------------------------------------


def looked_for() -> str:
    """The fields mgtui looks for, as the message that refuses a run says them."""
    return "; ".join(f"{role} ({', '.join(CANDIDATES[role])})" for role in REQUIRED_ROLES)


HOW_TO_MAP = ("name the fields in the pyproject.toml above the scenario, "
              "[tool.mgtui] fields = {data = \"value\", inputs = \"parents\", "
              "backward = \"backward_fn\"}, or with --fields data=value,inputs=parents,"
              "backward=backward_fn (mgtui.check(..., fields={...}) in code)")


def nothing_recorded(sightings: list[Sighting], nodes: int, seen: list[str]) -> str:
    """The one message for a run mgtui did not see: the classes that looked like autograd
    values but were not recorded, or, if none, the classes it saw; and the fields it
    looked for."""
    if sightings:
        told = "; ".join(f"{s.name} ({s.where}) stores {', '.join(s.stored)}: {s.why}"
                         for s in sightings[:6])
        head = (f"{'no node was recorded' if not nodes else f'only {nodes:,} nodes were recorded'}"
                f": classes that look like autograd values were made but not recorded: {told}")
    else:
        shown = ", ".join(seen[:8]) + (f" and {len(seen) - 8} more" if len(seen) > 8 else "")
        head = ("the run ended, but no micrograd-style node was recorded: "
                + (f"the classes it defined ({shown}) are not autograd values"
                   if seen else "it defined no class that looks like an autograd value"))
    return (f"{head}. mgtui looks for a class whose __init__ stores a number, a gradient, "
            f"its inputs and a backward callable, by these names: {looked_for()} "
            f"(an op field is optional); {HOW_TO_MAP}")
