"""Names for the nodes a scenario gives no `.label`: the variable an assignment bound a
node to when it was made (`loss` in every training step; `p` for `p = ops.sigmoid(z)`, a
node a helper function made; `c` for `c = mul(a, b)`, where the scenario's own wrapper
bound it to its local `out`), else, for a parameter, its path from a global object
(`model.layers[0].neurons[1].w[0]`).

Assignments are found without tracing. Before the run, each assignment's value span in
the scenario's AST is matched to the instructions that compute it (`co_positions`): a
node made by the Value class's own methods straight under such an instruction is a
candidate for that target. Builtins like `sum(...)` make many candidates under one
instruction, so a candidate is confirmed only once its frame has moved on or makes the
next one there, by reading the variable (`frame.f_locals`): only the node the variable
holds gets its name. A node is a candidate of every scenario frame on its way up (through
the Value class's methods, the scenario's functions and at most one function of
another module called from the scenario): the outermost binding that holds it names
it, an inner one (a wrapper's `out`) only if none does. The recorder looks the instruction up as it numbers the node
(`Namer.spots`), so the nodes made elsewhere (nearly all of them) cost no call.
Loop variables (`for p in model.parameters()`) bind nodes they did not make, so they
name nothing. Paths are found at the end of the run by a bounded walk of the
scenario's globals that reads only lists, tuples, dicts and instance `__dict__`s, so no
user code (no property, no `__getattr__`) runs.
"""

from __future__ import annotations

import ast
import types
from array import array
from collections import deque
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    from mgtui.recording.store import Records

Span = tuple  # (lineno, end_lineno, col, end_col), as co_positions and the AST give them
MAX_DEPTH = 8  # steps of a parameter path
MAX_FRAMES_UP = 8  # frames above the Value class's methods looked at for an assignment
MAX_OBJECTS = 200_000  # objects the path walk visits at most
_ATOMS = (str, bytes, bytearray, int, float, complex, bool, type(None), range, memoryview)
_OPAQUE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType, types.FrameType, types.CodeType, types.GeneratorType,
           types.CoroutineType, types.AsyncGeneratorType)


# -- where assignments are, by instruction ------------------------------------------------------


def _span(node: ast.AST) -> Span:
    return (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset)


def _name_of(target: ast.AST) -> str | None:
    return target.id if isinstance(target, ast.Name) else None


def assignment_values(tree: ast.AST) -> dict[Span, tuple[str, Span]]:
    """The span of each value an assignment binds to a plain name -> (the name, the span
    of the whole statement). Tuple targets pair up with tuple values element by element;
    `x += v` is found by the statement's own span, which its instruction carries."""
    found: dict[Span, tuple[str, Span]] = {}

    def bind(target: ast.AST, value: ast.AST, stmt: ast.AST) -> None:
        name = _name_of(target)
        if name is not None:
            found.setdefault(_span(value), (name, _span(stmt)))
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                bind(t, v, stmt)

    for node in _walk(tree):
        if isinstance(node, ast.Assign):
            bind(node.targets[0], node.value, node)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            bind(node.target, node.value, node)
        elif isinstance(node, ast.NamedExpr):
            bind(node.target, node.value, node)
        elif isinstance(node, ast.AugAssign) and _name_of(node.target):
            found.setdefault(_span(node), (node.target.id, _span(node)))
    return found


_LEAF_NODES = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)


def _walk(tree: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk`'s nodes, in its order (breadth first), without its generator per node
    and field: a recording walks the scenario's tree as it starts, and `ast.walk` took
    a millisecond of it on a 100-line scenario. (Contexts and operators, which hold
    nothing, are not visited.)"""
    todo = deque([tree])
    pop, push, extend, AST = todo.popleft, todo.append, todo.extend, ast.AST
    while todo:
        node = pop()
        yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                extend(v for v in value if isinstance(v, AST) and not isinstance(v, _LEAF_NODES))
            elif isinstance(value, AST) and not isinstance(value, _LEAF_NODES):
                push(value)


def loop_names(tree: ast.Module) -> set[str]:
    """The globals that module-level `for` and `with` statements bind: loop variables,
    which hold whatever the loop left there, not a thing the script named."""
    names: set[str] = set()
    todo = list(tree.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        targets: list[ast.AST] = []
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            targets.append(stmt.target)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            targets.extend(item.optional_vars for item in stmt.items if item.optional_vars)
        for target in targets:
            names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        for field in ("body", "orelse", "finalbody", "handlers"):
            todo.extend(getattr(stmt, field, ()))
        if isinstance(stmt, ast.Match):
            for case in stmt.cases:
                todo.extend(case.body)
    return names


def codes_in(code: types.CodeType) -> Iterator[types.CodeType]:
    """`code` and every code object compiled inside it."""
    todo = [code]
    while todo:
        c = todo.pop()
        yield c
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


Spots = dict  # code -> {instruction offset: (target, last offset of the statement)}


def assignment_spots(code: types.CodeType, tree: ast.AST) -> Spots:
    """For each code object of the scenario, the instructions whose value an assignment
    binds, by offset (`frame.f_lasti`), with the target's name and where the statement
    ends (its store)."""
    values = assignment_values(tree)
    spots: Spots = {}
    for c in codes_in(code):
        positions = list(c.co_positions())
        here: dict[int, tuple[str, int]] = {}
        last_stmt, last_end = None, -1  # (a value's instructions share their statement's end)
        for k, pos in enumerate(positions):
            hit = values.get(pos)
            if hit is None:
                continue
            name, stmt = hit
            if stmt == last_stmt and k <= last_end:
                end = last_end  # (inside the run of the statement found for the last one)
            else:
                end = k
                while end + 1 < len(positions) and _inside(positions[end + 1], stmt):
                    end += 1
                last_stmt, last_end = stmt, end
            here[2 * k] = (name, 2 * end)
        if here:
            spots[c] = here
    return spots


def _inside(pos: tuple, stmt: Span) -> bool:
    line, end_line, col, end_col = pos
    if line is None or end_line is None:
        return False
    s_line, s_end, s_col, s_end_col = stmt
    after_start = (line, col if col is not None else 0) >= (s_line, s_col)
    before_end = (end_line, end_col if end_col is not None else 0) <= (s_end, s_end_col)
    return after_start and before_end


# -- the namer --------------------------------------------------------------------------------


class Namer:
    """Names nodes as a recording runs. For each node it numbers, the recorder finds the
    first frame above the Value class's own methods, as its line finder does, and looks
    that frame's instruction up in `spots` itself (by `id(frame.f_code)`, then
    `frame.f_lasti`): only a node made straight under an assignment's value costs a call,
    `candidate(frame, offset, spot, node, nid)`. `made(nid, frame, node)` does the whole
    search from any frame, for the recorder's hooks and for ops made by other ops.
    `finish()` runs once, after the run. `node_id(obj)` is the id of a recorded node,
    None for anything else.
    `name_ids` and `name_texts` are every name confirmed so far, in the order confirmed,
    the node's id and its name (two lists of atoms, which the collector does not track;
    the runner's child streams them as they grow); `names` pairs them up, and `name_of`
    is 1 at the id of each node that has one (a byte a node: a dict of their ids kept an
    int object for each, scattered through the heap, and a long recording's memory grew
    by a hundred bytes a node). `names=(ids, texts)` gives the two columns to append to."""

    def __init__(self, code: types.CodeType, source: str, class_codes: dict,
                 node_id: Callable[[object], int | None],
                 names: tuple[array, list[str]] | None = None) -> None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            tree = ast.Module(body=[], type_ignores=[])
        # by the code object's id: hashing a code object hashes its constants, every
        # time. The scenario's codes live as long as the recorder's scenario does.
        self.spots = {id(c): here for c, here in assignment_spots(code, tree).items()}
        self._codes = list(codes_in(code))  # (keeps the ids above theirs)
        self.scenario_codes = {id(c) for c in self._codes}
        self.top = id(code)  # the module's own code: no scenario frame is above it
        # frames the scenario's code called (`LineFinder.direct`, which fills it as it
        # walks): a helper's frame, whose nodes the scenario's variable may bind
        self.direct: dict = {}
        self.loops = loop_names(tree) if isinstance(tree, ast.Module) else set()
        self.class_codes = class_codes  # the Value classes' methods' code, by id
        self.node_id = node_id
        # (frame, offset) -> (end, target, id(node), nid, inner): a candidate waits there
        # until its frame has moved on or made another node under the same instruction.
        # The node is not kept alive here: its address tells a miss cheaply, its id
        # confirms. `inner`: a binding inside a function whose caller's binding of the
        # same node comes first; confirmed, it waits in `fallback` for that one.
        self.pending: dict[tuple, tuple] = {}
        self.fallback: dict[int, str] = {}
        # (the recording's own columns, `Records.name_ids` and `name_texts`, if given)
        self.name_ids = array("i") if names is None else names[0]
        self.name_texts: list[str] = [] if names is None else names[1]  # (after its id)
        self.name_of = bytearray()
        self.candidate = self._candidate_hook()
        self.made = self._made_hook()

    def _made_hook(self) -> Callable[[int, types.FrameType, object], None]:
        spots_get, class_codes, candidate = self.spots.get, self.class_codes, self.candidate
        scenario_codes, top, direct = self.scenario_codes, self.top, self.direct
        # The scenario frames above the last two frames walked from, each with its
        # code's spots: a frame's callers do not change while it runs, and a scenario
        # function most often makes several nodes in turn (`X @ W + b`, then `.relu()`),
        # or two frames take turns (`sum(p * p for p in ...)`: the generator's and its
        # caller's). The frames are kept alive here until two others take their place.
        walked: list = [None, (), None, ()]

        def made(nid: int, f: types.FrameType, node: object) -> None:
            """Is this node made under an assignment's value? Up through the Value
            class's own methods (`a - b` is `a + (-b)`), the scenario's own functions (a
            wrapper op) and one function of another module called from the scenario (a
            helper: `ops.sigmoid`), each scenario frame whose instruction is an
            assignment's value is a candidate: the outermost first."""
            cid = id(f.f_code)
            while cid in class_codes:
                f = f.f_back
                if f is None:
                    return
                cid = id(f.f_code)
            if cid not in scenario_codes:  # a library's frame: a helper the scenario called?
                if f not in direct:  # (the common case: nothing to name)
                    return
                f = f.f_back
            if f is walked[0]:
                chain = walked[1]
            elif f is walked[2]:
                chain = walked[3]
            else:
                chain = _chain(f)
                walked[2:], walked[:2] = walked[:2], (f, chain)
            found = []
            for frame, spots in chain:
                lasti = frame.f_lasti
                spot = spots.get(lasti)
                if spot is not None:
                    found.append((frame, lasti, spot))
            last = len(found) - 1
            for k, (frame, lasti, spot) in enumerate(found):  # (no frame runs meanwhile:
                candidate(frame, lasti, spot, node, nid, k < last, not k)  # one sweep)

        def _chain(f: types.FrameType) -> tuple:
            """The scenario frames from `f` up that have assignments' spots, each with
            them (at most `MAX_FRAMES_UP` frames looked at, up to the module's own)."""
            chain = []
            for _ in range(MAX_FRAMES_UP):
                cid = id(f.f_code)
                if cid not in scenario_codes:
                    break
                spots = spots_get(cid)
                if spots is not None:
                    chain.append((f, spots))
                f = f.f_back
                if cid == top or f is None:
                    break
            return tuple(chain)

        return made

    def _candidate_hook(self) -> Callable:
        pending, name_of, node_id = self.pending, self.name_of, self.node_id
        fallback = self.fallback
        add_id, add_text = self.name_ids.append, self.name_texts.append

        def give(nid: int, name: str) -> None:
            if nid >= len(name_of):
                name_of.extend(bytes(nid + 1 - len(name_of) + 4096))
            name_of[nid] = 1
            add_id(nid)
            add_text(name)

        def settle(frame, entry: tuple) -> None:
            """Name the pending node if its variable holds it (an inner binding: keep the
            name in `fallback`, for its caller's binding to come first); else give it the
            name an inner binding confirmed."""
            _, target, address, nid, inner = entry
            if nid < len(name_of) and name_of[nid]:  # (named: its frame's locals unread)
                return
            try:
                held = frame.f_locals.get(target)
            except Exception:  # noqa: BLE001 - a frame in a state that cannot be read
                held = None
            holds = id(held) == address and node_id(held) == nid
            if inner:
                if holds:
                    fallback[nid] = target
                return
            name = target if holds else fallback.get(nid)
            fallback.pop(nid, None)
            if name is not None:
                give(nid, name)

        def candidate(frame, offset: int, spot: tuple[str, int], node: object,
                      nid: int, inner: bool = False, sweep: bool = True) -> None:
            """A candidate for `node` at `frame`'s instruction `offset`; the candidates
            that have moved on settled first (`sweep`: False for a node's candidates
            after its first, the same moment: the first's sweep found them all)."""
            key = (frame, offset)
            entry = pending.get(key)
            if entry is not None:  # the same instruction again: a loop's next turn, or
                settle(frame, entry)  # `sum` at work (replaced below)
            if sweep and len(pending) > (entry is not None):
                for key_, entry in list(pending.items()):
                    fr, at = key_
                    if not at <= fr.f_lasti <= entry[0]:  # stored its value and moved on
                        del pending[key_]
                        settle(fr, entry)
            target, end = spot
            pending.pop(key, None)  # (in the order made: an inner binding settles first)
            pending[key] = (end, target, id(node), nid, inner)

        self._settle = settle
        self._give_name = give
        return candidate

    def forget_since(self, first: int) -> None:
        """Drop the candidates numbered `first` or later: their ids are taken back."""
        for key, entry in list(self.pending.items()):
            if entry[3] >= first:
                del self.pending[key]
        for nid in [n for n in self.fallback if n >= first]:
            del self.fallback[nid]

    def finish(self, scope: dict, is_leaf: Callable[[int], bool],
               node_id: Callable[[object], int | None] | None = None) -> None:
        """Settle what is pending, then name what the scenario's globals hold: a global
        variable's node by its name (loop variables aside), and parameters (leaves) by
        their path from a global object. `node_id` tells the nodes among the objects
        the globals reach (by default `self.node_id`)."""
        pending = list(self.pending.items())
        self.pending.clear()
        for (frame, _), entry in pending:
            self._settle(frame, entry)
        for nid, name in list(self.fallback.items()):  # an inner binding, none outside it
            if not self.has_name(nid):
                self._give_name(nid, name)
        self.fallback.clear()
        node_id = node_id or self.node_id
        roots = [(name, value) for name, value in list(scope.items())
                 if not name.startswith("_") and name not in self.loops]
        for name, value in roots:
            nid = node_id(value)
            if nid is not None:
                self._give(nid, name)
        for path, nid in parameter_paths(roots, node_id):
            if is_leaf(nid):
                self._give(nid, path)

    def has_name(self, nid: int) -> bool:
        return 0 <= nid < len(self.name_of) and self.name_of[nid] == 1

    def _give(self, nid: int, name: str) -> None:
        if not self.has_name(nid):
            self._give_name(nid, name)

    @property
    def names(self) -> list[tuple[int, str]]:
        """(node id, name) of every name confirmed so far, in the order confirmed."""
        n = len(self.name_texts)
        return list(zip(self.name_ids[:n], self.name_texts[:n]))


def names_of_run(namer: Namer, scope: dict, records: Records, torch,
                 node_id: Callable[[object], int | None] | None = None
                 ) -> list[tuple[int, str]]:
    """(id, name) of every node `records` holds, named by `namer`: by the variable it
    was bound to or by its path from a global object of `scope`, the scenario's
    namespace; call once, after the run. `node_id`: how an object reached from the
    globals is a recorded node (by default, it is one: `mgtui.show` records copies, and
    names them from the originals). `torch` (`mgtui.recording.torch_watch.TorchWatch`)
    adds the torch engine's names, if the run used it."""
    try:
        namer.finish(scope, records.is_leaf, node_id)
    except Exception:  # noqa: BLE001 - an object that cannot be read: fewer names
        pass
    count = records.node_count()
    named = [(nid, name) for nid, name in namer.names if nid < count]
    if torch.used:
        try:
            named += torch.names(scope)
        except Exception:  # noqa: BLE001 - an object that cannot be read: fewer names
            pass
    return named


def parameter_paths(roots: list[tuple[str, object]], node_id: Callable[[object], int | None],
                    max_depth: int = MAX_DEPTH, max_objects: int = MAX_OBJECTS
                    ) -> Iterator[tuple[str, int]]:
    """(path, node id) for each node reachable from `roots` by one or more steps through
    lists, tuples, dicts (by str or int key) and instance attributes, shortest paths
    first. Only containers' items and instance `__dict__`s are read: no user code runs."""
    seen: set[int] = set()
    queue: deque = deque()
    for name, value in roots:
        if node_id(value) is None and _walkable(value):
            queue.append((name, value, 0))
            seen.add(id(value))
    visited = 0
    while queue and visited < max_objects:
        path, obj, depth = queue.popleft()
        visited += 1
        for step, child in _steps(obj):
            if id(child) in seen:
                continue
            seen.add(id(child))
            nid = node_id(child)
            if nid is not None:
                yield path + step, nid
            elif depth + 1 < max_depth and _walkable(child):
                queue.append((path + step, child, depth + 1))


def _walkable(obj: object) -> bool:
    return not isinstance(obj, _ATOMS + _OPAQUE)


def _steps(obj: object) -> Iterator[tuple[str, object]]:
    if type(obj) in (list, tuple):
        for k, item in enumerate(obj):
            yield f"[{k}]", item
    elif type(obj) is dict:
        for key, item in list(obj.items()):
            if type(key) is str:
                yield f"[{key!r}]", item
            elif type(key) is int:
                yield f"[{key}]", item
    else:
        try:
            attrs = object.__getattribute__(obj, "__dict__")
        except AttributeError:
            return
        if type(attrs) is not dict:
            return
        for key, item in list(attrs.items()):
            if type(key) is str and key.isidentifier() and not key.startswith("__"):
                yield f".{key}", item

