"""The working of one step of a tensor engine (numpy arrays for `data` and `grad`),
with shapes: `explain_arrays(trace, data, grad, index)` is `mgtui.trace.explain.explain`
for an event that touches an array, None for the others.

For the ops a lecture-style tensor engine defines (`+ * @ sum mean relu tanh exp log
**k`), a backward step states each input's local rule with its shapes (`∂L/∂w = xᵀ ·
∂L/∂out`, `(1, 2)ᵀ·(1, 1) → (2, 1)`), and for an input that was broadcast in the
forward pass, the axes its gradient is summed over. Where the arrays are kept whole, it
works out what the rule gives, element by element (`Expected`), and says where the
recorded change differs: the first element, by its index.

The arithmetic is written out here in plain Python on the trace's flat float64
arrays (the trace needs no numpy); it is bounded (`WORK_LIMIT` multiply-adds a rule),
past which the rule is stated without its numbers.
"""

from __future__ import annotations

import math
from array import array
from itertools import product

from mgtui.trace import EventKind, Field, Trace, Write
from mgtui.trace.arrays import (ArrayTable, ArrayValue, Value, delta as value_delta, display,
                                shape_text, unravel)
from mgtui.trace.tolerance import allowed, coarsest
from mgtui.trace.working import Contribution, Explanation, fmt, graph_made, name

WORK_LIMIT = 1 << 18  # multiply-adds a worked rule may take
ELEMENTWISE = {"relu": "(out.data > 0)", "ReLU": "(out.data > 0)", "tanh": "(1 - out²)",
               "exp": "out.data", "log": "1 / x.data"}


_set = object.__setattr__  # (how a record's `__init__` sets its fields)


def is_array(v: object) -> bool:
    return isinstance(v, ArrayValue)


class ArrayContribution(Contribution):
    """A write of an array engine's `_backward` call: its values floats or arrays. Where
    the rule was worked out, `terms` is how many products it sums into each element and
    `scale` the largest magnitude one may have: what rounding in the engine's own dtype
    may have moved the recorded change by (`mgtui.trace.tolerance`)."""

    __slots__ = ("terms", "scale")
    _fields = Contribution._fields + __slots__

    def __init__(self, target: int, label: str, field: str, before: Value, after: Value,
                 line: int | None, formula: str, numbers: str, nth: int, uses: int,
                 expected: Value | None = None, terms: int = 1, scale: float = 0.0) -> None:
        super().__init__(target, label, field, before, after, line, formula,  # type: ignore[arg-type]
                         numbers, nth, uses, expected)
        _set(self, "terms", terms)
        _set(self, "scale", scale)

    @property
    def delta(self) -> float:
        if isinstance(self.before, ArrayValue) or isinstance(self.after, ArrayValue):
            return value_delta(self.before, self.after)  # type: ignore[return-value]
        return self.after - self.before

    @property
    def differs_at(self) -> tuple[int, ...] | None:
        """The index of the first element whose recorded change differs from what the
        op's rule gives, by more than rounding in the grad's dtype explains (None where
        they agree, or either is not known)."""
        e, d = self.expected, self.delta
        if not isinstance(e, ArrayValue) or not isinstance(d, ArrayValue):
            if isinstance(e, ArrayValue) and d is None:
                return ()  # (a change that cannot be taken: the shape changed)
            return None
        if e.shape != d.shape:
            return ()
        dtype = coarsest(*(v.dtype for v in (self.before, self.after) if is_array(v)))
        scale = max(self.scale, largest(e), largest(self.before), largest(self.after))
        relative, absolute = allowed(dtype, self.terms, scale)
        for k, (x, y) in enumerate(zip(e.values, d.values)):
            if not (math.isfinite(x) and math.isfinite(y)):
                if math.isfinite(x) != math.isfinite(y):
                    return unravel(k, e.shape)
            elif abs(x - y) > absolute + relative * abs(x):
                return unravel(k, e.shape)
        return None

    @property
    def mismatch(self) -> bool:
        if isinstance(self.expected, ArrayValue):
            return self.differs_at is not None
        return super().mismatch

    @property
    def change(self) -> str:
        if isinstance(self.before, ArrayValue) or isinstance(self.after, ArrayValue):
            d = self.delta
            if isinstance(d, ArrayValue) and d.whole and not any(d.values):
                moved = "unchanged"  # (a grad zeroed again: "Δgrad (2, 16) all 0.0" said less)
            else:
                moved = f"Δ{self.field} {'?' if d is None else fmt(d)}"
            if is_array(self.before) and is_array(self.after) and (
                    self.before.dtype != self.after.dtype):  # (`model.double()`)
                moved = f"{self.before.dtype} → {self.after.dtype}, values {moved}"
            return f"{self.label}.{self.field}: {fmt(self.before)} → {fmt(self.after)} ({moved})"
        return super().change


def shape_of(v: Value) -> tuple[int, ...]:
    return v.shape if isinstance(v, ArrayValue) else ()


def explain_arrays(trace: Trace, data, grad, index: int) -> Explanation | None:
    """The explanation of event `index` if it touches an array (else None). `data`,
    `grad`: the scalar state after it (a `Timeline`'s)."""
    at = State(trace, data, grad, index + 1)
    kind = trace.kind(index)
    nid = trace.event_node(index)
    if kind is EventKind.CREATE:
        if not (is_array(at.data(nid)) or any(is_array(at.data(c)) for c in trace.children(nid))):
            return None
        return _forward(at, nid)
    if kind is EventKind.BACKWARD:
        writes = trace.writes(index)
        if not (is_array(at.grad(nid)) or any(ArrayTable.holds(trace.arrays.writes, w.index)
                                               for w in writes)):
            return None
        return _backward(at, index, nid, writes)
    if not ArrayTable.holds(trace.arrays.events, index):
        return None
    return _lone_write(at, index, nid, kind)


class State:
    """Every node's values after the first `position` events, arrays included."""

    def __init__(self, trace: Trace, data, grad, position: int) -> None:
        self.trace, self._data, self._grad, self.position = trace, data, grad, position

    def data(self, nid: int) -> Value:
        return self.trace.values.value_at(nid, False, self.position, self._data[nid])

    def grad(self, nid: int) -> Value:
        return self.trace.values.value_at(nid, True, self.position, self._grad[nid])


# -- forward --------------------------------------------------------------------------------


def _forward(at: State, nid: int) -> Explanation:
    t = at.trace
    label, op, kids = t.label(nid), t.op(nid), t.children(nid)
    value = display(t.values.created_value(nid))
    if not kids:
        return Explanation("create", nid, f"leaf {label}", f"{label} = {value}",
                           notes=("a leaf: an input or a parameter, made directly",))
    names = [name(t.label(c)) for c in kids]
    shapes = [shape_text(shape_of(at.data(c))) for c in kids]
    out_shape = shape_text(shape_of(t.values.created_value(nid)))
    a, b = (names + names)[:2]
    if op in ("+", "*", "@") and len(kids) <= 2:
        expr, sizes = f"{a} {op} {b}", f"{(shapes + shapes)[0]} {op} {(shapes + shapes)[1]}"
    elif op.startswith("**") and len(kids) == 1:
        expr, sizes = f"{a}{op}", f"{shapes[0]}{op}"
    else:
        expr, sizes = f"{op or 'op'}({', '.join(names)})", f"{op or 'op'}({', '.join(shapes)})"
    notes = [f"{n} = {display(at.data(c))}" for n, c in zip(names, kids)]
    axes = [broadcast_axes(shape_of(at.data(c)), shape_of(t.values.created_value(nid))) for c in kids]
    if op in ("+", "*"):
        notes += [f"{n} is broadcast along axes {ax}: its gradient will be summed over them"
                  for n, ax in zip(names, axes) if ax]
    return Explanation("create", nid, f"forward: {label} = {expr}",
                       f"{label} = {expr}: {sizes} → {out_shape} = {value}",
                       local_rule(op, name(label), names), notes=tuple(notes))


# -- backward -------------------------------------------------------------------------------


def local_rule(op: str, out: str, ins: list[str]) -> str:
    """The op's rule for its inputs' gradients, in their names (∂L/∂out written `g`)."""
    a = ins[0] if ins else "x"
    b = ins[1] if len(ins) > 1 else a
    g = f"∂L/∂{out}"
    if op == "+":
        return f"∂L/∂{a} = {g}, ∂L/∂{b} = {g} (each summed back to its own shape)"
    if op == "*":
        return f"∂L/∂{a} = {b} ⊙ {g}, ∂L/∂{b} = {a} ⊙ {g} (element by element)"
    if op == "@":
        return f"∂L/∂{a} = {g} · {b}ᵀ, ∂L/∂{b} = {a}ᵀ · {g}"
    if op == "sum":
        return f"∂L/∂{a} = 1 ⊙ {g}: every element counts once"
    if op == "mean":
        return f"∂L/∂{a} = {g} / n: every element counts 1/n times"
    if op.startswith("**"):
        return f"∂L/∂{a} = {op[2:]} · {a}^({op[2:]} - 1) ⊙ {g}"
    if op in ELEMENTWISE:
        return f"∂L/∂{a} = {ELEMENTWISE[op].replace('out', out).replace('x', a)} ⊙ {g}"
    return ""


def _backward(at: State, index: int, nid: int, writes) -> Explanation:
    t = at.trace
    op, kids = t.op(nid), t.children(nid)
    out = name(t.label(nid))
    g = at.grad(nid)
    graph = graph_made(t, index)
    contributions, notes = [], []
    operands = list(kids) if len(kids) >= 2 else list(kids) * 2
    for k, w in enumerate(writes):
        tl = name(t.label(w.node))
        before, after = t.values.write_value(w.index, w.before, w.after)
        formula, numbers, expected, axes = _rule(at, op, nid, out, g, w.node, tl, operands, k)
        if not formula:
            formula = f"{tl}.{w.field} written"
        nth = t.index.contribution(w) if w.field is Field.GRAD else 1
        terms, scale = _terms(at, op, g, operands, k) if expected is not None else (1, 0.0)
        c = ArrayContribution(w.node, tl, w.field.value, before, after, w.line, formula, numbers,
                              nth, t.index.uses_within(w.node, graph), expected, terms, scale)
        contributions.append(c)
        if axes:
            notes.append(f"{tl} was broadcast along axes {axes} in the forward pass: its "
                         f"gradient is {out}.grad summed over them, {shape_text(shape_of(g))}"
                         f" → {shape_text(shape_of(after))}")
        if nth > 1:
            notes.append(f"this is contribution {nth} to {tl}.grad in this backward pass: "
                         "it adds to what is already there (+=, not =)")
        where = c.differs_at
        if where is not None:
            notes.append(f"the recorded change to {tl}.grad differs from what {op}'s rule "
                         f"gives at element {where}")
        if is_array(before) and is_array(after) and before.shape != after.shape:
            notes.append(f"{tl}.grad changed shape, {shape_text(before.shape)} → "
                         f"{shape_text(after.shape)}: a grad has its data's shape")
    if not kids:
        notes.append(f"{out} is a leaf: its _backward has nothing to pass on.")
    title = f"backward: {out}._backward()" + (f"  ({op})" if op else "")
    return Explanation("backward", nid, title, f"{out}.grad = {display(g)}",
                       local_rule(op, out, [name(t.label(c)) for c in kids]),
                       tuple(contributions), tuple(notes))


def _rule(at: State, op: str, nid: int, out: str, g: Value, target: int, tl: str,
          operands: list[int], k: int):
    """(formula, shapes, expected change or None, broadcast axes) of write `k`."""
    if not operands or k >= 2 or (k >= 1 and op not in ("+", "*", "@")):
        return "", "", None, ()
    if operands[k] != target:
        return "", "", None, ()
    x, y = at.data(target), at.trace.values.created_value(nid)
    xs, gs = shape_of(x), shape_of(g)
    lhs, gn = f"{tl}.grad +=", f"{out}.grad"
    axes = broadcast_axes(xs, gs) if op in ("+", "*") else ()
    summed = f"Σ{list(axes)} " if axes else ""
    if op == "+":
        return (f"{lhs} {summed}{gn}", f"{shape_text(gs)} → {shape_text(xs)}",
                expect(lambda: unbroadcast(values(g, gs), gs, xs), xs), axes)
    if op == "*":
        other = operands[1 - k]
        o = at.data(other)
        ol = name(at.trace.label(other))
        return (f"{lhs} {summed}({ol}.data ⊙ {gn})",
                f"{shape_text(shape_of(o))} ⊙ {shape_text(gs)} → {shape_text(xs)}",
                expect(lambda: unbroadcast(
                    list(map(float.__mul__, values(o, gs), values(g, gs))), gs, xs), xs), axes)
    if op == "@":
        other = operands[1 - k]
        o = at.data(other)
        ol = name(at.trace.label(other))
        os_ = shape_of(o)
        if k == 0:
            return (f"{lhs} {gn} · {ol}.dataᵀ", f"{shape_text(gs)}·{shape_text(os_)}ᵀ → "
                    f"{shape_text(xs)}", expect(lambda: matmul_t(g, o, False), xs), ())
        return (f"{lhs} {ol}.dataᵀ · {gn}", f"{shape_text(os_)}ᵀ·{shape_text(gs)} → "
                f"{shape_text(xs)}", expect(lambda: matmul_t(o, g, True), xs), ())
    n = max(math.prod(xs), 1)
    local = _local(op, x, y, xs)
    if local is None:
        return "", "", None, ()
    text, factor = local
    text = text.replace("out", out).replace("x", tl)
    return (f"{lhs} {text} ⊙ {gn}", f"{shape_text(xs)} ⊙ {shape_text(gs)} → {shape_text(xs)}",
            expect(lambda: list(map(float.__mul__, factor(), values(g, xs))), xs)
            if op != "mean" else expect(lambda: [v / n for v in values(g, xs)], xs), ())


def _terms(at: State, op: str, g: Value, operands: list[int], k: int) -> tuple[int, float]:
    """How many products the rule of write `k` sums into each element of its change, and
    the largest magnitude one may have (what `mgtui.trace.tolerance.allowed` is given)."""
    gs, xs = shape_of(g), shape_of(at.data(operands[k]))
    if op == "@":
        other = at.data(operands[1 - k])
        inner = (gs[-1] if k == 0 else gs[0]) if len(gs) == 2 else 1
        return inner, largest(g) * largest(other)
    summed = max(math.prod(gs) // max(math.prod(xs), 1), 1)  # (g's elements summed into
    #                                                         one of x's, where x was broadcast)
    if op == "*":
        return summed, largest(g) * largest(at.data(operands[1 - k]))
    return summed, largest(g)  # (tanh's 1 - out² is rounded to the size of 1, not its own)


def largest(v: Value) -> float:
    """The largest finite magnitude in `v`, a number or an array kept whole (0 where none
    is known: a rule is only worked out on arrays kept whole)."""
    if not isinstance(v, ArrayValue):
        x = abs(float(v)) if isinstance(v, (int, float)) else math.nan
        return x if math.isfinite(x) else 0.0
    if v.whole:
        return max((abs(x) for x in v.values if math.isfinite(x)), default=0.0)
    return 0.0


def _local(op: str, x: Value, y: Value, xs: tuple[int, ...]):
    """(the local derivative's text, a function giving it element by element)."""
    if op == "sum":
        return "1", lambda: [1.0] * math.prod(xs)
    if op == "mean":
        return f"1/{math.prod(xs)}", lambda: [1.0 / max(math.prod(xs), 1)] * math.prod(xs)
    if op in ("relu", "ReLU"):
        return "(out.data > 0)", lambda: [1.0 if v > 0 else 0.0 for v in values(y, xs)]
    if op == "tanh":
        return "(1 - out²)", lambda: [1 - v * v for v in values(y, xs)]
    if op == "exp":
        return "out.data", lambda: list(values(y, xs))
    if op == "log":
        return "1 / x.data", lambda: [1 / v if v else math.inf for v in values(x, xs)]
    if op.startswith("**"):
        try:
            p = float(op[2:])
        except ValueError:
            return None
        return (f"{op[2:]} · x^({op[2:]} - 1)",
                lambda: [p * v ** (p - 1) if v or p >= 1 else math.inf for v in values(x, xs)])
    return None


def _lone_write(at: State, index: int, nid: int, kind: EventKind) -> Explanation:
    t = at.trace
    label = t.label(nid)
    e = t.event(index)
    before, after = t.values.event_value(index, e.before, e.after)
    p = t.pass_at(index)
    notes = []
    fieldname = kind.value
    if kind is EventKind.GRAD and p is not None and p.kind == "backward":
        title = f"seed: {label}.grad = {display(after)}"
        notes.append(f"The backward pass starts at {label}: ∂{label}/∂{label} = 1, element "
                     "by element.")
    elif kind is EventKind.GRAD and is_array(after) and after.whole and not any(after.values):
        title = f"zero_grad: {label}.grad = 0 {shape_text(after.shape)}"
    else:
        title = f"{label}.{fieldname} = {display(after)}"
    c = ArrayContribution(nid, label, fieldname, before, after, None, "", "", 1, 1)
    return Explanation(fieldname, nid, title, c.change, notes=tuple(notes))


# -- arithmetic on flat arrays ----------------------------------------------------------------


def broadcast_axes(small: tuple[int, ...], big: tuple[int, ...]) -> tuple[int, ...]:
    """The axes of `big` that numpy broadcast `small` along: those `small` lacks (leading)
    and those where it has 1 and `big` more."""
    lead = len(big) - len(small)
    if lead < 0:
        return ()
    return tuple(range(lead)) + tuple(lead + k for k, n in enumerate(small)
                                      if n == 1 and big[lead + k] != 1)


def values(v: Value, shape: tuple[int, ...]) -> list[float]:
    """`v`'s elements broadcast to `shape` (C order); ValueError if not whole or too big."""
    if math.prod(shape) > WORK_LIMIT:  # (a float too: not a list of 10⁸ of it)
        raise ValueError("too big")
    if not isinstance(v, ArrayValue):
        return [float(v)] * math.prod(shape)
    if not v.whole:
        raise ValueError("not kept whole")
    if v.shape == shape:
        return list(v.values)
    return [v.values[k] for k in _source_index(v.shape, shape)]


def _source_index(small: tuple[int, ...], big: tuple[int, ...]) -> list[int]:
    """For each element of `big` (C order), the flat index in `small` broadcast to it."""
    lead = len(big) - len(small)
    if lead < 0 or any(n not in (1, big[lead + k]) for k, n in enumerate(small)):
        raise ValueError("shapes do not broadcast")
    strides, s = [], 1
    for n in reversed(small):
        strides.append(s)
        s *= n
    strides.reverse()
    picks = [0] * lead + [strides[k] if n != 1 else 0 for k, n in enumerate(small)]
    return [sum(map(int.__mul__, idx, picks)) for idx in product(*map(range, big))]


def unbroadcast(flat: list[float], big: tuple[int, ...], small: tuple[int, ...]) -> list[float]:
    """`flat` (of shape `big`) summed back to shape `small`."""
    out = [0.0] * math.prod(small)
    for k, src in enumerate(_source_index(small, big)):
        out[src] += flat[k]
    return out


def matmul_t(a: Value, b: Value, left_t: bool) -> list[float]:
    """aᵀ·b (`left_t`) or a·bᵀ, for 2-d arrays kept whole."""
    if not (is_array(a) and is_array(b)) or len(a.shape) != 2 or len(b.shape) != 2:
        raise ValueError("2-d arrays only")
    A, B = values(a, a.shape), values(b, b.shape)
    (ar, ac), (br, bc) = a.shape, b.shape
    if left_t:  # (ar, ac)ᵀ · (br, bc), ar == br → (ac, bc)
        if ar != br or ac * bc * ar > WORK_LIMIT:
            raise ValueError("shapes")
        return [math.fsum(A[r * ac + i] * B[r * bc + j] for r in range(ar))
                for i in range(ac) for j in range(bc)]
    if ac != bc or ar * br * ac > WORK_LIMIT:  # (ar, ac) · (br, bc)ᵀ → (ar, br)
        raise ValueError("shapes")
    return [math.fsum(A[i * ac + r] * B[j * bc + r] for r in range(ac))
            for i in range(ar) for j in range(br)]


def expect(work, shape: tuple[int, ...]) -> ArrayValue | None:
    """What a rule gives, as an array of `shape`; None where it cannot be worked out (or
    is bigger than `WORK_LIMIT` elements: not worked out at all)."""
    if math.prod(shape) > WORK_LIMIT:
        return None
    try:
        flat = work()
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        return None
    if len(flat) != math.prod(shape):
        return None
    return ArrayValue(shape, "float64", array("d", flat))


# -- a quiz's question (`mgtui.session.quiz`) ------------------------------------------


def array_answer(trace: Trace, first: Write, last: Write
                 ) -> tuple[float | None, tuple[int, ...] | None]:
    """The number asked of a grad in a trace with arrays, and its element: a float grad
    is itself; of an array grad, the element this step changed most (the first kept
    element where the change cannot be worked out), so that the question is never
    about a gradient the step left alone."""
    before = trace.values.write_value(first.index, first.before, first.after)[0]
    after = trace.values.write_value(last.index, last.before, last.after)[1]
    if not isinstance(after, ArrayValue):
        return float(after), None
    change = value_delta(before, after)
    flat = 0
    if isinstance(change, ArrayValue) and len(change.values):
        sizes = [abs(v) if math.isfinite(v) else -1.0 for v in change.values]
        flat = max(range(len(sizes)), key=sizes.__getitem__)
    value = after.element(flat)
    if value is None or not math.isfinite(value):
        return None, None
    return value, unravel(flat, after.shape)


def grad_before(trace: Trace, first: Write, index: tuple[int, ...] | None) -> float:
    """The grad a question is about, as it was before the step's first write: its
    element at `index` if it is an array (0.0 where that is not a finite number)."""
    before = trace.values.write_value(first.index, first.before, first.after)[0]
    if isinstance(before, ArrayValue):
        flat = 0
        for i, n in zip(index or (), before.shape):
            flat = flat * n + i
        before = before.element(flat)
    return before if isinstance(before, float) and math.isfinite(before) else 0.0
