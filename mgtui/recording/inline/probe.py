"""The inlined recording's probe: for the length of a run, it adopts the Value classes
whose source `mgtui.recording.inline.rewrite` can rewrite, swaps the rewritten code in for their functions
(and for the functions of the modules that use them), loads the modules beside the
scenario rewritten, and gives the rewritten code its helpers (`mgtui.recording.inline.helpers`),
which write into the recording's `Records`. Everything is put back when the run ends.

Why it works the way it does:

- A function's code is swapped in place (`fn.__code__ = new`, `_patch`), not the
  function replaced: by the time a class is adopted, the scenario and its libraries
  hold the function objects themselves (bound methods, `from m import f`, callbacks,
  decorators' `__wrapped__`), and only a swap reaches every one of those at once,
  keeping the function's identity, defaults and closure. `stop` swaps each one back.
- The helpers are per-run copies of `mgtui.recording.inline.helpers`' functions over
  one globals dict of some 45 names (`_helpers`): the run's record columns, options
  and tables. Read as globals, they cost the hot path (one `made` per node, one
  `call_backward` per `_backward` call) no more than a local would; a helper object's
  attributes or closures' cells would cost a lookup or a copy on every call. Where the
  names come from is the one table `helpers.INJECTED`.
"""

from __future__ import annotations

import builtins
import importlib.machinery
import os
import sys
import sysconfig
import types
from typing import TYPE_CHECKING, Callable

from mgtui.recording.inline import helpers as hot
from mgtui.recording.inline.rewrite import OWN_NAMES, FileRewrite, read_source, rewrite_of
from mgtui.recording.inline.helpers import injected_after, injected_during
from mgtui.recording.probes import maybe_with_values, record_write, without_values
from mgtui.recording.store import ID
from mgtui.recording.shapes import op_of_maker
from mgtui.recording.slots_hooks import keeps_fields_in_slots

if TYPE_CHECKING:
    from mgtui.recording.context import RecordingContext

# Where Python's own library and installed packages live: never "beside the scenario",
# even for a scenario at the top of the file system.
_INSTALLED = tuple(sorted({os.path.join(path, "") for key, path in sysconfig.get_paths().items()
                           if key in ("stdlib", "platstdlib", "purelib", "platlib")}))


class Inliner:
    """The inlined recording of one run (`mgtui.recording.probes.Probe`): rewrites code, adopts
    Value classes, and gives the rewritten code its helpers, which write into `records`.
    `context` is the recording's (`mgtui.recording.context`); `scenario` the scenario's
    rewrite (`scenario_rewrite`)."""

    def __init__(self, context: RecordingContext, scenario: FileRewrite | None) -> None:
        self.context = context
        self.records = context.records
        self.files: dict[str, FileRewrite | None] = {}
        self.codes: dict[int, types.CodeType] = {}  # every rewritten code object, by id
        self.adopted: set[type] = set()
        self.patched: list[tuple[types.FunctionType, types.CodeType]] = []
        self.namespaces: list[dict] = []  # the globals given the helpers
        self.namespace_ids: set[int] = set()  # (theirs)
        self.known_modules: set[str] = set()
        self.home = str(context.scenario.path.resolve().parent) + os.sep
        self.scenario = scenario  # the scenario's rewrite (`scenario_rewrite`)
        if scenario is not None:
            self.files[str(context.scenario.path.resolve())] = scenario
            self.codes |= scenario.codes
        self.helpers = self._helpers(context.calls.record_call, context.calls.run_backward)
        self._import = None
        self._finder: BesideFinder | None = None

    # -- the protocol ------------------------------------------------------------------------
    def attach(self, cls: type) -> bool:
        """`adopt`: True if `cls` records itself from now on."""
        return self.adopt(cls)

    def detach(self) -> None:
        self.stop()

    def node_made(self, node: object) -> None:
        """(The rewritten `__init__` calls `made` itself.)"""
        self._run["made"](node, (), 1)

    def backward_called(self, node: object, fn: Callable[[], object],
                        frame: types.FrameType) -> object:
        return self._run["call_fully"](node, fn, frame)

    def field_written(self, node: object, name: str, before: object, value: object,
                      frame: types.FrameType) -> None:
        """(The rewritten code makes these appends itself: a write inside a `_backward`
        call inline, one outside it through `event`.)"""
        nid = getattr(node, ID, None)
        if nid is not None:
            record_write(self.records, self.context.lines.scenario_line, nid, name, before,
                         value, frame)

    # -- the helpers the rewritten code calls ----------------------------------------------
    def _helpers(self, record_call, run_backward) -> dict:
        """The helpers of this run: copies of `mgtui.recording.inline.helpers`' functions whose
        globals are this run's records, options and tables."""
        context, records, lines = self.context, self.records, self.context.lines
        hooks = context.hooks
        watch = hooks.on_backward
        # The library frame that made the last node through an op, its line and the op's
        # code: the next node is most often made there too, by the same op (`w*x` in
        # `Neuron.__call__`'s generator), and is then known by two identities without
        # looking its code up. (The frame is kept alive here, so no other frame can take
        # its place; its line is the one `scenario_line` gave it, as the line memo
        # would.) Two of them: a library's `sum(w*x for ...)` makes its nodes from two
        # frames in turn, the generator's (`w*x`) and the caller's (`+`).
        last: list = [None] * 6
        lines.last_frames.append(last)  # (forgotten when a class comes in)
        run = {name: value for name, value in vars(hot).items() if not name.startswith("__")}
        run.update(
            __builtins__=builtins, __name__=hot.__name__,
            context=context, records=records, arrays=records.arrays, nodes=records.nodes, id_base=records.id_base, kids=records.kids,
            events=records.events,
            writes=records.writes, stack=records.stack, made_inside=records.made_inside,
            late_labels=records.late_labels, add_kid=records.add_kid,
            add_node=records.add_node, add_event=records.add_event,
            add_write=records.add_write, array_made=records.arrays.made,
            array_write=records.arrays.write,
            max_nodes=context.max_nodes, limit=-1 if context.stop_reason else 0,
            on_progress=hooks.on_progress, on_create=hooks.on_create,
            before=hooks.before_backward, watch=watch,
            skip=watch.skip if watch is not None else (),
            scenario_line=lines.scenario_line,
            # (`mgtui.recording.naming`: the variable a node is bound to) The assignments'
            # instructions come with the code's kind, so that a node made elsewhere costs
            # no call.
            named=context.namer.made, candidate=context.namer.candidate,
            closure_ids=records.closure_ids, closure_index=records.closure_index,
            class_codes=lines.class_codes, op_of_maker=op_of_maker,
            kind_of=lines.code_kinds.get, code_kind=lines.code_kind,
            # The frames outside the scenario that `scenario_line` has walked, and their
            # lines: a library's loop (`model(x)`, `backward()`) asks about the same
            # frames over and over. Looking there first spares the call.
            remembered=lines.memo.get, direct=lines.direct, line_at=lines.line_at,
            getframe=sys._getframe, record_call=record_call, run_backward=run_backward,
            note_caller=context.calls.callers.note,
            last=last, lines_valid=object())
        for name in hot.HELPERS:
            fn = getattr(hot, name)
            run[name] = types.FunctionType(fn.__code__, run, name, fn.__defaults__)
        self._run = run
        return injected_during(run)

    def forget_lines(self) -> None:
        """A class came in: the lines the frames' `here`s hold may be wrong now."""
        self._run["lines_valid"] = object()

    def interrupt(self) -> None:
        """The run is to stop (`Recorder.cancel`, from any thread)."""
        self._run["interrupt"]()

    @staticmethod
    def plain_helpers() -> dict:
        """The helpers once the run is over, for closures made during it that outlive it."""
        return injected_after()

    # -- the code ---------------------------------------------------------------------------
    def scenario_code(self, namespace: dict):
        """The scenario's code to run in `namespace`: rewritten, with the helpers."""
        if self.scenario is None:
            return self.context.scenario.code
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
        """(once a namespace: a class's functions are met again as its module's, and
        the module again as the run's imports are considered)"""
        if id(namespace) not in self.namespace_ids:  # (each kept alive in `namespaces`)
            self.namespace_ids.add(id(namespace))
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
        if module is not None and getattr(module, "__dict__", None) is not self.context.globals:
            self.patch_module(module)
        return True

    def keep_hooks(self, cls: type) -> None:
        """`cls` is left to the hooks (its fields are renamed): if its `__init__` was
        rewritten to number its nodes, it no longer does."""
        self._unmade(cls.__dict__.get("__init__"))

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
        if without_values(name, module):  # (mgtui's, torch's, numpy's, Python's own)
            return False
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict) or namespace is self.context.globals:
            return False
        if self.beside(getattr(module, "__file__", None) or ""):
            return True
        adopted = self.adopted
        # (by identity, at C speed: an adopted class's id is no other live object's)
        return bool(adopted) and not {id(k) for k in adopted}.isdisjoint(
            map(id, list(namespace.values())))

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
        modules, known = sys.modules, self.known_modules
        fresh = maybe_with_values(modules)  # (those found without values before: known)
        known.update(modules.keys() - {name for name, _ in fresh})
        for name in [n for n, _ in fresh if n not in known]:
            module = modules.get(name)
            if module is None or without_values(name, module):
                known.add(name)  # (Python's, numpy's...: most of them, told at once)
                continue
            if getattr(getattr(module, "__spec__", None), "_initializing", False):
                continue  # still being imported: its names are not all there yet
            known.add(name)
            if self.wants(module):
                self.patch_module(module)

    def start(self) -> None:
        """Rewrite the modules loaded so far, and from now on each one imported."""
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
        self.namespace_ids.clear()


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
