"""The helpers that the code `mgtui.recording.inline.rewrite` rewrites calls as it runs (the recording's
hot path), and `INJECTED`, the one table of every name the rewritten code refers to.

Every name the rewrite puts into code is `__mgtui_<something>__` (a helper, or a record
column, or one of Python's own under a name of the rewrite's), or `__mgtui_<letter>`
(a temporary of the function it is in). Look the first kind up in `INJECTED` below:
it says what the name is during a run, and what it is once the run is over.

The helpers are written as module-level functions, and each run gets copies of them whose
globals are that run's own (`Inliner._helpers`): its record columns, its options and the
recorder's tables, under the names below. A global read costs no more than a closure's
variable, and a call does not copy some twenty closure cells into its frame and drop
them again, as nested functions would on every node and every `_backward` call. The
names under "filled in for each run" below are placeholders until then. Each helper is
a hot-path copy of a `mgtui.recording.probes.Probe` method, named in its docstring.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

from mgtui.recording.inplace_grads import MAY, note_inplace
from mgtui.recording.probes import CLASS_CODE, OTHER_CODE, ordered
from mgtui.recording.store import BACKWARD, CREATE, ID, NODE_ROW, PACK_EVERY

_KEYS = type({}.keys())  # an ordered `_prev` (`mgtui.recording.inline.rewrite._ordered_prev`)
# The `here` of a call from code that cannot hold one (a lambda, a module's or a class
# body's own code): never filled in, so such calls always take the long way.
NO_HERE: list = [None, 0]
may_inplace = MAY.get  # id of a closure's code -> False if it cannot write a grad in place

# -- filled in for each run (`Inliner._helpers`) -------------------------------------------
context = None  # the recording's (`mgtui.recording.context.RecordingContext`)
records = None  # its store (`mgtui.recording.store.Records`)
arrays = None  # `Records.arrays`: array values, beside the rows
nodes: list = []  # the record columns (`Records`)
id_base: list = [0]  # `Records.id_base`: the nodes packed, ids go on from there
kids: list = []
events: list = []
writes: list = []
stack: list = []
made_inside: list = []
late_labels: dict = {}
add_kid = add_node = add_event = add_write = None  # `Records.add_*`: a row each
array_made = array_write = None  # `Records.arrays.made`, `.write` (values not floats)
max_nodes = 0
limit = 0  # the next node that takes the long way (`at_limit`); -1 once the run is to stop
on_progress = on_create = before = watch = None  # the recorder's hooks
skip: object = ()  # the `on_backward` hook's ops to leave out
scenario_line = named = candidate = None  # the line finder, the namer's calls
closure_ids: dict = {}
closure_index = kind_of = code_kind = remembered = None
direct: dict = {}  # library frames the scenario's code called (`LineFinder.direct`)
line_at: dict = {}  # a scenario code's lines by instruction (`LineFinder.line_at`)
class_codes: dict = {}  # the Value classes' methods' code, by id (`LineFinder`)
op_of_maker = None  # `mgtui.recording.shapes.op_of_maker`: the op of a class without `_op`
getframe = None  # sys._getframe
record_call = run_backward = None  # `mgtui.recording.backward_calls.BackwardCalls`
note_caller = None  # `mgtui.recording.backward_calls.Callers.note`: where a `backward()` was called from
# The library frame that made the last node through an op, its line and the op's code,
# twice (`made`); and what a frame's `here` must hold for its line to be trusted: a new
# object each time a class comes in (`Inliner.forget_lines`).
last: list = [None] * 6
lines_valid: object = object()

# the functions each run gets a copy of (`Inliner._helpers`)
HELPERS = ("made", "made_again", "call_backward", "call_fully", "inside_made", "backward_of",
           "event", "label", "interrupt", "at_limit", "stop_making")


# -- every name the rewritten code refers to ------------------------------------------------


class Injected(NamedTuple):
    """A name the rewritten code refers to (as a global of its module)."""

    name: str  # as the rewritten code spells it
    during: str | None  # during a run: this run's global of that name (`Inliner._helpers`);
    #                     None: `after`, always
    after: object  # once the run is over, for code rewritten for it that outlives it
    what: str


MADE, MADE_AGAIN, CALL, BACKWARD_OF, EVENT, LABEL, STACK, ADD_WRITE, NO_HERE_NAME = (
    "__mgtui_made__", "__mgtui_made_again__", "__mgtui_call_backward__",
    "__mgtui_backward_of__", "__mgtui_event__", "__mgtui_label__", "__mgtui_stack__",
    "__mgtui_add_write__", "__mgtui_no_here__")
ARRAY_WRITE, FLOAT = "__mgtui_array_write__", "__mgtui_float__"
# Python's own, for the test `mgtui.recording.inline.rewrite._ordered_prev` writes inline
TYPE, LEN, TUPLE, KEYS, SET, FROZENSET = (
    "__mgtui_type__", "__mgtui_len__", "__mgtui_tuple__", "__mgtui_keys__", "__mgtui_set__",
    "__mgtui_frozenset__")

INJECTED: tuple[Injected, ...] = (
    Injected(MADE, "made", lambda node, children: None,
             "ends a Value class's `__init__`: numbers and records the node (`made`)"),
    Injected(MADE_AGAIN, "made_again", lambda node, children: None,
             "`made`, in an `__init__` that calls another, which may have numbered it"),
    Injected(CALL, "call_backward", lambda node, here: node._backward(),
             "`x._backward()`, recorded (`call_backward`)"),
    Injected(BACKWARD_OF, "backward_of", lambda node: node._backward,
             "any other read of `x._backward`: the closure bound to the recorder"),
    Injected(EVENT, "event", lambda *args: None,
             "a write of `grad` or `data` outside any `_backward` call (`event`)"),
    Injected(LABEL, "label", lambda node, value: None, "a write of `label` (`label`)"),
    Injected(STACK, "stack", [], "the `_backward` calls running (`Records.stack`)"),
    Injected(ADD_WRITE, "add_write", lambda row: None,
             "a write inside a `_backward` call, appended inline (`Records.add_write`)"),
    Injected(ARRAY_WRITE, "array_write", lambda nid, field, before, value: (before, value),
             "a write of a value that is not a float: (before, after) as the row holds "
             "them (`mgtui.recording.array_values.ArraySnapshots.write`)"),
    Injected(FLOAT, None, float, "Python's `float`"),
    Injected(NO_HERE_NAME, "NO_HERE", NO_HERE,
             "the `here` of a call from code without a frame list of its own"),
    Injected(TYPE, None, type, "Python's `type`"),
    Injected(LEN, None, len, "Python's `len`"),
    Injected(TUPLE, None, tuple, "Python's `tuple`"),
    Injected(KEYS, None, dict.fromkeys, "Python's `dict.fromkeys`"),
    Injected(SET, None, set, "Python's `set`"),
    Injected(FROZENSET, None, frozenset, "Python's `frozenset`"),
)


def injected_during(run: dict) -> dict:
    """Every injected name -> what it is during the run whose globals are `run`."""
    return {i.name: i.after if i.during is None else run[i.during] for i in INJECTED}


def injected_after() -> dict:
    """Every injected name -> what it is once the run is over."""
    return {i.name: i.after for i in INJECTED}


def made_again(node, children) -> None:
    """`made`, at the end of an `__init__` that calls another one (a subclass's
    `super().__init__`), which may have numbered the node already."""
    if getattr(node, ID, None) is None:
        made(node, children, 3)


def at_limit(nid: int) -> int:
    """The long way of node `nid`, at `limit`: past `--max-nodes` or once the run is to
    stop, no more nodes; else the caller is told how far the run is (`on_progress`, which
    packs the store: `PACK_EVERY` nodes a time, before this node's rows begin), and
    `limit` moves on to the next such node. The node's id, as the store counts now.
    (One comparison a node, `nid >= limit`, stands for the three reasons.)"""
    global limit
    if limit < 0 or context.stop_reason is not None or nid >= max_nodes:
        stop_making()
    if on_progress is not None:
        on_progress(nid)
    limit = min(max_nodes, (nid // PACK_EVERY + 1) * PACK_EVERY)
    if context.stop_reason is not None:  # (a `cancel()` from another thread sets the reason
        limit = -1  # before it calls `interrupt`: one of the two stores comes last)
    return len(nodes) // NODE_ROW + id_base[0]


def stop_making() -> None:
    """No more nodes: too many (`--max-nodes`), or the run is to stop (`interrupt`)."""
    if context.stop_reason is None:
        interrupt()
    context.over_limit()


def made(node, children, depth=2) -> None:
    """Number and record a node at the end of its class's `__init__` (`depth` frames up
    from here is the code that called the class): `Probe.node_made`, inlined."""
    nid = len(nodes) // NODE_ROW + id_base[0]
    if nid >= limit:  # too many nodes, the run is to stop, or a pack is due
        nid = at_limit(nid)
    try:
        prev = node._prev
    except AttributeError:
        prev = ()
    shape = type(prev)
    if shape is not tuple and shape is not _KEYS and (
            shape is set or isinstance(prev, (set, frozenset))) and len(prev) > 1:
        prev = node._prev = in_given_order(prev, children)
    n_before = len(kids)
    try:
        for child in prev:  # (a loop: cheaper than a map for two children)
            add_kid(child._mgtui_id)
    except AttributeError:  # a child made before the recording started
        del kids[n_before:]
        kids.extend(getattr(c, ID, -1) for c in prev)
    if on_create is not None:
        on_create(nid, node.__dict__)
    node._mgtui_id = nid
    frame = getframe(depth)  # the caller of the class's __init__
    back = frame.f_back
    code = frame.f_code
    if back is last[0] and code is last[2]:  # the op that made the last node, called
        line = last[1]  # from the same library frame (a library's loop making nodes)
    elif back is last[3] and code is last[5]:
        line = last[4]
    else:
        kind = kind_of(id(code))
        if kind is None:
            kind = code_kind(code)
        op_code = None
        if kind is CLASS_CODE and back is not None:  # made by an op: its caller's line
            op_code, frame, code = code, back, back.f_code
            kind = kind_of(id(code))
            if kind is None:
                kind = code_kind(code)
        if type(kind) is dict or (kind is not CLASS_CODE and kind is not OTHER_CODE):
            key = frame.f_lasti << 64 | id(code)  # the scenario's own code: its line, kept
            line = line_at.get(key)  # (`f_lineno` decodes the code's line table)
            if line is None:
                line = line_at[key] = frame.f_lineno
            if type(kind) is not dict:  # a function's: its caller may bind the node too
                named(nid, frame, node)  # (a wrapper op)
            elif kind:  # module-level code: made straight under an assignment's value?
                spot = kind.get(frame.f_lasti)
                if spot is not None:
                    candidate(frame, frame.f_lasti, spot, node, nid)
        else:
            line = remembered(frame)  # a library's frame, asked about before
            if line is None:
                line = scenario_line(frame)
            if kind is CLASS_CODE or frame in direct:  # an op made by another op (on up
                named(nid, frame, node)  # to its name), a helper the scenario called
            elif op_code is not None:  # an op called by a library's frame: remembered
                last[3:], last[:3] = last[:3], (frame, line, op_code)
    try:
        op = node._op
    except AttributeError:  # a class without an op field: the op of the method that made it
        op = op_of_maker(getframe(depth), class_codes) if prev else ""
    data = node.data
    if type(data) is not float:  # an array, an int... (`mgtui.recording.array_values`)
        data = array_made(nid, data, getattr(node, "grad", None))
    add_node((len(kids), op, getattr(node, "label", None), data, line))
    if stack:  # made inside a `_backward`: its step follows that call's writes
        made_inside.append(nid)
    else:
        add_event((CREATE, nid, 0.0, 0.0, 0, -1, len(writes)))


def in_given_order(prev, children):
    """A set `_prev` of more than one child as an ordered one (`ordered`): the children
    in the order the op gave them, where that can be told. (Rarely needed: the rewritten
    `__init__` orders `_prev` itself, `mgtui.recording.inline.rewrite._ordered_prev`.)"""
    try:
        keys = dict.fromkeys(children).keys()
    except TypeError:
        keys = None
    if keys is None or keys != prev:
        keys = ordered(prev, (None, children), {})
    return keys


def call_backward(node, here):
    """`node._backward()`, recorded: its common case, a node's call from a frame that
    has made one before (`backward()`'s loop), whose line that frame's `here` holds
    (`Rewriter`: a list of its own, `[lines_valid, line]` once known); the rest in
    `call_fully`."""
    fn = node._backward
    try:
        nid = node._mgtui_id
        ci = closure_ids[id(fn.__code__)]
    except (AttributeError, KeyError):  # not a node or no function (a class with
        return call_fully(node, fn, getframe(1), here)  # the hooks), or a first call
    if here[0] is not lines_valid or nid is None:  # (never valid with a `before` hook,
        return call_fully(node, fn, getframe(1), here)  # nor once the run is to stop)
    if watch is not None:
        try:
            op = node._op
            watched = op not in skip
        except AttributeError:
            op, watched = None, None not in skip
        except TypeError:  # an `_op` that cannot be hashed
            watched = True
        if watched:
            watch(op, fn)
    add_event((BACKWARD, nid, 0.0, 0.0, here[1], ci, len(writes)))
    stack.append(nid)
    try:
        return fn()
    finally:  # writes into parts of an array grad (a closure known not to: no call)
        if arrays.last and may_inplace(id(fn.__code__)) is not False:
            note_inplace(records, fn)
        stack.pop()
        if made_inside and not stack:
            inside_made()


def call_fully(node, fn, frame, here=NO_HERE):
    """`call_backward` for any call, from `frame` (whose `here` it fills in):
    `Probe.backward_called`."""
    if type(fn) is partial and fn.func is run_backward:
        return fn()  # a node whose class has the hooks: they record it
    try:
        nid = node._mgtui_id
    except AttributeError:
        return fn()  # not a node
    if nid is None:
        return fn()
    if before is not None or context.stop_reason:
        return record_call(nid, node.__dict__ if before is not None else None, fn,
                           frame)
    if watch is not None:
        try:
            op = node._op
            watched = op not in skip
        except AttributeError:
            op, watched = None, None not in skip
        except TypeError:  # an `_op` that cannot be hashed
            watched = True
        if watched:
            watch(op, fn)
    try:
        ci = closure_ids[id(fn.__code__)]
    except (AttributeError, KeyError):  # a closure's first call, or no function
        ci = closure_index(getattr(fn, "__code__", None))
    code = frame.f_code
    kind = kind_of(id(code))
    if isinstance(kind if kind is not None else code_kind(code), dict):
        line = frame.f_lineno  # a call made by hand in the scenario
    else:  # (`backward()`: its next calls take the way in `call_backward`)
        line = remembered(frame)
        if line is None:
            line = scenario_line(frame)
        if here is not NO_HERE:
            here[0], here[1] = lines_valid, line
    note_caller(frame)
    add_event((BACKWARD, nid, 0.0, 0.0, line, ci, len(writes)))
    stack.append(nid)
    try:
        return fn()
    finally:
        if arrays.last:  # writes into parts of an array grad
            note_inplace(records, fn)
        stack.pop()
        if made_inside and not stack:
            inside_made()


def inside_made() -> None:
    """The creation steps of the nodes made inside the `_backward` call that just
    ended, after its writes."""
    for made_ in made_inside:
        add_event((CREATE, made_, 0.0, 0.0, 0, -1, len(writes)))
    made_inside.clear()


def backward_of(node):
    """`node._backward` read to be called later: bound to the recorder."""
    fn = node._backward
    nid = getattr(node, ID, None)
    if nid is None or (type(fn) is partial and fn.func is run_backward):
        return fn
    return partial(run_backward, node.__dict__, fn)


def event(kind: int, nid: int, before: object, value: object) -> None:
    """A write outside any `_backward`: an event of its own (`Probe.field_written`; the
    rewritten code appends a write inside a call itself)."""
    add_event((kind, nid, before, value, scenario_line(getframe(1)), -1, len(writes)))


def label(node, value) -> None:
    nid = getattr(node, ID, None)
    if nid is not None:
        late_labels[nid] = value


def interrupt() -> None:
    """The run is to stop (`Recorder.cancel`, or too many nodes): the next node and the
    next `_backward` call take the long way, which looks at why. (Rebinding these names
    from another thread is safe: each is one store.)"""
    global lines_valid, limit
    lines_valid = object()
    limit = -1
