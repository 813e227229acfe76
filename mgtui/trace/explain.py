"""The working of one step, written out with its actual numbers: the scalar engine's
(`mgtui.trace.engines.explain` asks the trace's engine for its step).

`explain_scalar(trace, data, grad, index)` turns event `index` into an `Explanation`: for a
forward step the equation (`e = a * b = 2.0 × -3.0 = -6.0`); for a backward step the
op's local derivative and, for every grad it accumulated into, the formula, the numbers
and `before → after (+delta)`. `data` and `grad` are the node state after the event (a
`Timeline`'s arrays). Ops it does not know are explained from the closure's source line,
the values the call read as it began (`s = 0.5744, out.grad = 1.0`, recorded in the
trace), and the local derivative each write implies, `Δgrad / out.grad`, next to the
numerical one when the gradient doctor measured it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mgtui.trace import EventKind, Field, Trace
from mgtui.trace.working import (  # noqa: F401 - re-exported: the panes import them from here
    Contribution,
    Explanation,
    fmt,
    graph_made,
    name,
    signed,
)



KNOWN_OPS = frozenset({"+", "*", "tanh", "exp", "ReLU", "relu"})  # and "**k"
# The name of a value a `_backward` call read ends in this when the value is the id of the
# node a closure variable held (`out#` = 77: `mgtui.recording.call_values`); older traces have none.
NODE_MARK = "#"
# a node's data or grad as a closure read it, under any name a class gives it (`value`)
DATA_NAMES = frozenset({"data", "value", "val", "_data", "_value"})
GRAD_NAMES = frozenset({"grad", "_grad", "gradient"})


def known_op(op: object) -> bool:
    """Is `op` one whose local derivative this module writes out from its formula?"""
    return op in KNOWN_OPS or (isinstance(op, str) and op.startswith("**"))


def local_derivative(op: str, out: str, ins: list[str], repeated: bool = False) -> str:
    """The op's local derivatives in the names of its inputs. `repeated`: one node is
    both inputs of a `+` or `*` (`x + x`, `x * x`), whose `_backward` adds to its grad
    once per use."""
    a = ins[0] if ins else "x"
    b = ins[1] if len(ins) > 1 else a
    if repeated and op == "+":
        return f"∂{out}/∂{a} = 1 + 1 = 2 ({a} is both inputs: each use adds {out}.grad)"
    if repeated and op == "*":
        return (f"∂{out}/∂{a} = {a} + {a} = 2 × {a} ({a} is both inputs: each use adds "
                f"{a}.data × {out}.grad)")
    if op == "+":
        return f"∂{out}/∂{a} = 1, ∂{out}/∂{b} = 1"
    if op == "*":
        return f"∂{out}/∂{a} = {b}, ∂{out}/∂{b} = {a}"
    if op.startswith("**"):
        k = op[2:]
        return f"∂{out}/∂{a} = {k} × {a}^({k} - 1)"
    if op == "tanh":
        return f"∂{out}/∂{a} = 1 - tanh({a})² = 1 - {out}²"
    if op == "exp":
        return f"∂{out}/∂{a} = exp({a}) = {out}"
    if op in ("ReLU", "relu"):
        return f"∂{out}/∂{a} = 1 if {a} > 0 else 0"
    return ""


def repeated_input(kids: tuple[int, ...]) -> bool:
    """Is one node both inputs of a two-input op? (`x * x`: its children are (x, x),
    or (x,) when `_prev` is a set.)"""
    return len(kids) in (1, 2) and kids[0] == kids[-1]


def explain_scalar(trace: Trace, data, grad, index: int,
                   numerical: dict[int, float] | None = None) -> Explanation:
    """The scalar engine's working of event `index` (`mgtui.trace.engines.explain` asks
    the trace's engine). `numerical`: for a `_backward` step, input -> d node / d input
    measured by the gradient doctor, shown next to the one the writes imply."""
    kind = trace.kind(index)
    if kind is EventKind.CREATE:
        return _forward(trace, data, trace.event_node(index))
    if kind is EventKind.BACKWARD:
        return _backward(trace, data, grad, index, numerical or {})
    return _lone_write(trace, grad, index, kind)


def _lone_write(trace: Trace, grad, index: int, kind: EventKind) -> Explanation:
    """A grad or data write outside `_backward`: a seed, a zero_grad, an update step."""
    nid = trace.event_node(index)
    label = trace.label(nid)
    before, after = trace.change(index)
    fieldname = kind.value
    p = trace.pass_at(index)
    notes: list[str] = []
    if kind is EventKind.GRAD and p is not None and p.kind == "backward":
        title = f"seed: {label}.grad = {fmt(after)}"
        notes.append(f"The backward pass starts at {label}: ∂{label}/∂{label} = 1.")
    elif kind is EventKind.GRAD and after == 0:
        title = f"zero_grad: {label}.grad = 0"
        if before != 0:
            notes.append(f"{label}.grad held {fmt(before)} from an earlier backward pass.")
    else:
        title = f"{label}.{fieldname} = {fmt(after)}"
    equation = f"{label}.{fieldname}: {fmt(before)} → {fmt(after)} ({signed(after - before)})"
    if kind is EventKind.DATA and grad[nid] != 0 and before != after:
        step = (after - before) / grad[nid]
        notes.append(
            f"an update step: {label}.data += {fmt(step)} × {label}.grad = "
            f"{fmt(step)} × {fmt(grad[nid])}")
    return Explanation(fieldname, nid, title, equation, notes=tuple(notes))


def _forward(trace: Trace, data, nid: int) -> Explanation:
    op = trace.op(nid)
    label = trace.label(nid)
    kids = trace.children(nid)
    names = [name(trace.label(c)) for c in kids]
    vals = [fmt(data[c]) for c in kids]
    value = fmt(trace.node_data[nid])
    if not kids:
        return Explanation("create", nid, f"leaf {label}", f"{label} = {value}",
                           notes=("a leaf: an input or a parameter, made directly",))
    a, b = (names + names)[:2]
    va, vb = (vals + vals)[:2]
    if op in ("+", "*") and len(kids) <= 2:
        sym = "×" if op == "*" else "+"
        expr, numbers = f"{a} {op} {b}", f"{va} {sym} {vb}"
    elif op.startswith("**") and len(kids) == 1:
        expr, numbers = f"{a}{op}", f"{va}{op}"
    else:
        fn = op or "op"
        expr, numbers = f"{fn}({', '.join(names)})", f"{fn}({', '.join(vals)})"
    return Explanation("create", nid, f"forward: {label} = {expr}",
                       f"{label} = {expr} = {numbers} = {value}",
                       local_derivative(op, name(label), names, repeated_input(kids)))


def _backward(trace: Trace, data, grad, index: int, numerical: dict[int, float]) -> Explanation:
    nid = trace.event_node(index)
    op = trace.op(nid)
    out = name(trace.label(nid))
    kids = trace.children(nid)
    names = [name(trace.label(c)) for c in kids]
    g = grad[nid]
    writes = trace.writes(index)
    operands = list(kids) if len(kids) >= 2 else list(kids) * 2
    closure = trace.closure_of(index)
    contributions = []
    notes: list[str] = []
    known = False
    graph = graph_made(trace, index)
    for k, w in enumerate(writes):
        tl = name(trace.label(w.node))
        formula, numbers, expected = _formula(
            trace, data, op, nid, out, g, w.node, tl, operands, k)
        known = known or bool(formula)
        if not formula:
            formula = _source_formula(closure, w.line, trace) or f"{tl}.{w.field} written"
        nth = trace.index.contribution(w) if w.field is Field.GRAD else 1
        c = Contribution(w.node, tl, w.field.value, w.before, w.after, w.line,
                         formula, numbers, nth, trace.index.uses_within(w.node, graph), expected)
        contributions.append(c)
        if nth > 1:
            why = (f"{tl} feeds {c.uses} nodes" if c.uses > 1
                   else f"{tl} is used more than once by {out}")
            notes.append(
                f"{why}: this is contribution {nth} to {tl}.grad in this backward pass, "
                f"and it adds to the {fmt(c.before)} already there (+=, not =).")
        if c.mismatch:
            notes.append(
                f"the recorded change to {tl}.grad is {fmt(c.delta)}, but {op}'s derivative "
                f"gives {fmt(expected)}")
    if not kids:
        notes.append(f"{out} is a leaf: its _backward has nothing to pass on.")
    elif not writes:
        notes.append(f"{out}._backward wrote no grad.")
    if g == 0 and kids:
        notes.append(f"{out}.grad is 0, so everything it passes back is 0.")
    title = f"backward: {out}._backward()" + (f"  ({op})" if op else "")
    local = local_derivative(op, out, names, repeated_input(kids))
    values = trace.values_at(index)
    if values:
        at_call = state_before(writes, data, grad)
        notes.extend(misread_sentences(trace, misread_nodes(trace, index, *at_call)))
    if not known and not local and kids:
        local = _implied(trace, nid, out, g, contributions, numerical)
    return Explanation("backward", nid, title,
                       f"{out}.grad = {fmt(g)}", local, tuple(contributions), tuple(notes),
                       values_text(trace, values, (nid, *kids)))


def values_text(trace: Trace, values, own: tuple[int, ...] = ()) -> str:
    """`i = 2, out.data = 0.14`: what a call read; and `out = p (#7)` for a closure
    variable that held a node other than the call's own ones (`own`: its node and its
    inputs, which go without saying)."""
    shown = []
    for n, v in values:
        if not n.endswith(NODE_MARK):
            shown.append(f"{n} = {fmt(v)}")
        elif type(v) is int and 0 <= v < trace.node_count and v not in own:
            shown.append(f"{n[:-1]} = {node_ref(trace, v)}")
    return ", ".join(shown)


@dataclass(frozen=True)
class Misread:
    """A closure variable of a `_backward` that holds a node other than the call's own
    node and its inputs: by the node id recorded at the call, or, in an older trace, by
    the values the call read (`out.data`, `out.grad`)."""

    name: str  # the closure variable, `out`
    node: int  # the node it holds at the call
    owner: int  # the node whose `_backward` ran
    fields: tuple[tuple[str, float], ...]  # what was read of it: ("data", 0.14), …
    late: bool  # a later turn of the loop that made the owner rebound the variable
    plain: tuple[tuple[str, float], ...] = ()  # the other variables read: numbers (`i`)
    instead: int | None = None  # the node it should hold (the owner, or its input), if late

    def sentence(self, trace: Trace, advise: bool = True) -> str:
        """What the variable holds, and why (`advise`: how to bind it; see
        `misread_sentences` for several)."""
        node = node_ref(trace, self.node)
        should = node_ref(trace, self.owner if self.instead is None else self.instead)
        if trace.label(self.node) == trace.label(self.owner):  # both `out`: by id
            node, should = f"#{self.node}", f"#{self.owner if self.instead is None else self.instead}"
        read = ", ".join(f"{self.name}.{f} = {fmt(v)}" for f, v in self.fields)
        # what shows it: the values read, which are that node's; else the node it holds,
        # as recorded (a variable only written to: `x.grad += ...`)
        shown = (f"this call read {read}, which are {node}'s" if read
                 else f"it holds {node} as this call begins")
        if not self.late:
            return (f"`{self.name}` here is {node}, which is neither "
                    f"{node_ref(trace, self.owner)} nor one of its inputs: {shown}.")
        head = f"`{self.name}` here is {node}, not {should}: {shown}."
        return f"{head} {late_advice([self])}" if advise else head


def late_advice(misreads: list[Misread]) -> str:
    """How closures bound late in a loop go wrong, and how to bind their variables."""
    names = list(dict.fromkeys([m.name for m in misreads]
                               + [n for m in misreads for n, _ in m.plain]))
    late = [f"`{m.name}`" for m in misreads]
    were = (f"{late[0]} was" if len(late) == 1
            else f"{', '.join(late[:-1])} and {late[-1]} were")
    plain = ", ".join(dict.fromkeys(f"{n} = {fmt(v)}" for m in misreads for n, v in m.plain))
    also = f" It reads {plain} too, which that loop may have moved on as well." if plain else ""
    return (f"The closure was bound late: {were} rebound (a later turn of the loop) after "
            f"this _backward was made, and a closure reads its variables as they are when "
            f"it runs.{also} Bind them as it is made: "
            f"`def _backward({', '.join(f'{n}={n}' for n in names)}):`.")


def misread_sentences(trace: Trace, misreads: list[Misread]) -> list[str]:
    """One sentence per variable; the advice on binding once, after the last late one."""
    late = [m for m in misreads if m.late]
    out = [m.sentence(trace, advise=False) for m in misreads]
    if late:
        k = max(i for i, m in enumerate(misreads) if m.late)
        out[k] += " " + late_advice(late)
    return out


def node_ref(trace: Trace, nid: int) -> str:
    """`#5`, or `p (#5)` for a node with a name of its own."""
    label = trace.label(nid)
    return label if label == f"#{nid}" else f"{label} (#{nid})"


def state_before(writes, data, grad) -> tuple:
    """(data of, grad of): each node's data and grad as a `_backward` call began, from
    the state after it (`data`, `grad`) and its `writes`."""
    before: dict[tuple[int, Field], float] = {}
    for w in reversed(writes):
        before[(w.node, w.field)] = w.before
    return (lambda n: before.get((n, Field.DATA), data[n]),
            lambda n: before.get((n, Field.GRAD), grad[n]))


def misread_nodes(trace: Trace, index: int, data_of, grad_of) -> list[Misread]:
    """The closure variables of `_backward` event `index` that hold a node other than the
    call's own and its inputs: by the node ids recorded (`NODE_MARK`), or, in a trace
    without them, the variables whose `data` (and `grad`, if read) match no node of the
    call but exactly one other node made before it. `data_of`/`grad_of(n)`: node n's
    values as the call began."""
    fields: dict[str, dict[str, float]] = {}
    held: dict[str, int] = {}
    plain = []
    for shown, value in trace.values_at(index):
        if shown.endswith(NODE_MARK):
            held[shown[:-1]] = value  # type: ignore[assignment]
            continue
        var, _, attr = shown.partition(".")
        if attr in DATA_NAMES or attr in GRAD_NAMES:
            fields.setdefault(var, {})["data" if attr in DATA_NAMES else "grad"] = value
        elif not attr:
            plain.append((shown, value))
    owner = trace.event_node(index)
    own = (owner, *trace.children(owner))
    found = []
    for var, n in held.items():
        if type(n) is int and 0 <= n < trace.node_count and n not in own:
            instead = rebound(trace, n, owner)
            found.append(Misread(var, n, owner, tuple(sorted(fields.get(var, {}).items())),
                                 instead is not None, tuple(plain), instead))
    for var, read in fields.items():
        if var in held or "data" not in read:
            continue  # known by its id; or a grad alone (often 0), which tells too little

        def holds(n: int) -> bool:
            return all((data_of if f == "data" else grad_of)(n) == v for f, v in read.items())

        if any(holds(n) for n in own):
            continue
        made = [n for n in range(trace.node_count)
                if (trace.index.created_at(n) or 0) < index and holds(n)]
        if len(made) == 1:
            (n,) = made
            late = n > owner and trace.op(n) == trace.op(owner)
            found.append(Misread(var, n, owner, tuple(sorted(read.items())), late,
                                 tuple(plain)))
    return found


def rebound(trace: Trace, n: int, owner: int) -> int | None:
    """If node `n`, held by a closure of `owner`'s, is a later turn's of the loop that
    made `owner` (a node the same op made after it, or an input of one: `for x in xs`),
    the node it should have held: `owner`, or `owner`'s input in the same place."""
    op, kids = trace.op(owner), trace.children(owner)
    for m in range(owner + 1, trace.node_count):
        if trace.op(m) != op:
            continue
        if m == n:
            return owner
        theirs = trace.children(m)
        if n in theirs:
            k = theirs.index(n)
            return kids[k] if k < len(kids) else None
    return None


def _implied(trace: Trace, nid: int, out: str, g: float,
             contributions: list[Contribution], numerical: dict[int, float]) -> str:
    """The local derivative each input's grad writes imply, `Δgrad / out.grad`, for an op
    whose formula is not known (and the numerical one, where the doctor measured it)."""
    inputs = set(trace.children(nid))
    delta: dict[int, float] = {}
    labels: dict[int, str] = {}
    for c in contributions:
        if c.field == "grad" and c.target in inputs:
            delta[c.target] = delta.get(c.target, 0.0) + c.delta
            labels[c.target] = c.label
    parts = []
    for target, d in delta.items():
        tl = labels[target]
        if g == 0 or not math.isfinite(g):
            part = f"∂{out}/∂{tl}: unknown, as {out}.grad = {fmt(g)}"
        else:
            part = (f"∂{out}/∂{tl} = Δ{tl}.grad / {out}.grad = {fmt(d)} / {fmt(g)} = "
                    f"{fmt(d / g)}")
        if target in numerical:
            part += f" (numerically {fmt(numerical[target])})"
        parts.append(part)
    return "; ".join(parts)


def _formula(trace, data, op, nid, out, g, target, tl, operands, k):
    """(formula, numbers, expected delta) for write number k of a known op."""
    if not operands or k >= 2 or (k >= 1 and op not in ("+", "*")):
        return "", "", None
    if operands[k] != target:
        return "", "", None
    lhs = f"{tl}.grad +="
    if op == "+":
        return f"{lhs} {out}.grad", f"{fmt(g)}", g
    if op == "*":
        other = operands[1 - k]
        ol = name(trace.label(other))
        return (f"{lhs} {ol}.data × {out}.grad", f"{fmt(data[other])} × {fmt(g)}",
                data[other] * g)
    x = data[target]
    y = data[nid]
    if op.startswith("**"):
        try:
            n = float(op[2:])
            local = n * x ** (n - 1)
        except (ValueError, ZeroDivisionError, OverflowError):
            return "", "", None
        if isinstance(local, complex):
            return "", "", None
        return (f"{lhs} {op[2:]} × {tl}^({op[2:]} - 1) × {out}.grad",
                f"{fmt(local)} × {fmt(g)}", local * g)
    if op == "tanh":
        local = 1 - y * y
        return f"{lhs} (1 - {out}²) × {out}.grad", f"{fmt(local)} × {fmt(g)}", local * g
    if op == "exp":
        return f"{lhs} {out}.data × {out}.grad", f"{fmt(y)} × {fmt(g)}", y * g
    if op in ("ReLU", "relu"):
        local = 1.0 if y > 0 else 0.0
        return f"{lhs} ({out}.data > 0) × {out}.grad", f"{fmt(local)} × {fmt(g)}", local * g
    return "", "", None


def _source_formula(closure, line: int | None, trace: Trace | None = None) -> str:
    """The closure's own source line that made a write: how a custom op is explained."""
    if closure is None or line is None:
        return ""
    i = line - closure.first_line
    if 0 <= i < len(closure.lines):
        where = trace.places.line_in(closure.filename, line) if trace is not None else f"line {line}"
        return f"{where}: {closure.lines[i].strip()}"
    return ""
