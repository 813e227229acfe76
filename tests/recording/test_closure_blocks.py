"""A closure's source read from its code's positions (`mgtui.recording.blocks`) is the
block `inspect.getsource` gives, on functions of varied shapes; where the positions
cannot tell, the block is tokenized as before (and is the same too)."""

from __future__ import annotations

import importlib.util
import inspect
import sys
import types

import pytest

from mgtui.recording.blocks import def_block
from mgtui.recording.store import closure_source

SHAPES = '''
import functools


def decorate(*args, **kwargs):
    return lambda fn: fn


class Tensor:
    def __init__(self, data, children=()):
        self.data, self.grad, self._prev = data, 0.0, children

    def __add__(self, other):
        out = Tensor(self.data + other.data, (self, other))

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def ending_in_a_call_over_lines(self):
        out = Tensor(0.0)

        def _backward():
            self.grad += sum(
                [out.grad,
                 out.grad],
            )
        return _backward

    def ending_in_a_nested_def(self):
        def _backward():
            self.grad = 1

            def inner():  # (the last lines are the nested code's alone)
                return (self.grad
                        + 1)
        return _backward

    def with_trailing_comments(self):
        def _backward():
            self.grad += 1
            # a comment indented as the body: inspect keeps it

        # and one that is not
        return _backward

    def continued_with_a_backslash(self):
        def _backward():
            self.grad = self.grad + \\
                1
        return _backward

    def ending_in_a_pass(self):
        def _backward():
            if self.grad:
                self.grad = 0
            else:
                pass
        return _backward

    def ending_in_a_constant_over_lines(self):
        def _backward():
            self.grad = (1,
                         2,
                         )
        return _backward

    def ending_in_a_parenthesised_name(self):
        def _backward():
            self.grad = (
                self
            )
        return _backward

    def ending_in_a_string_statement(self):
        def _backward():
            self.grad = 1
            """a note
over lines"""
        return _backward

    def a_comprehension_last(self):
        def _backward():
            self.grad = [g * 2 for g in
                         (1, 2)]
        return _backward

    def one_line(self):
        def _backward(): self.grad += 1
        return _backward

    def a_lambda(self):
        return lambda: setattr(self, "grad", 1)

    def a_lambda_over_lines(self):
        return functools.partial(
            lambda: setattr(self, "grad", 1),
        )

    @decorate(
        "over",
        "lines",
    )
    def decorated(self):
        return self.grad

    @staticmethod
    @decorate()
    def decorated_twice():
        """Only a docstring after the return."""
        return 1

    @decorate()
    def a_docstring_alone():
        """Nothing but this."""

    async def asynchronous(self):
        await self.other()
        return 1


def at_the_top(x,
               y=2):
    """A docstring
over lines."""
    return (x +
            y)
'''

# which take the fast way (from the code's positions), and which are tokenized
# (a `pass` and a string statement leave a NOP with their positions; a constant over
# lines spans its brackets; the parenthesised name does not span its `)`)
FAST = {"__add__", "ending_in_a_call_over_lines", "ending_in_a_nested_def", "decorated",
        "decorated_twice", "asynchronous", "at_the_top", "__init__", "decorate",
        "a_comprehension_last", "continued_with_a_backslash", "ending_in_a_pass",
        "ending_in_a_constant_over_lines", "ending_in_a_string_statement"}
TOKENIZED = {"with_trailing_comments", "one_line", "a_docstring_alone",
             "ending_in_a_parenthesised_name", "a_lambda", "a_lambda_over_lines"}


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> types.ModuleType:
    path = tmp_path_factory.mktemp("shapes") / "closure_shapes.py"
    path.write_text(SHAPES)
    spec = importlib.util.spec_from_file_location("closure_shapes", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["closure_shapes"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("closure_shapes", None)


def functions(module: types.ModuleType) -> dict[str, types.FunctionType]:
    """Every function of the module by a name, the `_backward` closures by their maker's."""
    found = {"decorate": module.decorate, "at_the_top": module.at_the_top}
    tensor = module.Tensor
    for name, fn in vars(tensor).items():
        fn = getattr(fn, "__func__", fn)
        if isinstance(fn, types.FunctionType):
            found[name] = fn
    t = tensor(1.0)
    found["__add__"] = (t + t)._backward
    for name in ("ending_in_a_call_over_lines", "ending_in_a_nested_def",
                 "with_trailing_comments", "continued_with_a_backslash", "ending_in_a_pass",
                 "ending_in_a_constant_over_lines", "a_comprehension_last", "one_line",
                 "a_lambda", "ending_in_a_parenthesised_name", "ending_in_a_string_statement"):
        found[name] = getattr(t, name)()
    found["a_lambda_over_lines"] = t.a_lambda_over_lines().func
    return found


def test_every_shape_reads_as_inspect_reads_it(shapes):
    fns = functions(shapes)
    assert FAST | TOKENIZED == set(fns)
    for name, fn in fns.items():
        code = fn.__code__
        expected = inspect.getsource(fn).splitlines()
        got = closure_source(code)
        assert list(got.lines) == expected, name
        assert got.first_line == code.co_firstlineno, name
        lines = open(code.co_filename).readlines()
        fast = def_block(code, lines)
        if name in FAST:
            assert fast is not None and [x.rstrip("\n") for x in fast] == expected, name
        else:  # (lambdas: their block is the logical line around them)
            assert fast is None, name  # (tokenized, as before)


def test_a_rewritten_closure_reads_its_block_as_its_source_compiles(shapes):
    """A code the inline rewrite made (`mgtui.recording.inline.rewrite`) is read from the
    positions of the code its source compiles to (`blocks.COMPILED_FROM`, a quarter as
    many) and the last lines of the statements the rewrite placed its own instructions
    at: on the shapes above, the engines and the scenarios, the last line is the one the
    rewritten code's own positions give (a line past its source's code where a rewritten
    statement ends in a bracket alone on its line), and so is its block."""
    from pathlib import Path

    from mgtui.recording import blocks
    from mgtui.recording.inline.rewrite import rewrite_of
    from mgtui.recording.naming import codes_in

    root = Path(__file__).resolve().parent.parent.parent
    files = [Path(shapes.__file__), *root.glob("engine/*.py"), *root.glob("scenarios/**/*.py")]
    checked = 0
    for path in files:
        # (each file's codes checked before the next rewrite: the cache of rewrites is let
        # go whole, with `COMPILED_FROM`, once it holds 64, whichever tests made them)
        rewrite = rewrite_of(str(path), path.read_text())
        for new in codes_in(rewrite.code):
            old = rewrite.plain_of(new)
            if old is None or old is new or old == new or not (
                    new.co_flags & inspect.CO_OPTIMIZED):  # (a function's, not a class body's)
                continue
            assert blocks.COMPILED_FROM[id(new)][:2] == (new, old)
            entry = blocks.COMPILED_FROM.pop(id(new))
            try:
                own = blocks.last_line(new)  # (its own positions)
            finally:
                blocks.COMPILED_FROM[id(new)] = entry
            assert own == blocks.last_line(new) >= blocks.last_line(old), new.co_qualname
            assert closure_source(new) == closure_source(old), new.co_qualname
            checked += 1
    assert checked > 40


def test_the_rewrite_that_fills_the_cache_keeps_its_blocks():
    """The rewrites are kept 64 to a process and then let go whole, with the positions
    their codes were compiled from (`blocks.COMPILED_FROM`): the rewrite made as the cache
    is full keeps its own (it was made first and then let go with the rest)."""
    from mgtui.recording import blocks
    from mgtui.recording.inline import rewrite as rw
    from mgtui.recording.naming import codes_in

    source = "def f(v):\n    def _backward():\n        v.grad += 1.0\n    return _backward\n"
    for k in range(70):  # (past a full cache, whatever other tests left in it)
        made = rw.rewrite_of(f"/nonexistent/filled_{k}.py", source)
        rewritten = [c for c in codes_in(made.code)
                     if made.plain_of(c) not in (None, c) and c.co_name == "_backward"]
        assert rewritten, k
        assert all(id(c) in blocks.COMPILED_FROM for c in rewritten), k
