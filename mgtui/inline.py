"""Recording inlined into the code that touches the nodes: the recorder's fast path.

The hooks in `mgtui.recorder` observe a Value class from outside, with descriptors on
`grad`, `data`, `_backward` and `label` and a wrapper around `__init__`. Every write then
costs a call into Python, and a data descriptor on `grad` also turns off Python 3.11's
specialisation of `a.grad` reads. Where a class's source is available, this module
rewrites the code instead, from its syntax tree, keeping every line number:

- a store to `x.grad` or `x.data` becomes the store itself followed by the record of it,
  appended inline (`__mgtui_writes__.extend(...)` inside a `_backward`, an event of its
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

What is rewritten: the scenario itself (compiled rewritten from its source); modules
beside the scenario imported during the run (loaded rewritten, `BesideFinder`); and,
for the length of the run, the functions of every module that defines an adopted Value
class, refers to one, or lives beside the scenario: their `__code__` is swapped for the
rewritten code compiled from the same file, only where the function's own code is the
one that file compiles to, and put back afterwards. A class that cannot be adopted (no
source, fields in `__slots__`, its own class attributes on the fields, an `__init__`
taking `*args`) keeps the recorder's hooks; the hooks then leave to the rewritten code
the writes it records itself.

Not seen, where the hooks would see them: writes to an adopted class's nodes made by
code that is not rewritten (a module without source; the module-level code of a module
elsewhere, run as it is imported; closures made before the run; `exec` of a string;
`setattr` other than as a statement). Also, a temporary of the rewrite keeps the last
node written in a function alive until the function returns, and a proxy whose
`__getattr__` answers `_mgtui_id` for a node it wraps has its own writes taken for the
node's. A node whose `__init__` is called again by hand (`v.__init__(2.0)`) is recorded
as a new node, with the values it is given; the hooks record them as writes to it.
"""

from __future__ import annotations

import __future__
import ast
import builtins
import importlib.machinery
import linecache
import os
import sys
import sysconfig
import types
from typing import Callable

from mgtui.trace import EventKind, Field

ID = "_mgtui_id"
REQUIRED = frozenset({"data", "grad", "_prev", "_op", "_backward"})
# a class attribute under any of these names changes what a plain read gives
OWN_NAMES = REQUIRED | {"label", ID}
WRITTEN = {"grad": (Field.GRAD.code, EventKind.GRAD.code),
           "data": (Field.DATA.code, EventKind.DATA.code)}

MADE, CALL, BACKWARD_OF, EVENT, LABEL, STACK, WRITES, NO_HERE = (
    "__mgtui_made__", "__mgtui_call_backward__", "__mgtui_backward_of__", "__mgtui_event__",
    "__mgtui_label__", "__mgtui_stack__", "__mgtui_writes__", "__mgtui_no_here__")
MADE_AGAIN = "__mgtui_made_again__"  # (an `__init__` that calls another `__init__`)
# Python's own, under names of the rewrite's, for the test `_ordered_prev` writes inline
BUILTINS = {"__mgtui_type__": type, "__mgtui_len__": len, "__mgtui_tuple__": tuple,
            "__mgtui_keys__": dict.fromkeys, "__mgtui_set__": set,
            "__mgtui_frozenset__": frozenset}
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


def _record(attr: str, line: int) -> ast.If:
    """`if stack: writes.extend((nid, field, before, value, line)) else: event(...)`"""
    field, kind = WRITTEN[attr]
    write = ast.Expr(ast.Call(ast.Attribute(_name(WRITES), "extend", ast.Load()), [ast.Tuple(
        [_name(NID), ast.Constant(field), _name(BEFORE), _name(VALUE), ast.Constant(line)],
        ast.Load())], []))
    event = ast.Expr(_call(EVENT, ast.Constant(kind), _name(NID), _name(BEFORE), _name(VALUE)))
    return ast.If(_name(STACK), [write], [event])


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
            _record(attr, line)]),
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
               [_record(attr, line)], []),
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
    given, as the recorder would reorder them (`mgtui.recorder.ordered`), without making
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
            ast.Compare(_call("__mgtui_type__", _name(given)), [ast.Is()],
                        [_name("__mgtui_tuple__")]),
            ast.Compare(_call("__mgtui_len__", _name(given)), [ast.Gt()], [ast.Constant(1)]),
            ast.Compare(_name(make), [ast.Is()], [_name(f"__mgtui_{make}__")])])
        keys = ast.Call(ast.Attribute(_call("__mgtui_keys__", _name(given)), "keys",
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
    """Rewrites a module's tree (see the module's docstring). `value_inits` are the first
    lines of the `__init__`s of Value-like classes, which get the `__mgtui_made__` end;
    the first lines of those that got it are left in `made_inits`."""

    def __init__(self, value_inits: set[int]) -> None:
        self.value_inits = value_inits
        self.made_inits: set[int] = set()
        # in an __init__ that gets the end: the names of its node and of its children,
        # and the helper it calls
        self.epilogue: tuple[str, str | None, str] | None = None
        self.plain_self: str | None = None  # stores on it are not recorded (made below)
        # in a function: does it call a `_backward` (it then makes its `HERE`)? None
        # outside functions, and in a lambda
        self.here: list[bool] | None = None

    # scopes
    def visit_FunctionDef(self, node):
        outer = self.epilogue, self.plain_self, self.here
        self.epilogue = self.plain_self = None
        # its decorators, defaults and annotations are run by the code around it
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        if node.returns is not None:
            node.returns = self.visit(node.returns)
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
            make = ast.copy_location(_assign(HERE, ast.List(
                [ast.Constant(None), ast.Constant(0)], ast.Load())), body[0])
            node.body = body[:start] + [self._located(make, body[0])] + body[start:]
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
            prologue = [ast.copy_location(_assign(GIVEN, _name(children)), body[start])]
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
                    return ast.copy_location(_name(name, True), t)
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
                return ast.copy_location(_call(CALL, obj, _name(NO_HERE)), node)
            self.here[0] = True
            return ast.copy_location(_call(CALL, obj, _name(HERE)), node)
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr == "_backward" and isinstance(node.ctx, ast.Load):
            return ast.copy_location(_call(BACKWARD_OF, node.value), node)
        return node

    @staticmethod
    def _located(new: ast.stmt, old: ast.AST) -> ast.stmt:
        """`new` and every node in it that has no place yet, placed at `old`."""
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
    """The first lines of the `__init__`s that make a class Value-like."""
    return {line for (qualname, line), c in index.items()
            if c.co_name == "__init__" and REQUIRED <= set(c.co_names)}


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


# Where Python's own library and installed packages live: never "beside the scenario",
# even for a scenario at the top of the file system.
_INSTALLED = tuple(sorted({os.path.join(path, "") for key, path in sysconfig.get_paths().items()
                           if key in ("stdlib", "platstdlib", "purelib", "platlib")}))

_REWRITES: dict[tuple, FileRewrite] = {}  # by file name, source and flags, for reuse


def rewrite_of(filename: str, source: str, flags: int = 0,
               plain: types.CodeType | None = None) -> FileRewrite | None:
    """The `FileRewrite` of a source (None if it does not compile), made once a process:
    the code objects are immutable, and a later run may share them."""
    key = (filename, source, flags)
    found = _REWRITES.get(key)
    if found is None:
        try:
            found = FileRewrite(filename, source, flags, plain)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        if len(_REWRITES) >= 64:
            _REWRITES.clear()
        _REWRITES[key] = found
    return found


def scenario_rewrite(scenario) -> FileRewrite | None:
    """The rewrite of a scenario (`mgtui.recorder.Scenario`), compiled as it was."""
    filename = str(scenario.path.resolve())
    flags = scenario.code.co_flags & __future__.annotations.compiler_flag
    return rewrite_of(filename, scenario.source, flags, scenario.code)


def read_source(filename: str) -> str | None:
    if not filename or filename.startswith("<") or not os.path.isfile(filename):
        return None
    linecache.checkcache(filename)
    lines = linecache.getlines(filename)
    return "".join(lines) if lines else None


# -- the run ---------------------------------------------------------------------------------


class Inliner:
    """The inlined recording of one run: rewrites code, adopts Value classes, and gives
    the rewritten code its helpers, which record into the recorder's lists."""

    def __init__(self, rec, record_call: Callable, run_backward: Callable,
                 scenario: FileRewrite | None) -> None:
        self.rec = rec
        self.files: dict[str, FileRewrite | None] = {}
        self.codes: dict[int, types.CodeType] = {}  # every rewritten code object, by id
        self.adopted: set[type] = set()
        self.patched: list[tuple[types.FunctionType, types.CodeType]] = []
        self.namespaces: list[dict] = []  # the globals given the helpers
        self.known_modules: set[str] = set()
        self.home = str(rec.scenario.path.resolve().parent) + os.sep
        self.scenario = scenario  # the scenario's rewrite (`scenario_rewrite`)
        if scenario is not None:
            self.files[str(rec.scenario.path.resolve())] = scenario
            self.codes |= scenario.codes
        self.helpers = self._helpers(record_call, run_backward)
        self._import = None
        self._finder: BesideFinder | None = None

    # -- the helpers the rewritten code calls ----------------------------------------------
    def _helpers(self, record_call, run_backward) -> dict:
        """The helpers of this run: copies of `mgtui.inline_helpers`' functions whose
        globals are this run's records, options and tables."""
        from mgtui import inline_helpers as hot
        from mgtui.recorder import (BACKWARD, CLASS_CODE, CREATE, NODE_FIELDS, StopRecording,
                                    ordered)

        rec = self.rec
        watch = rec.on_backward
        kids, nodes, events = rec.kids, rec.nodes, rec.events
        # The library frame that made the last node through an op, its line and the op's
        # code: the next node is most often made there too, by the same op (`w*x` in
        # `Neuron.__call__`'s generator), and is then known by two identities without
        # looking its code up. (The frame is kept alive here, so no other frame can take
        # its place; its line is the one `scenario_line` gave it, as the line memo
        # would.) Two of them: a library's `sum(w*x for ...)` makes its nodes from two
        # frames in turn, the generator's (`w*x`) and the caller's (`+`).
        last: list = [None] * 6
        rec.last_frames.append(last)  # (forgotten when a class comes in)
        run = {name: value for name, value in vars(hot).items() if not name.startswith("__")}
        run.update(
            __builtins__=builtins, __name__=hot.__name__,
            rec=rec, nodes=nodes, kids=kids, events=events, writes=rec.writes,
            stack=rec.stack, made_inside=rec.made_inside, late_labels=rec.late_labels,
            add_kid=kids.append, add_node=nodes.extend, add_event=events.extend,
            max_nodes=rec.max_nodes, limit=-1 if rec.stop_reason else rec.max_nodes,
            on_progress=rec.on_progress, on_create=rec.on_create,
            before=rec.before_backward, watch=watch,
            skip=watch.skip if watch is not None else (),
            scenario_line=rec.scenario_line,
            # (`mgtui.naming`: the variable a node is bound to) The assignments'
            # instructions come with the code's kind, so that a node made elsewhere costs
            # no call.
            named=rec.namer.made, candidate=rec.namer.candidate,
            closure_ids=rec.closure_ids, closure_index=rec.closure_index,
            kind_of=rec.code_kinds.get, code_kind=rec.code_kind,
            # The frames outside the scenario that `scenario_line` has walked, and their
            # lines: a library's loop (`model(x)`, `backward()`) asks about the same
            # frames over and over. Looking there first spares the call.
            remembered=rec.line_memo.get,
            getframe=sys._getframe, record_call=record_call, run_backward=run_backward,
            ordered=ordered, StopRecording=StopRecording, last=last, lines_valid=object(),
            BACKWARD=BACKWARD, CLASS_CODE=CLASS_CODE, CREATE=CREATE, NODE_FIELDS=NODE_FIELDS)
        for name in hot.HELPERS:
            fn = getattr(hot, name)
            run[name] = types.FunctionType(fn.__code__, run, name, fn.__defaults__)
        self._run = run
        return {MADE: run["made"], MADE_AGAIN: run["made_again"],
                CALL: run["call_backward"], BACKWARD_OF: run["backward_of"], EVENT: run["event"],
                LABEL: run["label"], STACK: rec.stack, WRITES: rec.writes, NO_HERE: hot.NO_HERE,
                **BUILTINS}

    def forget_lines(self) -> None:
        """A class came in: the lines the frames' `here`s hold may be wrong now."""
        self._run["lines_valid"] = object()

    def interrupt(self) -> None:
        """The run is to stop (`Recorder.cancel`, from any thread)."""
        self._run["interrupt"]()

    @staticmethod
    def plain_helpers() -> dict:
        """The helpers once the run is over, for closures made during it that outlive it."""
        return {MADE: lambda node, children: None, MADE_AGAIN: lambda node, children: None,
                CALL: lambda node, here: node._backward(),
                BACKWARD_OF: lambda node: node._backward, EVENT: lambda *args: None,
                LABEL: lambda node, value: None, STACK: [], WRITES: [], NO_HERE: [None, 0],
                **BUILTINS}

    # -- the code ---------------------------------------------------------------------------
    def scenario_code(self, namespace: dict):
        """The scenario's code to run in `namespace`: rewritten, with the helpers."""
        if self.scenario is None:
            return self.rec.scenario.code
        self._give_helpers(namespace)
        return self.scenario.code

    def _file(self, filename: str) -> FileRewrite | None:
        if filename in self.files:
            return self.files[filename]
        source = read_source(filename)
        rewrite = None if source is None else rewrite_of(filename, source)
        self.files[filename] = rewrite
        if rewrite is not None:
            self.codes |= rewrite.codes
        return rewrite

    def _give_helpers(self, namespace: dict) -> None:
        if not any(ns is namespace for ns in self.namespaces):
            self.namespaces.append(namespace)
        namespace.update(self.helpers)

    def _patch(self, fn: types.FunctionType, new: types.CodeType) -> None:
        self._give_helpers(fn.__globals__)
        self.patched.append((fn, fn.__code__))
        fn.__code__ = new

    # -- classes --------------------------------------------------------------------------
    def adopt(self, cls: type) -> bool:
        """Inline the recording into `cls` if it can be: True if it now records itself,
        False if it needs the recorder's hooks."""
        from mgtui.recorder import keeps_fields_in_slots

        init = cls.__dict__.get("__init__")
        if not isinstance(init, types.FunctionType) or keeps_fields_in_slots(cls) or any(
                name in vars(klass) for klass in cls.__mro__[:-1] for name in OWN_NAMES):
            self._unmade(init)
            return False
        code = init.__code__
        rewrite = self._file(code.co_filename)
        if rewrite is None or code.co_firstlineno not in rewrite.made_inits:
            return False
        if id(code) not in rewrite.codes:
            new = rewrite.counterpart(code)
            if new is None:
                return False
            self._patch(init, new)
        self.adopted.add(cls)
        self.patch_functions(self._class_functions(cls), skip_inits=False)
        module = sys.modules.get(cls.__module__)
        if module is not None and getattr(module, "__dict__", None) is not self.rec.globals:
            self.patch_module(module)
        return True

    def _unmade(self, init) -> None:
        """A class that keeps the hooks does not number its nodes from its `__init__`."""
        code = getattr(init, "__code__", None)
        if code is None or id(code) not in self.codes:
            return
        rewrite = self.files.get(code.co_filename)
        plain = rewrite.plain_of(code) if rewrite is not None else None
        if plain is not None and plain.co_freevars == code.co_freevars:
            self.patched.append((init, code))
            init.__code__ = plain

    @staticmethod
    def _class_functions(cls: type, seen: set | None = None) -> list[types.FunctionType]:
        seen = set() if seen is None else seen
        if id(cls) in seen:
            return []
        seen.add(id(cls))
        found = []
        for value in list(vars(cls).values()):
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property):
                found += [f for f in (value.fget, value.fset, value.fdel)
                          if isinstance(f, types.FunctionType)]
            elif isinstance(value, types.FunctionType):
                found.append(value)
            elif isinstance(value, type) and value.__module__ == cls.__module__:
                found += Inliner._class_functions(value, seen)
        return found

    def patch_functions(self, functions, skip_inits: bool = True) -> None:
        for fn in functions:
            fn = getattr(fn, "__wrapped__", fn) if not isinstance(
                fn, types.FunctionType) else fn
            if not isinstance(fn, types.FunctionType):
                continue
            code = fn.__code__
            rewrite = None if id(code) in self.codes else self._file(code.co_filename)
            if id(code) in self.codes:  # rewritten already, as a module beside the
                self._give_helpers(fn.__globals__)  # scenario that a run imported is
                continue
            if rewrite is None:
                continue
            if skip_inits and code.co_name == "__init__" and \
                    code.co_firstlineno in rewrite.made_inits:
                continue  # numbers nodes: only for a class `adopt` takes
            new = rewrite.counterpart(code)
            if new is not None:
                self._patch(fn, new)

    # -- modules --------------------------------------------------------------------------
    def wants(self, module: types.ModuleType) -> bool:
        """Should the functions of `module` be rewritten for this run? Yes if it names an
        adopted class, or lives beside the scenario."""
        name = getattr(module, "__name__", "") or ""
        if name == "mgtui" or name.startswith("mgtui."):
            return False
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict) or namespace is self.rec.globals:
            return False
        if self.beside(getattr(module, "__file__", None) or ""):
            return True
        adopted = self.adopted
        return bool(adopted) and any(
            isinstance(v, type) and v in adopted for v in list(namespace.values()))

    def patch_module(self, module: types.ModuleType) -> None:
        name = getattr(module, "__name__", None)
        functions = []
        namespace = module.__dict__
        for value in list(namespace.values()):
            if isinstance(value, types.FunctionType):
                if value.__globals__ is namespace:  # its own, not an import (or a helper)
                    functions.append(value)
            elif isinstance(value, type) and value.__module__ == name:
                functions += self._class_functions(value)
        self.patch_functions(functions)

    def consider_modules(self) -> None:
        """Rewrite the modules loaded since last time that want it."""
        modules = sys.modules
        for name in [n for n in list(modules) if n not in self.known_modules]:
            module = modules.get(name)
            if getattr(getattr(module, "__spec__", None), "_initializing", False):
                continue  # still being imported: its names are not all there yet
            self.known_modules.add(name)
            if module is not None and self.wants(module):
                self.patch_module(module)

    def start(self) -> None:
        """Rewrite the modules loaded so far, and from now on each one imported."""
        import builtins

        self.consider_modules()
        original = self._import = builtins.__import__
        modules, known = sys.modules, self.known_modules

        def import_(*args, **kwargs):
            module = original(*args, **kwargs)
            if len(modules) != len(known):  # new modules, or some still being imported
                self.consider_modules()
            return module

        builtins.__import__ = import_
        self._finder = BesideFinder(self)
        sys.meta_path.insert(0, self._finder)

    def beside(self, filename: str) -> bool:
        """Is this source file beside the scenario (and not Python's, nor installed)?"""
        return (filename.startswith(self.home) and filename.endswith(".py")
                and not filename.startswith(_INSTALLED))

    def stop(self) -> None:
        """Put every function's own code back; closures made during the run that outlive
        it find helpers that no longer record."""
        import builtins

        if self._import is not None:
            builtins.__import__ = self._import
            self._import = None
        if self._finder is not None:
            if self._finder in sys.meta_path:
                sys.meta_path.remove(self._finder)
            self._finder.close()
            self._finder = None
        for fn, code in reversed(self.patched):
            fn.__code__ = code
        self.patched.clear()
        plain = self.plain_helpers()
        for namespace in self.namespaces:
            namespace.update(plain)
        self.namespaces.clear()


class BesideFinder:
    """A finder, first on `sys.meta_path` during a run, for the modules beside the
    scenario: they are run rewritten from their first line, so that what their module-
    level code does to nodes as they are imported is recorded too. (Other modules get
    their functions' code swapped once they are imported.) It never writes bytecode."""

    def __init__(self, inliner: Inliner) -> None:
        self.inliner: Inliner | None = inliner
        self.loaders: list[RewritingLoader] = []

    def find_spec(self, name, path=None, target=None):
        inliner = self.inliner
        if inliner is None or name == "mgtui" or name.startswith("mgtui."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if (spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader
                or not inliner.beside(spec.origin or "")):
            return None  # for the finders after this one, as if it were not there
        loader = RewritingLoader(spec.loader.name, spec.loader.path)
        loader.inliner = inliner
        self.loaders.append(loader)
        spec.loader = loader
        return spec

    def close(self) -> None:
        """After the run, the modules it loaded are loaded plainly if reloaded."""
        for loader in self.loaders:
            loader.inliner = None
        self.loaders.clear()
        self.inliner = None


class RewritingLoader(importlib.machinery.SourceFileLoader):
    """Loads a module's source rewritten (`BesideFinder`)."""

    inliner: Inliner | None = None

    def get_code(self, fullname):
        inliner = self.inliner
        rewrite = inliner._file(self.get_filename(fullname)) if inliner is not None else None
        if rewrite is None:
            return super().get_code(fullname)
        return rewrite.code

    def exec_module(self, module) -> None:
        if self.inliner is not None:
            self.inliner._give_helpers(module.__dict__)
        super().exec_module(module)
