"""The fields of a saved or streamed trace, read from JSON and checked one by one.

The JSON reader (`mgtui.trace.export`) and the record table's decoder (`mgtui.trace.table`,
which reads binary files and the runner's stream alike) read their JSON parts through
these, so that a wrong type anywhere gives a `TraceFormatError` naming the field, never
a KeyError or TypeError from deep inside.
"""

from __future__ import annotations

from typing import Any

from mgtui.trace import MAX_LINE, Closure, TraceError, TraceFormatError


SHOWN = 40  # characters of a bad value a message quotes


def shown(x: Any) -> str:
    """A bad value as a message quotes it: its repr, or the start of it and its length
    (a file may hold a 100,000-digit number or a megabyte string)."""
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > 128:
        return f"a number of about {int(x.bit_length() * 0.30103) + 1:,} digits"
    text = repr(x) if isinstance(x, (str, int, float, bool, type(None))) else \
        f"a {type(x).__name__}"
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}… ({len(text):,} characters)"


def obj(x: Any, where: str) -> dict:
    if not isinstance(x, dict):
        raise TraceFormatError(where, "must be an object")
    return x


def seq(x: Any, where: str) -> list:
    if not isinstance(x, list):
        raise TraceFormatError(where, "must be a list")
    return x


def text(x: Any, where: str) -> str:
    """A string ("" for a missing one)."""
    if x is None:
        return ""
    if not isinstance(x, str):
        raise TraceFormatError(where, "must be a string")
    return x


def index(x: Any, where: str) -> int:
    """An id, a step or a count (-1 allowed: a child made before the recording)."""
    if isinstance(x, bool) or not isinstance(x, int) or not -1 <= x < 1 << 62:
        raise TraceFormatError(where, f"{shown(x)} is not an index")
    return x


def line(x: Any, where: str) -> int:
    """A line number (0 for a missing one)."""
    if x is None:
        return 0
    if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= MAX_LINE:
        raise TraceFormatError(where, f"{shown(x)} is not a line number")
    return x


def closure(x: Any, where: str) -> Closure:
    c = obj(x, where)
    lines = tuple(text(s, f"{where}.lines") for s in seq(c.get("lines"), f"{where}.lines"))
    return Closure(text(c.get("name"), f"{where}.name"), text(c.get("filename"), f"{where}.filename"),
                   line(c.get("first_line"), f"{where}.first_line"), lines,
                   bool(c.get("default", False)))


def error(x: Any, events: int) -> TraceError | None:
    """The scenario's error; `events` stands in for a missing `after_event`."""
    if x is None:
        return None
    e = obj(x, "error")
    return TraceError(text(e.get("type"), "error.type"), text(e.get("message"), "error.message"),
                      line(e.get("line"), "error.line") or None,
                      index(e.get("after_event", events), "error.after_event"))


def passes(x: Any) -> list[tuple[str, int, int]]:
    """[[kind, start, end], …] or [{"kind", "start", "end"}, …]."""
    out = []
    for k, p in enumerate(seq(x, "passes")):
        if isinstance(p, dict):
            p = [p.get("kind"), p.get("start"), p.get("end")]
        if not isinstance(p, list) or len(p) != 3:
            raise TraceFormatError(f"passes[{k}]", "must be a kind, a start and an end")
        out.append((text(p[0], f"passes[{k}].kind"), index(p[1], f"passes[{k}].start"),
                    index(p[2], f"passes[{k}].end")))
    return out


def number(x: Any, where: str) -> float:
    """A float; one that is not finite written as "nan", "inf" or "-inf"."""
    if x in ("nan", "inf", "-inf"):
        return float(x)
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TraceFormatError(where, f"{shown(x)} is not a number")
    return float(x)


def value_read(x: Any, where: str) -> int | float:
    """A value a `_backward` call read: an int stays an int (a loop index `i = 2`, a
    node id), anything else is a `number`."""
    return x if type(x) is int else number(x, where)


def call_values(x: Any, where: str = "values") -> list[tuple[int, list[tuple[str, float]]]]:
    """What `_backward` calls read as they began: `[[event, [[name, value], ...]], ...]`."""
    out = []
    for k, entry in enumerate(seq(x, where)):
        at = f"{where}[{k}]"
        entry = seq(entry, at)
        if len(entry) != 2:
            raise TraceFormatError(at, "must be [event, [[name, value], ...]]")
        pairs = []
        for j, pair in enumerate(seq(entry[1], f"{at}[1]")):
            pair = seq(pair, f"{at}[1][{j}]")
            if len(pair) != 2:
                raise TraceFormatError(f"{at}[1][{j}]", "must be [name, value]")
            pairs.append((text(pair[0], f"{at}[1][{j}]"), value_read(pair[1], f"{at}[1][{j}]")))
        out.append((index(entry[0], f"{at}[0]"), pairs))
    return out


def json_number(x: float) -> float | str:
    """A float for JSON: one that is not finite as "nan", "inf" or "-inf"."""
    return x if x == x and abs(x) != float("inf") else str(x)


DTYPE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_<>=|")


def array_value(shape: Any, dtype: Any, values: Any, summary: Any, where: str):
    """An `ArrayValue` from its parts, checked: `shape` a list of at most `MAX_DIMS`
    sizes; `dtype` a numpy dtype's name; `values` its elements (all of them, C order,
    at most `WHOLE_LIMIT`) or, with `summary` [min, max, mean, norm, nonfinite], the
    first `SAMPLE` of a bigger one."""
    from mgtui.trace.arrays import MAX_DIMS, SAMPLE, WHOLE_LIMIT, ArrayValue

    dims = seq(shape, f"{where}.shape")
    if len(dims) > MAX_DIMS:
        raise TraceFormatError(f"{where}.shape", f"has {len(dims)} dimensions (at most {MAX_DIMS})")
    for k, n in enumerate(dims):
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < 1 << 40:
            raise TraceFormatError(f"{where}.shape[{k}]", f"{shown(n)} is not a size")
    name = text(dtype, f"{where}.dtype")
    if not name or len(name) > 32 or not DTYPE_CHARS.issuperset(name):
        raise TraceFormatError(f"{where}.dtype", f"{shown(name)} is not a dtype")
    size = 1
    for n in dims:
        size *= n
    count = len(values)
    if summary is None:
        if size > WHOLE_LIMIT or count != size:
            raise TraceFormatError(where, f"{count:,} values for shape {tuple(dims)}")
        return ArrayValue.of(values, dims, name)
    parts = seq(summary, f"{where}.summary")
    if len(parts) not in (5, 6) or count > min(SAMPLE, size):
        raise TraceFormatError(where, "a summary needs [min, max, mean, norm, nonfinite] "
                               f"(and its basis) and at most {SAMPLE} values")
    stats = [number(v, f"{where}.summary") for v in parts[:4]]
    basis = parts[5] if len(parts) == 6 else 0  # (`ArrayValue.basis`: what it was worked
    if isinstance(basis, bool) or not isinstance(basis, int) or abs(basis) > size:  # from)
        raise TraceFormatError(f"{where}.summary", f"{shown(basis)} is not a basis")
    value = ArrayValue.of(values, dims, name, (*stats, index(parts[4], f"{where}.summary")))
    value.basis = basis
    return value


def json_array(x: Any, where: str):
    """An array as JSON holds one (`mgtui.trace.export`): {"shape", "dtype", "values":
    nested lists of the shape} for one kept whole, or {"shape", "dtype", "first": [the
    first few elements], "summary": [min, max, mean, norm, nonfinite]} for a bigger one."""
    a = obj(x, where)
    shape = seq(a.get("shape"), f"{where}.shape")
    if "summary" in a:
        first = [number(v, f"{where}.first") for v in seq(a.get("first"), f"{where}.first")]
        return array_value(shape, a.get("dtype"), first, a.get("summary"), where)
    flat: list[float] = []
    _flatten(a.get("values"), [n if isinstance(n, int) else -1 for n in shape], flat,
             f"{where}.values")
    return array_value(shape, a.get("dtype"), flat, None, where)


def _flatten(x: Any, shape: list[int], out: list[float], where: str) -> None:
    """`x`, nested lists of `shape`, appended element by element (C order) to `out`."""
    from mgtui.trace.arrays import WHOLE_LIMIT

    if not shape:
        out.append(number(x, where))
        if len(out) > WHOLE_LIMIT:
            raise TraceFormatError(where, f"more than {WHOLE_LIMIT:,} values")
        return
    items = seq(x, where)
    if len(items) != shape[0]:
        raise TraceFormatError(where, f"{len(items)} items where the shape has {shape[0]}")
    for item in items:
        _flatten(item, shape[1:], out, where)
