"""Recording inlined into the code that touches the nodes: the recorder's fast path.

The hooks (`mgtui.recording.dict_hooks`) observe a Value class from outside, with descriptors on
`grad`, `data`, `_backward` and `label` and a wrapper around `__init__`. Every write then
costs a call into Python, and a data descriptor on `grad` also turns off Python 3.11's
specialisation of `a.grad` reads. Where a class's source is available, this module
rewrites the code instead, from its syntax tree, keeping every line number:

- a store to `x.grad` or `x.data` becomes the store itself followed by the record of it,
  appended inline (`__mgtui_add_write__(...)` inside a `_backward`, an event of its
  own outside one), only if `x` is a numbered node;
- a store to `x.label` is followed by `__mgtui_label__(x, value)`;
- `x._backward()` becomes `__mgtui_call_backward__(x, __mgtui_h)`, where `__mgtui_h` is
  a list the function makes as it starts, in which the recorder keeps the scenario line
  of the function's calls (`__mgtui_no_here__` where there is no function: a lambda, a
  module's or a class body's code); any other read of `x._backward` becomes
  `__mgtui_backward_of__(x)` (the closure bound to the recorder);
- the `__init__` of a Value-like class ends with `__mgtui_made__(self, children)`, the one
  call through which every new node is numbered and recorded (`inline_helpers.made`;
  `__mgtui_made_again__` in an `__init__` that calls another, which may have numbered
  the node already); there,
  `self._prev = set(_children)` keeps two or more children in the order given
  (`_ordered_prev`), which the hooks do after the fact.

The class keeps no descriptor, so reads of `grad` and `data` stay plain instance-dict
reads, and nodes keep their id in an ordinary attribute (`ID`).

The rewrite is three modules: this one (the syntax tree's rewrite, `Rewriter`, whose
docstring lists the state it keeps); `mgtui.recording.inline.helpers`, the helpers the rewritten
code calls, with `INJECTED`, the one table of every `__mgtui_...__` name it refers to;
and `mgtui.recording.inline.probe`, the probe that does all this for the length of a run
(`BesideFinder`, the code swaps, the helpers given to each rewritten module).

What is rewritten: the scenario itself (compiled rewritten from its source); modules
beside the scenario imported during the run (loaded rewritten, `BesideFinder`); and,
for the length of the run, the functions of every module that defines an adopted Value
class, refers to one, or lives beside the scenario: their `__code__` is swapped for the
rewritten code compiled from the same file, only where the function's own code is the
one that file compiles to, and put back afterwards. A class that cannot be adopted (no
source, fields in `__slots__` or under names other than micrograd's, its own class
attributes on the fields, an `__init__` taking `*args`) keeps the recorder's hooks; the
hooks then leave to the rewritten code the writes it records itself.

Not seen, where the hooks would see them: writes to an adopted class's nodes made by
code that is not rewritten (a module without source; the module-level code of a module
elsewhere, run as it is imported; closures made before the run; `exec` of a string;
`setattr` other than as a statement). A class whose fields go by other names has
the hooks; on its nodes, a store to an attribute micrograd would name (`x.data = ...`
where its number is `value`) is taken for that field by the rewritten code. Also, a
temporary of the rewrite keeps the last node written in a function alive until the
function returns, and a proxy whose `__getattr__` answers `_mgtui_id` for a node it
wraps has its own writes taken for the node's. A node whose `__init__` is called again by hand (`v.__init__(2.0)`) is recorded
as a new node, with the values it is given; the hooks record them as writes to it.
"""

from __future__ import annotations

import __future__
import ast
import linecache
import os
import types

from mgtui.recording.inline.helpers import (
    ADD_WRITE,
    ARRAY_WRITE,
    FLOAT,
    BACKWARD_OF,
    CALL,
    EVENT,
    FROZENSET,
    KEYS,
    LABEL,
    LEN,
    MADE,
    MADE_AGAIN,
    SET,
    STACK,
    TUPLE,
    TYPE,
)
from mgtui.recording.inline.helpers import NO_HERE_NAME as NO_HERE
from mgtui.recording.blocks import COMPILED_FROM
from mgtui.recording.probes import REQUIRED, SHAPES, WRITTEN
from mgtui.recording.store import ID

# a class attribute under any of these names changes what a plain read gives
OWN_NAMES = REQUIRED | {"label", ID}
# Every `__mgtui_...__` name the rewritten code refers to is in one table,
# `mgtui.recording.inline.helpers.INJECTED`; the rest are the temporaries of a function:
OBJ, BEFORE, VALUE, NID, GIVEN = "__mgtui_o", "__mgtui_b", "__mgtui_v", "__mgtui_i", "__mgtui_g"
HERE = "__mgtui_h"  # a function's own `[valid, line]` for its `_backward()` calls
ALL = "__mgtui_a"  # the value of an assignment to several targets


# -- the rewrite ---------------------------------------------------------------------------


def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id_, ast.Store() if store else ast.Load())


def _call(func: str, *args: ast.expr) -> ast.Call:
    return ast.Call(_name(func), list(args), [])


def _assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign([_name(target, True)], value)


def _getattr(obj: str, attr: str, default: ast.expr) -> ast.Call:
    return _call("getattr", _name(obj), ast.Constant(attr), default)


def _store(attr: str, value: str) -> ast.Assign:
    return ast.Assign([ast.Attribute(_name(OBJ), attr, ast.Store())], _name(value))


def _record(attr: str, line: int) -> list[ast.stmt]:
    """`if type(value) is not float: before, value = array_write(nid, field, before,
    value)` (an array, an int: `mgtui.recording.array_values`; VALUE is stored already),
    then `if stack: add_write((nid, field, before, value, line)) else: event(...)`"""
    field, kind = WRITTEN[attr]
    not_float = ast.Compare(_call(TYPE, _name(VALUE)), [ast.IsNot()], [_name(FLOAT)])
    arrays = ast.If(not_float, [ast.Assign(
        [ast.Tuple([_name(BEFORE, True), _name(VALUE, True)], ast.Store())],
        _call(ARRAY_WRITE, _name(NID), ast.Constant(field), _name(BEFORE), _name(VALUE)))], [])
    write = ast.Expr(ast.Call(_name(ADD_WRITE), [ast.Tuple(
        [_name(NID), ast.Constant(field), _name(BEFORE), _name(VALUE), ast.Constant(line)],
        ast.Load())], []))
    event = ast.Expr(_call(EVENT, ast.Constant(kind), _name(NID), _name(BEFORE), _name(VALUE)))
    return [arrays, ast.If(_name(STACK), [write], [event])]


def _is_none(name: str) -> ast.Compare:
    return ast.Compare(_name(name), [ast.Is()], [ast.Constant(None)])


def _read_id() -> ast.Try:
    """`NID = OBJ._mgtui_id`, None if it has none: a plain read (specialised by 3.11)
    for a node; anything else pays for the exception."""
    return ast.Try([_assign(NID, ast.Attribute(_name(OBJ), ID, ast.Load()))],
                   [ast.ExceptHandler(_name("AttributeError"), None,
                                      [_assign(NID, ast.Constant(None))])], [], [])


def store_then_record(attr: str, line: int) -> list[ast.stmt]:
    """`OBJ.attr = VALUE`, recorded: the statements after OBJ and VALUE are set."""
    if attr == "label":
        return [_store(attr, VALUE), ast.Expr(_call(LABEL, _name(OBJ), _name(VALUE)))]
    return [
        _read_id(),
        ast.If(_is_none(NID), [_store(attr, VALUE)], [
            _assign(BEFORE, _getattr(OBJ, attr, ast.Constant(0.0))),
            _store(attr, VALUE),
            *_record(attr, line)]),
    ]


def augmented_then_record(attr: str, op: ast.operator, value: ast.expr, line: int
                          ) -> list[ast.stmt]:
    """`OBJ.attr op= value`, recorded, once OBJ is set: the value read is the before."""
    stmts: list[ast.stmt] = [
        _assign(BEFORE, ast.Attribute(_name(OBJ), attr, ast.Load())),
        _assign(VALUE, _name(BEFORE)),
        ast.AugAssign(_name(VALUE, True), op, value),
    ]
    if attr == "label":
        return stmts + store_then_record(attr, line)
    return stmts + [
        _store(attr, VALUE),
        _read_id(),
        ast.If(ast.Compare(_name(NID), [ast.IsNot()], [ast.Constant(None)]),
               _record(attr, line), []),
    ]


def _hooked(target: ast.expr) -> bool:
    return isinstance(target, ast.Attribute) and target.attr in ("grad", "data", "label")


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _ordered_prev(stmt: ast.stmt, me: str, children: str) -> None:
    """`self._prev = set(_children)` (micrograd's) becomes `self._prev =
    dict.fromkeys(_children).keys() if type(_children) is tuple and len(_children) > 1 and
    set is <Python's set> else set(_children)` (with Python's own `type`, `len`, ... under
    the rewrite's names, `BUILTINS`): a set iterates in address order, which changes
    from run to run, so two or more children are kept as a set-like keys view in the order
    given, as the recorder would reorder them (`mgtui.recording.probes.ordered`), without making
    the set first. (Written inline: a call to a helper costs more.)"""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return
    target, value = stmt.targets[0], stmt.value
    if (isinstance(target, ast.Attribute) and target.attr == "_prev"
            and isinstance(target.value, ast.Name) and target.value.id == me
            and isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id in ("set", "frozenset") and not value.keywords
            and len(value.args) == 1 and isinstance(value.args[0], ast.Name)
            and value.args[0].id == children):
        given, make = value.args[0].id, value.func.id
        test = ast.BoolOp(ast.And(), [
            ast.Compare(_call(TYPE, _name(given)), [ast.Is()], [_name(TUPLE)]),
            ast.Compare(_call(LEN, _name(given)), [ast.Gt()], [ast.Constant(1)]),
            ast.Compare(_name(make), [ast.Is()], [_name(SET if make == "set" else FROZENSET)])])
        keys = ast.Call(ast.Attribute(_call(KEYS, _name(given)), "keys",
                                      ast.Load()), [], [])
        stmt.value = ast.copy_location(ast.IfExp(test, keys, value), value)


def _calls_an_init(stmt: ast.stmt) -> bool:
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call) and (
                isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"
                or isinstance(n.func, ast.Name) and n.func.id == "super"):
            return True
    return False


class Rewriter(ast.NodeTransformer):
    """Rewrites a module's tree (see the module's docstring); every name it puts into
    the code is in `mgtui.recording.inline.helpers.INJECTED`, or one of the temporaries above.

    The state it keeps, as it walks the tree:

    - `value_inits`: the first lines of the `__init__`s of Value-like classes (given),
      which get the `__mgtui_made__` end; `made_inits`: those that got it (its result,
      for `Inliner.adopt`).
    - `epilogue`: inside such an `__init__`, (the name of its node, of its children or
      None, the helper it ends with: `MADE` or `MADE_AGAIN`); None elsewhere.
    - `plain_self`: inside such an `__init__`, the node's name until something may have
      numbered it (a `super().__init__`): its stores are not recorded, `made` reads
      them. None elsewhere.
    - `here`: inside a function, `[calls a _backward]` (it then makes its `HERE` list
      first); None outside functions, and in a lambda or a class body.

    Each scope (function, lambda, class body) saves the three and puts them back as it
    ends."""

    def __init__(self, value_inits: set[int]) -> None:
        self.value_inits = value_inits
        self.made_inits: set[int] = set()
        self.epilogue: tuple[str, str | None, str] | None = None
        self.plain_self: str | None = None
        self.here: list[bool] | None = None
        # The last line of the statements the rewrite's own instructions are placed at,
        # in the function being rewritten (its nested ones included), and for each
        # function by (first line, name): with the last line its source's code spans,
        # the last line the rewritten code spans (`mgtui.recording.blocks.COMPILED_FROM`).
        self.extent = 0
        self.extents: dict[tuple[int, str], int] = {}

    # scopes
    def visit_FunctionDef(self, node):
        outer = self.epilogue, self.plain_self, self.here
        self.epilogue = self.plain_self = None
        # its decorators, defaults and annotations are run by the code around it
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        if node.returns is not None:
            node.returns = self.visit(node.returns)
        outer_extent, self.extent = self.extent, 0
        self.here = [False]
        first = _first_line(node)
        if node.name == "__init__" and first in self.value_inits:
            self._made_init(node, first)
        else:
            node.body = self._visit_body(node.body)
        if self.here[0]:  # `HERE = [None, 0]` first (after the docstring)
            body = node.body
            start = 1 if isinstance(body[0], ast.Expr) and isinstance(
                body[0].value, ast.Constant) and isinstance(body[0].value.value, str) else 0
            make = self._at(_assign(HERE, ast.List(
                [ast.Constant(None), ast.Constant(0)], ast.Load())), body[0])
            node.body = body[:start] + [self._located(make, body[0])] + body[start:]
        self.extents[(first, node.name)] = self.extent
        self.extent = max(outer_extent, self.extent)
        self.epilogue, self.plain_self, self.here = outer
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def _visit_body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        body: list[ast.stmt] = []
        for stmt in stmts:
            out = self.visit(stmt)
            body.extend(out if isinstance(out, list) else [out])
        return body

    def visit_Lambda(self, node):
        outer = self.epilogue, self.plain_self, self.here
        self.epilogue = self.plain_self = self.here = None
        self.generic_visit(node)
        self.epilogue, self.plain_self, self.here = outer
        return node

    def visit_ClassDef(self, node):
        """Only the functions of a class body are rewritten: other statements there
        would leave the rewrite's temporaries as class attributes."""
        outer = self.epilogue, self.plain_self, self.here
        self.epilogue = self.plain_self = self.here = None
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.body = [self.visit(s) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.ClassDef)) else s
                     for s in node.body]
        self.epilogue, self.plain_self, self.here = outer
        return node

    def _made_init(self, node, first: int) -> None:
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        if args.vararg or args.kwarg or not positional:
            node.body = self._visit_body(node.body)
            return
        self.made_inits.add(first)
        me = positional[0].arg
        children = positional[2].arg if len(positional) > 2 else None  # args[1] after self
        body = node.body
        start = 1 if body and isinstance(body[0], ast.Expr) and isinstance(
            getattr(body[0], "value", None), ast.Constant) and isinstance(
            body[0].value.value, str) else 0
        prologue: list[ast.stmt] = []
        if children is not None and any(
                isinstance(n, ast.Name) and n.id == children and isinstance(n.ctx, ast.Store)
                for n in ast.walk(node)):  # the body reassigns it: keep what was given
            prologue = [self._at(_assign(GIVEN, _name(children)), body[start])]
            children = GIVEN
        # An `__init__` that calls another (`super().__init__`) may find its node
        # numbered already; one that calls none cannot.
        made = MADE_AGAIN if any(_calls_an_init(stmt) for stmt in body) else MADE
        self.epilogue = (me, children, made)
        new_body: list[ast.stmt] = list(body[:start]) + prologue
        self.plain_self = me  # until something may have numbered it: a super().__init__
        for stmt in body[start:]:
            if self.plain_self is not None and _calls_an_init(stmt):
                self.plain_self = None
            if children is not None and children != GIVEN:
                _ordered_prev(stmt, me, children)
            out = self.visit(stmt)
            new_body.extend(out if isinstance(out, list) else [out])
        end = body[-1]
        new_body.extend(self._located(s, end) for s in self._epilogue())
        node.body = new_body

    def _epilogue(self) -> list[ast.stmt]:
        """`__mgtui_made__(self, children)`, or with `()` for an `__init__` that takes no
        children."""
        me, children, made = self.epilogue
        given = ast.Tuple([], ast.Load()) if children is None else _name(children)
        return [ast.Expr(_call(made, _name(me), given))]

    def visit_Return(self, node):
        self.generic_visit(node)
        if self.epilogue is None:
            return node
        return [self._located(s, node) for s in self._epilogue()] + [node]

    # statements
    def _plain(self, target: ast.expr) -> bool:
        return (self.plain_self is not None and isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name) and target.value.id == self.plain_self)

    def visit_Assign(self, node):
        self.generic_visit(node)
        if not any(self._has_hooked(t) for t in node.targets):
            return node
        if len(node.targets) == 1:
            out: list[ast.stmt] = [_assign(VALUE, node.value), *self._assign_to(node.targets[0])]
        else:  # `a.grad = b.grad = v`: each target from the one value
            out = [_assign(ALL, node.value)]
            for target in node.targets:
                out += [_assign(VALUE, _name(ALL)), *self._assign_to(target)]
        return [self._located(s, node) for s in out]

    def _has_hooked(self, target: ast.expr) -> bool:
        if _hooked(target):
            return not self._plain(target)
        if isinstance(target, (ast.Tuple, ast.List)):
            return any(self._has_hooked(t) for t in target.elts)
        if isinstance(target, ast.Starred):
            return self._has_hooked(target.value)
        return False

    def _assign_to(self, target: ast.expr) -> list[ast.stmt]:
        """Statements that assign VALUE to `target` as the original statement would."""
        if _hooked(target) and not self._plain(target):
            return [_assign(OBJ, target.value), *store_then_record(target.attr, target.lineno)]
        if isinstance(target, (ast.Tuple, ast.List, ast.Starred)) and self._has_hooked(target):
            temps: list[tuple[str, ast.Attribute]] = []

            def swap(t):
                if _hooked(t) and not self._plain(t):
                    name = f"__mgtui_t{len(temps)}"
                    temps.append((name, t))
                    return self._at(_name(name, True), t)
                if isinstance(t, (ast.Tuple, ast.List)):
                    t.elts = [swap(e) for e in t.elts]
                elif isinstance(t, ast.Starred):
                    t.value = swap(t.value)
                return t

            out: list[ast.stmt] = [ast.Assign([swap(target)], _name(VALUE))]
            for name, attr in temps:
                out += [_assign(OBJ, attr.value), _assign(VALUE, _name(name)),
                        *store_then_record(attr.attr, attr.lineno)]
            return out
        return [ast.Assign([target], _name(VALUE))]

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        target = node.target
        if not _hooked(target) or self._plain(target):
            return node
        out = [_assign(OBJ, target.value),
               *augmented_then_record(target.attr, node.op, node.value, target.lineno)]
        return [self._located(s, node) for s in out]

    def visit_Expr(self, node):
        """`setattr(x, 'grad', v)` as a statement is `x.grad = v`."""
        self.generic_visit(node)
        call = node.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == "setattr" and len(call.args) == 3 and not call.keywords
                and isinstance(call.args[1], ast.Constant)
                and call.args[1].value in ("grad", "data", "label")):
            return node
        obj, name, value = call.args
        out = [_assign(OBJ, obj), _assign(VALUE, value),
               *store_then_record(name.value, node.lineno)]
        return [self._located(s, node) for s in out]

    # expressions
    def visit_Call(self, node):
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr == "_backward"
                and isinstance(func.ctx, ast.Load) and not node.args and not node.keywords):
            obj = self.visit(func.value)
            if self.here is None:
                return self._at(_call(CALL, obj, _name(NO_HERE)), node)
            self.here[0] = True
            return self._at(_call(CALL, obj, _name(HERE)), node)
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr == "_backward" and isinstance(node.ctx, ast.Load):
            return self._at(_call(BACKWARD_OF, node.value), node)
        return node

    def _at(self, new, old: ast.AST):
        """`ast.copy_location(new, old)`, `old`'s last line kept (`extent`)."""
        self.extent = max(self.extent, old.end_lineno or 0)
        return ast.copy_location(new, old)

    def _located(self, new: ast.stmt, old: ast.AST) -> ast.stmt:
        """`new` and every node in it that has no place yet, placed at `old`."""
        self.extent = max(self.extent, old.end_lineno or 0)
        for n in ast.walk(new):
            if "lineno" in n._attributes and not hasattr(n, "lineno"):
                ast.copy_location(n, old)
        return new


def code_index(code: types.CodeType) -> dict[tuple[str, int], types.CodeType]:
    """Every code object in `code` (itself included), by (qualified name, first line)."""
    index: dict[tuple[str, int], types.CodeType] = {}
    todo = [code]
    while todo:
        c = todo.pop()
        index.setdefault((c.co_qualname, c.co_firstlineno), c)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return index


def value_init_lines(index: dict) -> set[int]:
    """The first lines of the `__init__`s that make a class Value-like, with its fields
    under micrograd's names (`mgtui.recording.shapes`: the one detector; a class whose fields go by
    other names is recorded by the hooks)."""
    found = set()
    for (qualname, line), c in index.items():
        if c.co_name == "__init__":
            fields = SHAPES.fields_of_code(c)
            if fields is not None and not fields.renamed:
                found.add(line)
    return found


class FileRewrite:
    """One source file compiled twice, plainly and rewritten, with the code objects of
    each by (qualified name, first line)."""

    def __init__(self, filename: str, source: str, flags: int = 0,
                 plain: types.CodeType | None = None) -> None:
        tree = ast.parse(source, filename)
        if plain is None:
            plain = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
        self.plain = code_index(plain)
        rewriter = Rewriter(value_init_lines(self.plain))
        tree = ast.fix_missing_locations(rewriter.visit(tree))
        self.code = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
        self.rewritten = code_index(self.code)
        self.made_inits = rewriter.made_inits
        self.codes = {id(c): c for c in self.rewritten.values()}
        for key, new in self.rewritten.items():  # (a closure's block, from its source's code)
            old = self.plain.get(key)
            extent = rewriter.extents.get((new.co_firstlineno, new.co_name))
            if old is not None and old is not new and extent is not None:
                COMPILED_FROM[id(new)] = (new, old, extent)

    def counterpart(self, code: types.CodeType) -> types.CodeType | None:
        """The rewritten code of a function whose code is `code`, if `code` is what this
        file compiles to and the rewrite changed it."""
        key = (code.co_qualname, code.co_firstlineno)
        new, old = self.rewritten.get(key), self.plain.get(key)
        if new is None or old is None or new == old or code != old:
            return None
        return new if new.co_freevars == code.co_freevars else None

    def plain_of(self, code: types.CodeType) -> types.CodeType | None:
        return self.plain.get((code.co_qualname, code.co_firstlineno))


_REWRITES: dict[tuple, FileRewrite] = {}  # by file name, source and flags, for reuse


def rewrite_of(filename: str, source: str, flags: int = 0,
               plain: types.CodeType | None = None) -> FileRewrite | None:
    """The `FileRewrite` of a source (None if it does not compile), made once a process:
    the code objects are immutable, and a later run may share them."""
    key = (filename, source, flags)
    found = _REWRITES.get(key)
    if found is None:
        if len(_REWRITES) >= 64:  # (let go before the new one is made: it fills COMPILED_FROM)
            _REWRITES.clear()
            COMPILED_FROM.clear()
        try:
            found = FileRewrite(filename, source, flags, plain)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        _REWRITES[key] = found
    return found


def scenario_rewrite(scenario) -> FileRewrite | None:
    """The rewrite of a scenario (`mgtui.recording.scenario.Scenario`), compiled as it was."""
    filename = str(scenario.path.resolve())
    flags = scenario.code.co_flags & __future__.annotations.compiler_flag
    return rewrite_of(filename, scenario.source, flags, scenario.code)


def read_source(filename: str) -> str | None:
    if not filename or filename.startswith("<") or not os.path.isfile(filename):
        return None
    linecache.checkcache(filename)
    lines = linecache.getlines(filename)
    return "".join(lines) if lines else None
